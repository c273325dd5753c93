package tokens

import (
	"testing"

	"github.com/tiktoken-go/tokenizer"
)

// TestMaxTokenBytes_RW7: no token of either vocabulary is longer than
// MaxTokenBytes bytes, and one reaches it, so bytes/MaxTokenBytes is a
// true lower bound of the tokens of a text (the prompt bound's refusal on
// bytes alone rests on it).
func TestMaxTokenBytes_RW7(t *testing.T) {
	for _, enc := range []tokenizer.Encoding{tokenizer.Cl100kBase, tokenizer.O200kBase} {
		c, err := tokenizer.Get(enc)
		if err != nil {
			t.Fatal(err)
		}
		longest, n := 0, 0
		for id := uint(0); id < 1<<18; id++ {
			s, err := c.Decode([]uint{id})
			if err != nil || s == "" {
				continue
			}
			n++
			longest = max(longest, len(s))
		}
		if n < 100000 || longest != MaxTokenBytes {
			t.Errorf("%s: %d tokens, the longest %d bytes; want MaxTokenBytes = %d", enc, n, longest, MaxTokenBytes)
		}
	}
}
