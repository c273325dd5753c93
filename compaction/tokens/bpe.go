package tokens

import (
	"fmt"
	"math"

	"github.com/tiktoken-go/tokenizer"
)

// ranks maps each token's bytes to its rank (its id): the merge priority of
// byte-pair encoding.
type ranks map[string]uint32

// loadRanks reads the vocabulary the library embeds (compiled into the
// binary; nothing is read from disk or the network) through its Decode, one
// id at a time. The library keeps its own table unexported; a copy costs a
// few megabytes and lets the count run without the library's per-match
// allocations.
func loadRanks(c tokenizer.Codec, size int) (ranks, error) {
	r := make(ranks, size)
	id := make([]uint, 1)
	for i := range size {
		id[0] = uint(i)
		s, err := c.Decode(id)
		if err != nil {
			continue // a hole in the id space
		}
		r[s] = uint32(i)
	}
	if len(r) < size/2 {
		return nil, fmt.Errorf("tokens: %s vocabulary has only %d of %d ids", c.GetName(), len(r), size)
	}
	return r, nil
}

// longPiece is the piece length from which count hands a piece that is not
// a single token to the library, whose merge runs in O(n log n); below it
// the quadratic scan here is faster.
const longPiece = 128

// count returns the number of tokens byte-pair encoding gives piece.
func (r ranks) count(piece string, long func(string) int) int {
	if _, ok := r[piece]; ok {
		return 1
	}
	if len(piece) == 1 {
		return 1 // every single byte is a token
	}
	if len(piece) >= longPiece {
		return long(piece)
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
		if v, ok := r[piece[bounds[i]:bounds[i+2]]]; ok {
			return v
		}
		return math.MaxUint32
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
