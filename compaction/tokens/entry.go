package tokens

import (
	"github.com/soba-agent/soba-lsp/capsule"
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
}

// EntryTokens estimates e with Default().
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
		return MessageOverhead + c.Count(capsule.RenderModelText(e.Capsule.State))
	case session.TypeCapsuleLoad:
		if e.CapsuleLoad == nil {
			return 0
		}
		return MessageOverhead + c.Count(capsule.RenderModelText(e.CapsuleLoad.State))
	}
	return 0
}
