package text

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 45210: "45,210", -1234567: "-1,234,567"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestClipNeverSplitsARune(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdefghij", 10, "abcdefghij"},
		{"abcdefghijk", 10, "abcdefg…"},
		{"日本語のテキスト", 10, "日本…"}, // 3-byte runes: 7 bytes of room hold two
		{"ab日本", 7, "ab…"},
		{"abc", 2, "…"},
	}
	for _, tt := range tests {
		got := Clip(tt.s, tt.n)
		if got != tt.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d) = %q is not valid UTF-8", tt.s, tt.n, got)
		}
		if len(tt.s) > tt.n && tt.n >= len("…") && len(got) > tt.n {
			t.Errorf("Clip(%q, %d) is %d bytes", tt.s, tt.n, len(got))
		}
	}
	for n := range 40 {
		s := strings.Repeat("é日🙂", 5)
		if got := Clip(s, n); !utf8.ValidString(got) {
			t.Fatalf("Clip(%q, %d) = %q splits a rune", s, n, got)
		}
	}
}

func TestCount(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want string
	}{{0, "0 entries"}, {1, "1 entry"}, {2, "2 entries"}, {1000, "1,000 entries"}, {1204567, "1,204,567 entries"}} {
		if got := Count(tt.n, "entry", "entries"); got != tt.want {
			t.Errorf("Count(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
