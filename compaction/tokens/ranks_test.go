package tokens

import (
	"bytes"
	"encoding/binary"
	"flag"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite cl100k_base.ranks from the tokenizer library")

// cl100kSize is the number of ordinary (non-special) ids of cl100k_base.
const cl100kSize = 100256

// TestRanksFileMatchesLibrary: the embedded ranks file is the tokenizer
// library's cl100k_base vocabulary byte for byte, id for id; with -update
// it is rewritten from the library.
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
		var b bytes.Buffer
		b.WriteString(ranksMagic)
		b.Write(binary.LittleEndian.AppendUint32(nil, cl100kSize))
		for _, s := range tokens {
			if len(s) > 255 {
				t.Fatalf("token of %d bytes does not fit the one-byte length", len(s))
			}
			b.WriteByte(byte(len(s)))
		}
		for _, s := range tokens {
			b.WriteString(s)
		}
		if err := os.WriteFile("cl100k_base.ranks", b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		cl100kRanks = b.String()
	}
	r, err := parseRanks(cl100kRanks)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(r.start) - 1; got != cl100kSize {
		t.Fatalf("ranks file holds %d ids, the library %d (run with -args -update)", got, cl100kSize)
	}
	for id, want := range tokens {
		if got := r.token(id); got != want {
			t.Fatalf("id %d is %q in the ranks file, %q in the library (run with -args -update)", id, got, want)
		}
		if want == "" {
			continue
		}
		if got, ok := r.rank(want); !ok || int(got) != id {
			t.Fatalf("rank(%q) = %d, %v; want %d", want, got, ok, id)
		}
	}
	for _, s := range []string{"", "not-a-single-token-at-all", strings.Repeat(" ", 200)} {
		if _, ok := r.rank(s); ok {
			t.Fatalf("rank(%q) found a token", s)
		}
	}
}

// TestParseRanksRejectsDamage: a damaged ranks file is an error that says
// what is wrong, not a table that miscounts.
func TestParseRanksRejectsDamage(t *testing.T) {
	good := cl100kRanks
	for _, tc := range []struct{ name, file, want string }{
		{"empty", "", "no ranks header"},
		{"wrong magic", "SOBA-BPE-RANKS-0\n" + good[len(ranksMagic):], "no ranks header"},
		{"count beyond the file", ranksMagic + "\xff\xff\xff\x00abc", "declares"},
		{"truncated tokens", good[:len(good)-10], "add up to"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseRanks(tc.file)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("parseRanks: %v, want an error containing %q", err, tc.want)
			}
		})
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
