package tokens

import (
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
)

// cl100kRanks is cl100k_base's vocabulary, copied out of the tokenizer
// library (which keeps its table unexported) by TestRanksFileMatchesLibrary
// -args -update, in the layout ranksFile describes. Reading it takes about a
// millisecond; building a table through the library's Decode took about 30
// (plus 17 for the library's own map), paid by every process that counts.
//
//go:embed cl100k_base.ranks
var cl100kRanks string

// ranksMagic starts a ranks file. The layout: the magic, the token count n
// (uint32, little-endian), n token lengths (one byte each; 0 marks an id with
// no token), then the tokens' bytes concatenated in rank order.
const ranksMagic = "SOBA-BPE-RANKS-1\n"

// ranks maps each token's bytes to its rank (its id): the merge priority of
// byte-pair encoding. It is an open-addressing hash table over one string
// holding every token, so building it allocates three slices rather than a
// string and a map entry per token.
type ranks struct {
	text  string   // the tokens' bytes, in rank order
	start []uint32 // start[id]..start[id+1] is token id's bytes in text
	slot  []uint32 // hash table: id+1, or 0 for an empty slot
	mask  uint64
	seed  maphash.Seed
}

// parseRanks builds the table from a ranks file.
func parseRanks(file string) (*ranks, error) {
	if len(file) < len(ranksMagic)+4 || file[:len(ranksMagic)] != ranksMagic {
		return nil, errors.New("tokens: the embedded ranks file has no ranks header")
	}
	body := file[len(ranksMagic):]
	n := int(binary.LittleEndian.Uint32([]byte(body[:4])))
	body = body[4:]
	if n <= 0 || n > len(body) {
		return nil, fmt.Errorf("tokens: the embedded ranks file declares %d tokens in %d bytes", n, len(body))
	}
	lengths, text := body[:n], body[n:]
	r := &ranks{text: text, start: make([]uint32, n+1), seed: maphash.MakeSeed()}
	size := 1
	for size < 2*n {
		size <<= 1 // load factor at most 1/2: short probe runs
	}
	r.slot, r.mask = make([]uint32, size), uint64(size-1)
	at := 0
	for id := range n {
		r.start[id] = uint32(at)
		at += int(lengths[id])
	}
	r.start[n] = uint32(at)
	if at != len(text) {
		return nil, fmt.Errorf("tokens: the embedded ranks file's lengths add up to %d bytes, its tokens are %d", at, len(text))
	}
	for id := range n {
		tok := r.token(id)
		if tok == "" {
			continue // a hole in the id space
		}
		i := maphash.String(r.seed, tok) & r.mask
		for r.slot[i] != 0 {
			i = (i + 1) & r.mask
		}
		r.slot[i] = uint32(id + 1)
	}
	return r, nil
}

func (r *ranks) token(id int) string { return r.text[r.start[id]:r.start[id+1]] }

// rank returns the rank of the token whose bytes are s.
func (r *ranks) rank(s string) (uint32, bool) {
	for i := maphash.String(r.seed, s) & r.mask; ; i = (i + 1) & r.mask {
		v := r.slot[i]
		if v == 0 {
			return 0, false
		}
		if r.token(int(v-1)) == s {
			return v - 1, true
		}
	}
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
