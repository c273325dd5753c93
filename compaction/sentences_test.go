package compaction

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// sentenceEnd is the specification of nextSentenceEnd.
var sentenceEnd = regexp.MustCompile(`[.!?]+(?:["')\]]*)(?:[ \t]+|$)|\n+`)

// sentencesByRegexp is sentences as it was written with sentenceEnd.
func sentencesByRegexp(s string) []string {
	var out []string
	start := 0
	for _, loc := range sentenceEnd.FindAllStringIndex(s, -1) {
		if part := trimmed(s[start:loc[1]]); len(part) >= 8 {
			out = append(out, part)
		}
		start = loc[1]
	}
	if part := trimmed(s[start:]); len(part) >= 8 {
		out = append(out, part)
	}
	return out
}

func trimmed(s string) string { return strings.TrimSpace(s) }

// TestSentencesMatchTheRegexp_RC1: the goal and constraints the capsule
// quotes are split into sentences exactly where the regular expression
// that specifies a sentence end splits them.
func TestSentencesMatchTheRegexp_RC1(t *testing.T) {
	cases := []string{
		"",
		"no end at all but long enough",
		"Fix the bug. Then run the tests! Does it pass? Yes.",
		"Keep `AGENTS.md` and v1.2 as they are, e.g.x stays whole.",
		"He said \"stop.\" Then left.) And [this.] too...  \tend",
		"line one\nline two\n\n\nline three",
		"Dots.. then!?! mixed?!\". x",
		"ends with punctuation and quotes.\"')]",
		"trailing blanks.   ",
		"a.\nb.\"\nc?)\td",
		"ünïcödé. wörds! \xff\xfe. bytes",
		"....\n...  ..x. y",
	}
	for _, c := range cases {
		got, want := sentences(c), sentencesByRegexp(c)
		if !slices.Equal(got, want) {
			t.Errorf("sentences(%q) = %q, the regexp splits %q", c, got, want)
		}
	}
}

// FuzzSentences: for any text, sentences splits where the regexp does.
func FuzzSentences(f *testing.F) {
	for _, s := range []string{"Fix it. Now!", "a.\") b\n\nc", "x?!'\t y", "v1.2 e.g.x AGENTS.md."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := sentences(s), sentencesByRegexp(s); !slices.Equal(got, want) {
			t.Fatalf("sentences(%q) = %q, the regexp splits %q", s, got, want)
		}
	})
}
