package agent

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/soba-agent/soba-lsp/session"
)

// The sentences a user reads when a turn fails for a reason SOBA can name,
// in one place; docs/messages.md lists each with the test that checks it.
// They say what happened and what to do; the engine's figures go to the log
// (Notifier.Log) and soba.budget.

// UserError is a failure told to the user in plain words. The error it
// wraps keeps the engine's own text and type (errors.As reaches it).
type UserError struct {
	Message string
	Err     error
}

func (e *UserError) Error() string { return e.Message }
func (e *UserError) Unwrap() error { return e.Err }

// thousands writes n with comma separators (17,000), as the user reads
// figures elsewhere in SOBA's messages.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Parts of the model input a hard-limit message can name as the cause.
const (
	partNone       = ""
	partToolResult = "tool_result"
	partUser       = "user"
	partAnswer     = "assistant"
	partSystem     = "system"
)

// What compacting did before a turn was found over the hard limit.
const (
	overCompacted        = "compacted"
	overCannotCompact    = "cannot"
	overNothingToCompact = "nothing"
)

// overLimit is what a turn that cannot meet the hard limit knows about
// itself (R-G4).
type overLimit struct {
	Limit  int // the hard limit
	Needed int // the input it would send
	// How says what compacting did: overCompacted (it ran and the input
	// is still over), overCannotCompact (what must stay is over the limit
	// by itself, so it did not run), overNothingToCompact.
	How string
	// Part is the one piece that alone takes a large share of the limit
	// (partNone when none does), PartTokens its size, Latest whether it is
	// the newest of its kind.
	Part       string
	PartTokens int
	Latest     bool
}

// msgOverLimit is the sentence of a turn that cannot fit the hard limit.
func msgOverLimit(o overLimit) string {
	var b strings.Builder
	fmt.Fprintf(&b, "SOBA could not fit this turn into the model's %s-token limit", thousands(o.Limit))
	switch o.How {
	case overCompacted:
		b.WriteString(" even after compacting: ")
	case overCannotCompact:
		b.WriteString(", and compacting cannot bring it under: ")
	default:
		b.WriteString(", and there is nothing older to compact: ")
	}
	n := thousands(o.PartTokens)
	advice := "ask for a smaller part"
	switch o.Part {
	case partToolResult:
		if o.Latest {
			fmt.Fprintf(&b, "the latest tool result alone is %s tokens.", n)
		} else {
			fmt.Fprintf(&b, "one tool result alone is %s tokens.", n)
		}
	case partUser:
		fmt.Fprintf(&b, "your message alone is %s tokens.", n)
		advice = "send a shorter message"
	case partAnswer:
		fmt.Fprintf(&b, "the model's last answer alone is %s tokens.", n)
		advice = "ask for a shorter answer"
	case partSystem:
		fmt.Fprintf(&b, "the system prompt and tool descriptions alone are %s tokens.", n)
		advice = "turn off skills or MCP servers this session does not need"
	default:
		fmt.Fprintf(&b, "what must stay is still %s tokens.", thousands(o.Needed))
		advice = "start a new session"
	}
	fmt.Fprintf(&b, " Raise `model.contextWindow` if the model allows it, or %s.", advice)
	return b.String()
}

// overLimitOf finds what makes the input too big: the system prompt and
// tool schemas, or the largest entry of the kept tail, when it alone takes
// at least a third of the limit.
func overLimitOf(st *state, needed, limit int, how string) overLimit {
	o := overLimit{Limit: limit, Needed: needed, How: how}
	best, bestAt := 0, -1
	for i := max(st.base.Start, 0); i < len(st.path); i++ {
		m := st.path[i]
		switch m.Type {
		case session.TypeToolResult, session.TypeUser, session.TypeAssistant:
			if int(m.Tokens) >= best {
				best, bestAt = int(m.Tokens), i
			}
		}
	}
	if st.systemTokens > best {
		if st.systemTokens*3 >= limit {
			o.Part, o.PartTokens = partSystem, st.systemTokens
		}
		return o
	}
	if bestAt < 0 || best*3 < limit {
		return o
	}
	typ := st.path[bestAt].Type
	o.PartTokens, o.Latest = best, true
	for i := bestAt + 1; i < len(st.path); i++ {
		if st.path[i].Type == typ {
			o.Latest = false
		}
	}
	switch typ {
	case session.TypeToolResult:
		o.Part = partToolResult
	case session.TypeUser:
		o.Part = partUser
	default:
		o.Part = partAnswer
	}
	return o
}

// msgQuota is the sentence of a provider answer that says the account's
// quota or credit is used up: no retry was made, since waiting will not
// help.
func msgQuota(provider, serverSays string) string {
	return fmt.Sprintf("The model provider (%s) says the account's quota or credit is used up: %q. SOBA did not retry, since waiting will not help: add credit or raise the limit with the provider, or switch `model.provider` or `model.name`.", provider, serverSays)
}

// msgOverflowAgain is the sentence of a server that answered "too long for
// the context window" when the recovery compaction (R-G9) cannot help: it
// already ran in this turn (compacted), or there was nothing older to
// compact. The usual cause is a window configured larger than the
// server's, so the server's own figure is named when it gave one.
func msgOverflowAgain(compacted bool, serverWindow, configured int) string {
	first := "The model server still answered that the request does not fit its context window after SOBA compacted once, so the request was not sent again."
	if !compacted {
		first = "The model server answered that the request does not fit its context window, and there is nothing older to compact, so the request was not sent again."
	}
	if serverWindow > 0 && serverWindow < configured {
		return fmt.Sprintf("%s The server says its window is %s tokens but `model.contextWindow` is %s: set `model.contextWindow` to %s or less, or start the server with a larger context.", first, thousands(serverWindow), thousands(configured), thousands(serverWindow))
	}
	return first + " Set `model.contextWindow` to the window the server really has (llama.cpp -c, Ollama num_ctx, vLLM --max-model-len), or start a new session."
}
