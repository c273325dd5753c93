package id

import (
	"regexp"
	"testing"
)

func TestShapes(t *testing.T) {
	tests := []struct {
		name string
		make func() string
		re   string
	}{
		{"session", Session, `^s_[0-9a-f]{12}$`},
		{"turn", Turn, `^turn_[0-9a-f]{12}$`},
		{"operation", Operation, `^op_[0-9a-f]{12}$`},
		{"checkpoint", Checkpoint, `^ck_[0-9a-f]{6}$`},
		{"entry", func() string { return Entry(func(string) bool { return false }) }, `^[0-9a-f]{8}$`},
	}
	for _, tt := range tests {
		re := regexp.MustCompile(tt.re)
		seen := map[string]bool{}
		for range 1000 {
			s := tt.make()
			if !re.MatchString(s) {
				t.Fatalf("%s id %q does not match %s", tt.name, s, tt.re)
			}
			seen[s] = true
		}
		if len(seen) < 990 { // 6 hex digits: a few collisions in 1000 are expected
			t.Errorf("%s ids repeat: %d distinct of 1000", tt.name, len(seen))
		}
	}
}

func TestEntrySkipsTakenIDs(t *testing.T) {
	taken := map[string]bool{}
	for range 5000 {
		e := Entry(func(s string) bool { return taken[s] })
		if taken[e] {
			t.Fatalf("Entry returned %s, which is taken", e)
		}
		taken[e] = true
	}
}
