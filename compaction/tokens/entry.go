package tokens

import (
	"strings"

	"github.com/soba-agent/soba-lsp/compaction/capsule"
	"github.com/soba-agent/soba-lsp/session"
)

// Per-message framing the providers add around content: chat templates
// wrap each message in role markers (`<|im_start|>assistant\n … <|im_end|>`
// is 4–5 tokens), and each tool call or result carries its id, name and
// JSON structure. The figures are deliberately round; the Meter's
// calibration absorbs what they miss.
const (
	MessageOverhead    = 4
	ToolCallOverhead   = 8
	ToolResultOverhead = 6
)

// TextCounter is what EntryTokens counts text with; *Counter is one.
type TextCounter interface {
	Count(text string) int
}

// Estimator estimates transcript entries as the model sees them.
type Estimator struct {
	// Counter counts text; nil means Default().
	Counter TextCounter
	// RenderCapsule renders a capsule's state as the model input carries it
	// (the compaction package owns that rendering); nil renders every
	// section as a plain list, which is close enough for an estimate.
	RenderCapsule func(capsule.State) string
}

// EntryTokens estimates e with Default() and the plain capsule rendering.
// It is the Estimate function the session store writes into Entry.Tokens.
func EntryTokens(e *session.Entry) int { return Estimator{}.EntryTokens(e) }

// EntryTokens estimates one entry: role overhead plus its text, each tool
// call's id, name and arguments, a tool result's content, or a capsule's
// rendered state. Entries the model never sees (session header, checkpoint,
// settings, unknown types) count 0.
func (x Estimator) EntryTokens(e *session.Entry) int {
	c := x.Counter
	if c == nil {
		c = Default()
	}
	switch e.Type {
	case session.TypeUser:
		if e.User == nil {
			return 0
		}
		return MessageOverhead + c.Count(e.User.Text)
	case session.TypeAssistant:
		a := e.Assistant
		if a == nil {
			return 0
		}
		n := MessageOverhead + c.Count(a.Text)
		for _, call := range a.ToolCalls {
			n += ToolCallOverhead + c.Count(call.ID) + c.Count(call.Name) + c.Count(string(call.Arguments))
		}
		return n
	case session.TypeToolResult:
		r := e.ToolResult
		if r == nil {
			return 0
		}
		return MessageOverhead + ToolResultOverhead + c.Count(r.ToolCallID) + c.Count(r.Content)
	case session.TypeCapsule:
		if e.Capsule == nil {
			return 0
		}
		return MessageOverhead + c.Count(x.render(e.Capsule.State))
	case session.TypeCapsuleLoad:
		if e.CapsuleLoad == nil {
			return 0
		}
		return MessageOverhead + c.Count(x.render(e.CapsuleLoad.State))
	}
	return 0
}

func (x Estimator) render(s capsule.State) string {
	if x.RenderCapsule != nil {
		return x.RenderCapsule(s)
	}
	return plainCapsule(s)
}

// plainCapsule lists every field of s under a heading, one item a line.
func plainCapsule(s capsule.State) string {
	var b strings.Builder
	list := func(head string, items []string) {
		if len(items) == 0 {
			return
		}
		b.WriteString("## " + head + "\n")
		for _, it := range items {
			b.WriteString("- " + it + "\n")
		}
	}
	if s.Goal != "" {
		b.WriteString("## Goal\n" + s.Goal + "\n")
	}
	list("Constraints", s.Constraints)
	list("Done", s.Done)
	list("In progress", s.InProgress)
	list("Pending", s.Pending)
	if len(s.Decisions) > 0 {
		b.WriteString("## Decisions\n")
		for _, d := range s.Decisions {
			b.WriteString("- " + d.Decision + " — " + d.Rationale + "\n")
		}
	}
	list("Blockers", s.Blockers)
	list("Next steps", s.NextSteps)
	list("Notes", s.Notes)
	list("Files read", s.FilesRead)
	list("Files modified", s.FilesModified)
	if len(s.Verification) > 0 {
		b.WriteString("## Verification\n")
		for _, v := range s.Verification {
			b.WriteString("- `" + v.Command + "` " + v.Outcome + "\n")
		}
	}
	list("Active skills", s.ActiveSkills)
	list("User messages", s.UserMessages)
	return b.String()
}
