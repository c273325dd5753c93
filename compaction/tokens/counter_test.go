package tokens

import (
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tiktoken-go/tokenizer"
)

// library is the tokenizer library's own cl100k_base codec: the oracle the
// native scanner must agree with token for token.
func library(t testing.TB) tokenizer.Codec {
	t.Helper()
	c, err := tokenizer.Get(tokenizer.Cl100kBase)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func libCount(t testing.TB, c tokenizer.Codec, s string) int {
	t.Helper()
	n, err := c.Count(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCountMatchesLibrary: the native scanner and merge give exactly the
// library's count, on the corners of the split pattern.
func TestCountMatchesLibrary(t *testing.T) {
	lib := library(t)
	c := Default()
	cases := []struct{ name, text string }{
		{"empty", ""},
		{"word", "hello"},
		{"two spaces", "hello  world"},
		{"three spaces", "hello   world"},
		{"contractions", "I'm sure they'll say it's what we've 'RE 'Ve 'LL 'D 'ſ don't"},
		{"quote alone", "' 'x '' ''s"},
		{"numbers", "12345 1 22 333 4444 55555 ½ ² ٣٤٥"},
		{"space digits", "a  1   2\t3"},
		{"punct", "((foo)) x.'s -> => ... !!!\n\n\n??"},
		{"newlines", "a\n\nb \n  c\r\n\r\n  d \n\t\n e"},
		{"trailing ws", "end   "},
		{"trailing nl ws", "end \n  "},
		{"only ws", " \t \n \u00a0 \u3000 "},
		{"tabs before word", "\t\tfoo\t bar"},
		{"unicode", "naïve café — 日本語のテキスト 한국어 Ελληνικά русский ✓ 🚀🚀 e\u0301"},
		{"nbsp", "a\u00a0b \u00a0c\u2028d\u0085e"},
		{"invalid utf8", "ok \xff\xfe bad \xe2\x82 end"},
		{"long letters", strings.Repeat("a", 5000)},
		{"long spaces", strings.Repeat(" ", 3000) + "x"},
		{"long punct", strings.Repeat("=-", 400) + "\n"},
		{"json", `{"path":"a/b.go","content":"package main\n\nfunc main() {}\n","ok":true,"n":[1,2,3]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := c.CountExact(tc.text), libCount(t, lib, tc.text); got != want {
				t.Errorf("CountExact(%q) = %d, library says %d", short(tc.text), got, want)
			}
		})
	}
}

// TestCountMatchesLibraryOnGoSource compares whole files of the Go tree.
func TestCountMatchesLibraryOnGoSource(t *testing.T) {
	lib := library(t)
	c := Default()
	files := corpusFiles(t, 25)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := c.CountExact(string(b)), libCount(t, lib, string(b)); got != want {
			t.Errorf("%s: CountExact = %d, library says %d", f, got, want)
		}
	}
}

// TestCountMatchesLibraryRandom feeds random mixes of the character classes
// the split pattern distinguishes.
func TestCountMatchesLibraryRandom(t *testing.T) {
	lib := library(t)
	c := Default()
	alphabet := []string{"a", "Z", "é", "日", "1", "٣", "½", " ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "'", "'s", "'LL", "'re", "ſ",
		".", "(", "{", "\"", "🚀", "\u0301", "-", "/", "_", "\xff"}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		s := b.String()
		if got, want := c.CountExact(s), libCount(t, lib, s); got != want {
			t.Fatalf("case %d: CountExact(%q) = %d, library says %d", i, s, got, want)
		}
	}
}

func FuzzCountMatchesLibrary(f *testing.F) {
	lib := library(f)
	c := Default()
	for _, s := range []string{"hello  world", "a\n\n b", "'s'S 12345", " \t\u00a0x", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsRune(s, 0x7f) {
			// The library's matcher skips DEL (it yields no token at
			// all); we count it as the byte token it is.
			t.Skip("DEL")
		}
		if got, want := c.CountExact(s), libCount(t, lib, s); got != want {
			t.Fatalf("CountExact(%q) = %d, library says %d", s, got, want)
		}
	})
}

// corpusFiles returns up to n Go source files of the installed Go tree
// (net/http: code, comments, strings, long lines).
func corpusFiles(t testing.TB, n int) []string {
	t.Helper()
	var files []string
	_ = filepath.WalkDir(filepath.Join(runtime.GOROOT(), "src", "net", "http"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".go") && len(files) < n {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		t.Skip("no Go sources found to compare")
	}
	return files
}

func short(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// TestCountSampledLongText: above SampleAbove, Count samples; it must stay
// within 2% of the exact count on real, mixed texts.
func TestCountSampledLongText(t *testing.T) {
	c := Default()
	var mixed strings.Builder
	for _, f := range corpusFiles(t, 40) {
		b, _ := os.ReadFile(f)
		mixed.Write(b)
	}
	var log strings.Builder
	for i := range 20000 {
		log.WriteString("2026-12-02T13:01:29Z INFO request id=")
		log.WriteString(strings.Repeat("x", i%7))
		log.WriteString(" path=/api/v1/items status=200 dur=12ms\n")
	}
	prose := strings.Repeat("The quick brown fox jumps over the lazy dog while the parser keeps its tokens. ", 5000)
	for _, tc := range []struct{ name, text string }{{"go source", mixed.String()}, {"log", log.String()}, {"prose", prose}} {
		if len(tc.text) <= SampleAbove {
			t.Fatalf("%s: corpus of %d bytes is too small to sample", tc.name, len(tc.text))
		}
		got, want := c.Count(tc.text), c.CountExact(tc.text)
		if !within(got, want, 0.02) {
			t.Errorf("%s (%d bytes): sampled %d, exact %d", tc.name, len(tc.text), got, want)
		}
	}
}

func TestNewUnknownEncoding(t *testing.T) {
	if _, err := New("p99k"); err == nil || !strings.Contains(err.Error(), `"p99k"`) {
		t.Fatalf("New(p99k) error = %v, want one naming the encoding", err)
	}
	c, err := New(O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	if n := c.Count("hello world"); n != 2 || c.Encoding() != O200kBase {
		t.Fatalf("o200k Count(hello world) = %d (%s), want 2", n, c.Encoding())
	}
}

// TestCountDEL: DEL is one byte token; the library's matcher skips it, so
// this is the one place the counts differ on purpose.
func TestCountDEL(t *testing.T) {
	if n := Default().CountExact("a\x7fb"); n != 3 {
		t.Fatalf("CountExact(a DEL b) = %d, want 3", n)
	}
}
