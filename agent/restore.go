package agent

import (
	"fmt"
	"iter"

	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/compaction/tokens"
	"github.com/soba-agent/soba-lsp/session"
)

// Restored is what a session's leaf path restores (R-T4) besides the leaf
// itself: the auto-compact setting, the pending trigger intents, the active
// skills, the newest compaction and the model input's measure. The server's
// resume and the offline budget and compact read it with the same code, so
// their figures agree.
type Restored struct {
	AutoCompact bool
	// Approval is the newest approval policy a settings entry of the path
	// recorded; "" when none did.
	Approval string
	// Model and SummaryModel are the newest model picks (names among the
	// user's `models`, or "(settings)") settings entries of the path
	// recorded; "" when none did. The caller decides whether they apply.
	Model, SummaryModel string
	Intents             compaction.Intents
	// ActiveSkills are the skills the capsule carries and those activated in
	// the model input since, in that order, without repeats: the skills the
	// next capsule lists, whose bodies its system prompt carries.
	ActiveSkills []string
	// PromptSkills are the skills whose bodies the system prompt carries
	// now: the capsule's (promptSkills). The bodies of those activated
	// since are in their tool results, counted with the messages.
	PromptSkills []string
	// LastCompaction is the result of the newest capsule on the path, as
	// the status line shows it; nil when there is none.
	LastCompaction *compaction.CompactionResult
	Input          InputMeasure
}

// Restore reads what path restores; base is the path's model-input base
// (compaction.FindBase). It reads the settings, intents and activated skills
// from the path's headers (the store's index keeps them, session.Facts) and
// decodes only the newest capsule and the newest answer carrying usage, so
// its cost does not grow with the history's payloads.
func Restore(path compaction.Transcript, base compaction.Base, counter compaction.Counter) (Restored, error) {
	r := Restored{AutoCompact: true}
	newest := -1
	for i, n := range capsulesAndFacts(path) {
		if n.Type == session.TypeCapsule {
			newest = i
			continue
		}
		f := n.Facts
		if f == nil {
			continue
		}
		switch n.Type {
		case session.TypeSettings:
			if f.AutoCompact != nil {
				r.AutoCompact = *f.AutoCompact
			}
			if f.Approval != "" {
				r.Approval = f.Approval
			}
			if f.Model != "" {
				r.Model = f.Model
			}
			if f.SummaryModel != "" {
				r.SummaryModel = f.SummaryModel
			}
			for _, c := range f.ConsumedIntents {
				r.Intents.Consume(c)
			}
		case session.TypeCheckpoint:
			if f.Intent != "" {
				r.Intents.Add(f.Intent)
			}
		}
	}
	r.ActiveSkills, r.PromptSkills = activeSkillsOn(path, base), promptSkills(base)
	if newest >= 0 {
		e, err := path.Entry(newest)
		if err != nil {
			return r, fmt.Errorf("resume: %w", err)
		}
		if e.Capsule != nil {
			res := compaction.CapsuleResult(e.Capsule)
			r.LastCompaction = &res
		}
	}
	in, err := MeasureInput(path, base, counter)
	if err != nil {
		return r, fmt.Errorf("resume: %w", err)
	}
	r.Input = in
	return r, nil
}

// capsulesAndFacts yields, in path order, the capsules of path and the
// entries whose headers carry facts: a few among many. Over a store's path
// view without branches it takes them from the store's list (Store.Marked)
// instead of walking every header.
func capsulesAndFacts(path compaction.Transcript) iter.Seq2[int, compaction.Node] {
	return func(yield func(int, compaction.Node) bool) {
		if v, ok := path.(*pathView); ok {
			if marked, ok := v.marked(); ok {
				for _, i := range marked {
					if int(i) >= len(v.path) || !yield(int(i), v.Node(int(i))) {
						return
					}
				}
				return
			}
		}
		for i := range path.Len() {
			if n := path.Node(i); (n.Facts != nil || n.Type == session.TypeCapsule) && !yield(i, n) {
				return
			}
		}
	}
}

// InputMeasure is the model input measured from its base, for the Meter.
type InputMeasure struct {
	// Entries are the raw estimates of the input's parts: the capsule's
	// rendered text first when there is one, then each message.
	Entries []int
	// UsageAt indexes Entries at the newest response after the capsule
	// that carries provider usage, -1 when none does; Prompt and
	// Completion are that usage.
	UsageAt            int
	Prompt, Completion int
}

// MeasureInput measures the model input of path from base (O(tail) in
// headers; only answers after the capsule that may carry usage are loaded,
// newest first, until one does). Provider usage counts only when its response lies after the
// newest capsule, so a compaction never re-triggers itself on the stale
// figures of the input it replaced.
func MeasureInput(path compaction.Transcript, base compaction.Base, counter compaction.Counter) (InputMeasure, error) {
	m := InputMeasure{UsageAt: -1}
	switch {
	case base.Native != nil && base.Native.Tokens > 0:
		// A native continuation goes in place of the capsule's text: its
		// size as the provider reported it, until the provider's usage of
		// a request carrying it says more (R-N2). base is the one the
		// requests see (Base.For).
		m.Entries = append(m.Entries, base.Native.Tokens)
	case base.State != nil:
		m.Entries = append(m.Entries, counter.Count(compaction.CapsulePreamble+compaction.ModelText(*base.State)))
	}
	at := make([]int, 0, max(0, path.Len()-base.Start)) // path index of each message in Entries
	for i := base.Start; i < path.Len(); i++ {
		n := path.Node(i)
		if i == base.CapsuleIndex || !isModelType(n.Type) {
			continue
		}
		m.Entries = append(m.Entries, n.Tokens)
		at = append(at, i)
	}
	offset := len(m.Entries) - len(at)
	for k := len(at) - 1; k >= 0; k-- {
		i := at[k]
		if i <= base.CapsuleIndex {
			break
		}
		if n := path.Node(i); n.Type != session.TypeAssistant || !n.MayHaveUsage {
			continue
		}
		e, err := path.Entry(i)
		if err != nil {
			return m, err
		}
		if e.Assistant != nil && e.Assistant.Usage != nil {
			m.UsageAt, m.Prompt, m.Completion = offset+k, e.Assistant.Usage.InputTokens, e.Assistant.Usage.OutputTokens
			break
		}
	}
	return m, nil
}

// ResetMeter starts meter over from this input with the system prompt and
// tool schemas estimated at systemTokens. The system prompt changes only
// with the base (promptSkills), and usage counts only when its response
// lies after the base, so the reported request carried the same system
// prompt: a skill activated since counts as its tool result, on top of the
// report, as it does live.
func (m InputMeasure) ResetMeter(meter *tokens.Meter, systemTokens int) {
	if m.UsageAt >= 0 {
		meter.ResetWithUsage(systemTokens, m.Entries, m.UsageAt, m.Prompt, m.Completion)
		return
	}
	meter.Reset(systemTokens, m.Entries)
}
