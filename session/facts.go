package session

import (
	"bytes"
	"slices"
)

// Facts are the few payload fields that resume needs from entries it does
// not otherwise read (R-T4): settings, checkpoint intents and activated
// skills. The index keeps them beside each entry's header, so resume, the
// budget and the offline commands restore a session from the index alone,
// without decoding the history. An entry without such a field has nil
// Facts; a Facts value is never modified once built.
type Facts struct {
	// AutoCompact, Approval, Model, SummaryModel, ConsumedIntents,
	// NativeRejected, ReasoningRejected and RewindTo are a settings entry's.
	AutoCompact       *bool
	Approval          string `json:",omitempty"`
	Model             string `json:",omitempty"`
	SummaryModel      string `json:",omitempty"`
	ConsumedIntents   []string
	NativeRejected    string
	ReasoningRejected bool
	RewindTo          string
	// Intent is a checkpoint's trigger intent.
	Intent string
	// Skill is the skill a tool result activated.
	Skill string
}

// FactsOf returns the facts of e, nil when it carries none.
func FactsOf(e *Entry) *Facts {
	switch {
	case e.Settings != nil:
		s := e.Settings
		return &Facts{AutoCompact: s.AutoCompact, Approval: s.Approval, Model: s.Model, SummaryModel: s.SummaryModel, ConsumedIntents: slices.Clone(s.ConsumedIntents), NativeRejected: s.NativeRejected,
			ReasoningRejected: s.ReasoningRejected, RewindTo: s.RewindTo}
	case e.Checkpoint != nil && e.Checkpoint.Intent != "":
		return &Facts{Intent: e.Checkpoint.Intent}
	case e.ToolResult != nil && e.ToolResult.Artifacts != nil && e.ToolResult.Artifacts.Skill != "":
		return &Facts{Skill: e.ToolResult.Artifacts.Skill}
	}
	return nil
}

// HasUsage reports whether e is an answer carrying the provider's usage.
func HasUsage(e *Entry) bool { return e.Assistant != nil && e.Assistant.Usage != nil }

// factsNeeded says whether resume must decode a line of type typ to learn
// its facts and its usage: settings and checkpoints always (they are rare and
// small), a tool result or an answer only when its bytes may name the field
// at all. line is the whole line, or nil when only a prefix is at hand (a
// line longer than the scan buffer): then the line is read whole.
func factsNeeded(typ string, line []byte) bool {
	switch typ {
	case TypeSettings, TypeCheckpoint:
		return true
	case TypeToolResult:
		return line == nil || mayName(line, "skill")
	case TypeAssistant:
		return line == nil || mayName(line, "usage")
	}
	return false
}

// mayName reports whether the JSON text line may hold an object member
// named key, as the decoder matches names: case-insensitively, and with
// escapes (\u0073kill) resolved. It errs on the side of yes (a mention in a
// string also counts, and any \u escape does), so a no is certain: the line
// need not be decoded to know the field is absent. key is lower-case ASCII
// letters; pivot search is on its rarest letter, found by IndexByte.
func mayName(line []byte, key string) bool {
	if bytes.Contains(line, []byte(`\u`)) {
		return true
	}
	// The pivot is a letter of key that is rare in text, so that the loop
	// runs few times per line.
	pivot := pivots[key]
	for _, c := range []byte{key[pivot], key[pivot] - 'a' + 'A'} {
		for p := line; ; {
			i := bytes.IndexByte(p, c)
			if i < 0 {
				break
			}
			off := len(line) - len(p) + i - pivot
			if off >= 0 && off+len(key) <= len(line) && bytes.EqualFold(line[off:off+len(key)], []byte(key)) {
				return true
			}
			p = p[i+1:]
		}
	}
	return false
}

// pivots are the keys mayName is asked about and their rarest letters,
// worked out once.
var pivots = map[string]int{"skill": rarest("skill"), "usage": rarest("usage")}

// rarest is the index of the letter of key least frequent in English text
// and source code.
func rarest(key string) int {
	const order = "zqxjkvbpygfwmucldrhsnioate" // rarest first
	best, rank := 0, len(order)
	for i := 0; i < len(key); i++ {
		if r := bytes.IndexByte([]byte(order), key[i]); r >= 0 && r < rank {
			best, rank = i, r
		}
	}
	return best
}
