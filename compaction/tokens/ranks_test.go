package tokens

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite cl100k_base.ranks from the tokenizer library")

// cl100kSize is the number of ordinary (non-special) ids of cl100k_base.
const cl100kSize = 100256

// TestRanksFileMatchesLibrary: the embedded ranks file is the tokenizer
// library's cl100k_base vocabulary byte for byte, id for id, every slot
// where a lookup finds it and nothing else in the table; with -update it is
// rewritten from the library.
func TestRanksFileMatchesLibrary(t *testing.T) {
	lib := library(t)
	tokens := make([]string, cl100kSize)
	for id := range cl100kSize {
		s, err := lib.Decode([]uint{uint(id)})
		if err != nil {
			continue // a hole: no token has this id
		}
		tokens[id] = s
	}
	if *update {
		file, err := writeRanks(tokens)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("cl100k_base.ranks", file, 0o644); err != nil {
			t.Fatal(err)
		}
		cl100kRanks = string(file)
	}
	r, err := parseRanks(cl100kRanks)
	if err != nil {
		t.Fatal(err)
	}
	if r.ids != cl100kSize {
		t.Fatalf("ranks file holds %d ids, the library %d (run with -args -update)", r.ids, cl100kSize)
	}
	filled, longest := 0, 0
	for i := uint64(0); i <= r.mask; i++ {
		v := le64(r.slots[8*i:])
		if v == 0 {
			continue
		}
		filled++
		id := int(v>>idShift&idMask) - 1
		at, n := v&offsetMask, v>>lengthShift&(1<<lengthBits-1)
		if id < 0 || id >= cl100kSize || at+n > uint64(len(r.text)) {
			t.Fatalf("slot %d holds id %d at %d+%d: outside the vocabulary (run with -args -update)", i, id, at, n)
		}
		if got := r.text[at : at+n]; got != tokens[id] {
			t.Fatalf("slot %d gives id %d the bytes %q, the library %q (run with -args -update)", i, id, got, tokens[id])
		}
		// Linear probing: from the token's home to its slot, no slot is empty.
		run := int((i - tokenHash(tokens[id])) & r.mask)
		longest = max(longest, run+1)
	}
	holes := 0
	for id, want := range tokens {
		if want == "" {
			holes++
			continue
		}
		if got, ok := r.rank(want); !ok || int(got) != id {
			t.Fatalf("rank(%q) = %d, %v; want %d (run with -args -update)", want, got, ok, id)
		}
	}
	if filled != cl100kSize-holes {
		t.Fatalf("the table holds %d tokens, the library %d", filled, cl100kSize-holes)
	}
	t.Logf("%d tokens in %d slots; the longest probe is %d slots", filled, r.mask+1, longest)
	for _, s := range []string{"", "not-a-single-token-at-all", strings.Repeat(" ", 200), strings.Repeat("x", 300)} {
		if _, ok := r.rank(s); ok {
			t.Fatalf("rank(%q) found a token", s)
		}
	}
}

// writeRanks lays tokens (indexed by id, "" for an id with no token) out as
// a ranks file (ranksMagic describes it).
func writeRanks(tokens []string) ([]byte, error) {
	size := 1
	for size < 2*len(tokens) {
		size <<= 1
	}
	var text strings.Builder
	slots := make([]uint64, size)
	for id, tok := range tokens {
		at := text.Len()
		text.WriteString(tok)
		if tok == "" {
			continue
		}
		if len(tok) >= 1<<lengthBits || id+1 > idMask || text.Len() > offsetMask+1 {
			return nil, fmt.Errorf("token %d (%d bytes at %d) does not fit a slot", id, len(tok), at)
		}
		h := tokenHash(tok)
		i := h & uint64(size-1)
		for slots[i] != 0 {
			i = (i + 1) & uint64(size-1)
		}
		slots[i] = h&tagMask | uint64(id+1)<<idShift | uint64(len(tok))<<lengthShift | uint64(at)
	}
	b := []byte(ranksMagic)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(tokens)))
	b = binary.LittleEndian.AppendUint32(b, uint32(size))
	b = binary.LittleEndian.AppendUint32(b, uint32(text.Len()))
	for _, v := range slots {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return append(b, text.String()...), nil
}

// TestParseRanksRejectsDamage: a damaged ranks file is an error that says
// what is wrong, not a table that miscounts.
func TestParseRanksRejectsDamage(t *testing.T) {
	good := cl100kRanks
	header := func(n, size, text uint32) string {
		b := []byte(ranksMagic)
		b = binary.LittleEndian.AppendUint32(b, n)
		b = binary.LittleEndian.AppendUint32(b, size)
		return string(binary.LittleEndian.AppendUint32(b, text))
	}
	for _, tc := range []struct{ name, file, want string }{
		{"empty", "", "no ranks header"},
		{"the first layout", "SOBA-BPE-RANKS-1\n" + good[len(ranksMagic):], "no ranks header"},
		{"no ids", header(0, 8, 0), "declares 0 ids"},
		{"too few slots", header(8, 8, 0) + strings.Repeat("\x00", 64), "in 8 slots"},
		{"slots not a power of two", header(4, 12, 0) + strings.Repeat("\x00", 96), "in 12 slots"},
		{"truncated text", good[:len(good)-10], "its header makes it"},
		{"trailing bytes", good + "x", "its header makes it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseRanks(tc.file)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("parseRanks: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestTokenHashReadsEveryByte: tokens differing in any one byte, at any
// length up to longer than one 16-byte block, hash apart (each case of
// tokenHash reads the whole string).
func TestTokenHashReadsEveryByte(t *testing.T) {
	for n := 1; n <= 40; n++ {
		base := []byte(strings.Repeat("a", n))
		seen := map[uint64]int{tokenHash(string(base)): -1}
		for i := range n {
			b := bytes.Clone(base)
			b[i] = 'b'
			h := tokenHash(string(b))
			if j, dup := seen[h]; dup {
				t.Fatalf("length %d: changing byte %d hashes like changing byte %d", n, i, j)
			}
			seen[h] = i
		}
	}
}

// TestCountLongMatchesScan: the heap merge used for long pieces gives the
// quadratic scan's count on every piece both can take, including pieces
// where equal-rank pairs overlap (runs of one byte or one pair).
func TestCountLongMatchesScan(t *testing.T) {
	r := Default().ranks
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "b", "e", "th", "in", "=", "-", "/", " ", "é", "日", "0", "_", "ing", "tion"}
	pieces := []string{strings.Repeat("a", 127), strings.Repeat("=-", 63), strings.Repeat(" ", 100), strings.Repeat("ab", 50)}
	for range 2000 {
		var b strings.Builder
		for b.Len() < 2+rng.IntN(120) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		if s := b.String(); len(s) < longPiece {
			pieces = append(pieces, s)
		}
	}
	for _, p := range pieces {
		if got, want := r.countLong(p), r.count(p); got != want {
			t.Fatalf("countLong(%q) = %d, the scan gives %d", p, got, want)
		}
	}
}

// TestCountLongPiecesMatchLibrary: pre-tokens of longPiece bytes and more
// (whitespace runs, long words, punctuation runs) count as the library
// counts them.
func TestCountLongPiecesMatchLibrary(t *testing.T) {
	lib, c := library(t), Default()
	rng := rand.New(rand.NewPCG(5, 6))
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[rng.IntN(52)]
		}
		return string(b)
	}
	for _, s := range []string{
		strings.Repeat(" ", 128), strings.Repeat(" ", 5000) + "x", strings.Repeat("\t ", 700),
		strings.Repeat("=", 129), strings.Repeat("=-*", 400), strings.Repeat("/", 3000),
		word(128), word(4096), strings.Repeat("日本語", 200), strings.Repeat("ab", 2000),
		strings.Repeat("\n", 300), strings.Repeat("\r\n", 300) + "y",
	} {
		if got, want := c.CountExact(s), libCount(t, lib, s); got != want {
			t.Errorf("CountExact(%q) = %d, library says %d", short(s), got, want)
		}
	}
}
