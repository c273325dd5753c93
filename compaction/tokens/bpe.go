package tokens

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// cl100kRanks is cl100k_base's vocabulary, copied out of the tokenizer
// library (which keeps its table unexported) by TestRanksFileMatchesLibrary
// -args -update, as a ready hash table in the layout ranksMagic describes.
// Opening it checks a header and allocates nothing: the table is used where
// the binary holds it, and a process pays only for the pages its lookups
// touch. (Building a hash table at start cost about 2 ms and 1.4 MB a
// process; building one through the library's Decode about 30 ms.)
//
//go:embed cl100k_base.ranks
var cl100kRanks string

// ranksMagic starts a ranks file. The layout, integers little-endian: the
// magic; the number of ids n, the number of slots (a power of two, at least
// 2n) and the length of the token text, each a uint32; the slots, a uint64
// each; then the tokens' bytes. A slot is 0 when empty, else it packs (low
// bits first) the token's offset in the text, its length, its id + 1 and a
// tag: the top bits of the token's tokenHash. A token sits at the first
// empty slot from its hash's low bits on (linear probing); ids with no token
// have no slot.
const ranksMagic = "SOBA-BPE-RANKS-2\n"

// The fields of a slot.
const (
	offsetBits, lengthBits, idBits = 20, 8, 17
	lengthShift                    = offsetBits
	idShift                        = lengthShift + lengthBits
	tagShift                       = idShift + idBits
	offsetMask                     = 1<<offsetBits - 1
	idMask                         = 1<<idBits - 1
	// keyMask selects what a lookup compares before the bytes: the tag and
	// the length.
	tagMask = 1<<64 - 1<<tagShift
	keyMask = tagMask | (1<<lengthBits-1)<<lengthShift
)

// ranks maps each token's bytes to its rank (its id): the merge priority of
// byte-pair encoding.
type ranks struct {
	ids   int    // n: ids 0..n-1, some with no token
	slots string // the hash table, 8 bytes a slot
	text  string // the tokens' bytes
	mask  uint64 // slots - 1
}

// parseRanks opens a ranks file. It checks the header and the sizes, not
// each slot: the file is part of the binary, and TestRanksFileMatchesLibrary
// checks every slot of it. A slot pointing outside the text would make a
// lookup panic, not miscount.
func parseRanks(file string) (*ranks, error) {
	const header = len(ranksMagic) + 12
	if len(file) < header || file[:len(ranksMagic)] != ranksMagic {
		return nil, errors.New("tokens: the embedded ranks file has no ranks header")
	}
	n := int(le32(file[len(ranksMagic):]))
	size := int(le32(file[len(ranksMagic)+4:]))
	textLen := int(le32(file[len(ranksMagic)+8:]))
	if n <= 0 || n > idMask || size < 2*n || size&(size-1) != 0 || textLen > offsetMask+1 {
		return nil, fmt.Errorf("tokens: the embedded ranks file declares %d ids in %d slots over %d bytes of text", n, size, textLen)
	}
	if want := header + 8*size + textLen; len(file) != want {
		return nil, fmt.Errorf("tokens: the embedded ranks file is %d bytes, its header makes it %d", len(file), want)
	}
	slots := file[header : header+8*size]
	return &ranks{ids: n, slots: slots, text: file[header+8*size:], mask: uint64(size - 1)}, nil
}

// rank returns the rank of the token whose bytes are s.
func (r *ranks) rank(s string) (uint32, bool) {
	if len(s) == 0 || len(s) >= 1<<lengthBits {
		return 0, false
	}
	h := tokenHash(s)
	key := h&tagMask | uint64(len(s))<<lengthShift
	for i := h & r.mask; ; i = (i + 1) & r.mask {
		v := le64(r.slots[8*i:])
		if v == 0 {
			return 0, false
		}
		if v&keyMask == key {
			if at := v & offsetMask; r.text[at:at+uint64(len(s))] == s {
				return uint32(v>>idShift&idMask) - 1, true
			}
		}
	}
}

// tokenHash is the ranks file's hash of a token: fixed, since the table is
// built once and shipped, and cheap for the short strings BPE looks up
// (wyhash's construction). The table cannot grow, so no input makes a
// lookup probe further than the longest run built into it.
func tokenHash(s string) uint64 {
	const k0, k1, k2 = 0xa0761d6478bd642f, 0xe7037ed1a0b428db, 0x8ebc6af09c88c6e3
	n := len(s)
	var a, b uint64
	switch {
	case n > 16:
		h := uint64(n) ^ k0
		for p := s; len(p) > 16; p = p[16:] {
			h = mix(le64(p)^k1, le64(p[8:])^h)
		}
		// The last 16 bytes, overlapping what was mixed.
		a, b = le64(s[n-16:])^h, le64(s[n-8:])
	case n >= 8:
		a, b = le64(s), le64(s[n-8:])
	case n >= 4:
		a, b = uint64(le32(s)), uint64(le32(s[n-4:]))
	case n > 0:
		a, b = uint64(s[0])<<16|uint64(s[n>>1])<<8|uint64(s[n-1]), 0
	}
	return mix(k2^uint64(n), mix(a^k1, b^k0))
}

// mix is wyhash's mum: the 128-bit product of a and b folded to 64 bits.
func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

func le32(s string) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// pairRank is the rank of merging s[a:b] with s[b:c], MaxUint32 when the
// pair is not a token.
func (r *ranks) pairRank(s string, a, c int32) uint32 {
	if v, ok := r.rank(s[a:c]); ok {
		return v
	}
	return math.MaxUint32
}

// longPiece is the piece length from which count merges with a heap, in
// O(n log n); below it the quadratic scan is faster.
const longPiece = 128

// count returns the number of tokens byte-pair encoding gives piece: the
// pair of adjacent parts with the lowest rank merges first (the leftmost of
// equal ranks), until no adjacent pair is a token.
func (r *ranks) count(piece string) int {
	if _, ok := r.rank(piece); ok {
		return 1
	}
	if len(piece) == 1 {
		return 1 // every single byte is a token
	}
	if len(piece) >= longPiece {
		return r.countLong(piece)
	}
	// bounds[i] is the start of part i; rank[i] the rank of merging part i
	// with part i+1.
	var bbuf [longPiece + 1]int32
	var rbuf [longPiece + 1]uint32
	n := len(piece)
	bounds, rank := bbuf[:n+1], rbuf[:n+1]
	for i := range bounds {
		bounds[i] = int32(i)
	}
	pair := func(i int) uint32 {
		if i+2 >= len(bounds) {
			return math.MaxUint32
		}
		return r.pairRank(piece, bounds[i], bounds[i+2])
	}
	for i := 0; i < n-1; i++ {
		rank[i] = pair(i)
	}
	rank[n-1], rank[n] = math.MaxUint32, math.MaxUint32
	for len(bounds) > 2 {
		best, at := uint32(math.MaxUint32), -1
		for i := 0; i < len(bounds)-2; i++ {
			if rank[i] < best {
				best, at = rank[i], i
			}
		}
		if at < 0 {
			break
		}
		// Merge part at with part at+1: drop boundary at+1.
		bounds = append(bounds[:at+1], bounds[at+2:]...)
		rank = append(rank[:at+1], rank[at+2:]...)
		rank[at] = pair(at)
		if at > 0 {
			rank[at-1] = pair(at - 1)
		}
	}
	return len(bounds) - 1
}

// candidate is a possible merge of the part starting at left with the next
// part, which starts at mid and ends at end. It is stale once either part
// has changed, which the heap's pop checks against the current parts.
type candidate struct {
	rank           uint32
	left, mid, end int32
}

func (a candidate) before(b candidate) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.left < b.left)
}

// countLong is count for long pieces: the parts are a linked list of starts
// and the candidate merges a binary heap ordered by rank, then position, so
// each merge costs O(log n) instead of a scan of every pair.
func (r *ranks) countLong(piece string) int {
	n := int32(len(piece))
	next := make([]int32, n+1) // next[s]: the start of the part after the one at s (n: the end)
	prev := make([]int32, n+1) // prev[s]: the start of the part before it (-1: none)
	alive := make([]bool, n+1) // alive[s]: a part starts at s
	for i := range n + 1 {
		next[i], prev[i], alive[i] = i+1, i-1, true
	}
	var heap []candidate
	push := func(left int32) {
		mid := next[left]
		if mid >= n {
			return // the last part has no right neighbour
		}
		end := next[mid]
		if v := r.pairRank(piece, left, end); v != math.MaxUint32 {
			heap = append(heap, candidate{rank: v, left: left, mid: mid, end: end})
			for i := len(heap) - 1; i > 0; {
				up := (i - 1) / 2
				if !heap[i].before(heap[up]) {
					break
				}
				heap[i], heap[up] = heap[up], heap[i]
				i = up
			}
		}
	}
	pop := func() candidate {
		top := heap[0]
		last := len(heap) - 1
		heap[0] = heap[last]
		heap = heap[:last]
		for i := 0; ; {
			l, m := 2*i+1, i
			if l < len(heap) && heap[l].before(heap[m]) {
				m = l
			}
			if l+1 < len(heap) && heap[l+1].before(heap[m]) {
				m = l + 1
			}
			if m == i {
				break
			}
			heap[i], heap[m] = heap[m], heap[i]
			i = m
		}
		return top
	}
	for i := range n - 1 {
		push(i)
	}
	parts := int(n)
	for len(heap) > 0 {
		c := pop()
		if !alive[c.left] || !alive[c.mid] || next[c.left] != c.mid || next[c.mid] != c.end {
			continue // a part it joins has merged since
		}
		// Merge: the part at mid joins the part at left.
		alive[c.mid] = false
		next[c.left] = c.end
		prev[c.end] = c.left
		parts--
		if p := prev[c.left]; p >= 0 {
			push(p)
		}
		push(c.left)
	}
	return parts
}
