package agent

import (
	"fmt"

	"github.com/soba-agent/soba-lsp/compaction/tokens"
	"github.com/soba-agent/soba-lsp/internal/text"
)

// maxTokenBytes is the longest token of cl100k_base and o200k_base, in
// bytes.
const maxTokenBytes = tokens.MaxTokenBytes

// PromptTooLargeError refuses a prompt that can never be sent (R-W7): with
// the system prompt it is over the hard limit, which no compaction can
// change. It names both sizes.
type PromptTooLargeError struct {
	What      string // "the prompt", "the capsule"
	Tokens    int    // counted, or the least it can be (AtLeast)
	AtLeast   bool
	Bytes     int
	System    int // the system prompt and tool schemas
	HardLimit int
}

func (e *PromptTooLargeError) Error() string {
	size := text.Thousands(e.Tokens) + " tokens"
	if e.AtLeast {
		size = "at least " + size
	}
	return fmt.Sprintf("%s is %s (%s bytes); with the system prompt's %s tokens that is over the hard limit of %s tokens, so it can never be sent; nothing was stored (R-W7)",
		e.What, size, text.Thousands(e.Bytes), text.Thousands(e.System), text.Thousands(e.HardLimit))
}

// checkFits decides whether a text of the user's (a prompt, a loaded
// capsule) can ever be sent: its tokens plus system must not be over hard.
// It is decided before the text is stored, and on the bytes alone when they
// settle it, because counting 300 MB would take seconds:
//
//   - cl100k_base and o200k_base are byte-level BPE: every token stands for at
//     least one byte of the UTF-8 text, so tokens ≤ bytes, and a text whose
//     byte length fits the room fits without being counted;
//   - no token stands for more than maxTokenBytes bytes, so tokens ≥
//     bytes/maxTokenBytes, and a text of more than room×maxTokenBytes bytes
//     cannot fit whatever its tokens (refused, its size given as a least);
//   - in between the text is counted (sampled above 256 KB, as the budget
//     counts it).
//
// (bytes/1 ≥ tokens is the first rule's bound and not a refusal: a text of
// room+1 bytes may well be a quarter of that in tokens.)
func checkFits(what, s string, system, hard int, count func(string) int) error {
	room := hard - system
	if len(s) <= room {
		return nil
	}
	e := &PromptTooLargeError{What: what, Bytes: len(s), System: system, HardLimit: hard}
	if room <= 0 || len(s) > room*maxTokenBytes {
		e.Tokens, e.AtLeast = (len(s)+maxTokenBytes-1)/maxTokenBytes, true
		return e
	}
	if e.Tokens = count(s); e.Tokens <= room {
		return nil
	}
	return e
}

// fits is checkFits against this session's system prompt and hard limit.
func (a *Agent) fits(what, s string) error {
	var system int
	if e := a.do(func(st *state) { system = st.systemTokens }); e != nil {
		return e
	}
	return checkFits(what, s, system, a.opt.Compaction.HardLimit(), a.opt.Counter.Count)
}
