package compaction

import (
	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/session"
)

// Base is where the current model input begins: the newest capsule on the
// leaf path (R-M2) and the index of its first kept entry. Without a capsule
// the model input begins at the root.
type Base struct {
	// CapsuleIndex is the path index of the newest capsule or capsule_load
	// entry, or -1.
	CapsuleIndex int
	// CheckpointID of that capsule ("" without one).
	CheckpointID string
	// State is the portable state the model input carries; nil without a
	// capsule. For a capsule load it is the loaded state rolled into the
	// session's own newest capsule before it (R-M4).
	State *capsule.State
	// Native is the capsule's provider-side continuation, if any.
	Native *capsule.Native
	// Start is the path index of the first entry of the kept tail: the
	// capsule's firstKeptEntryId, or 0 without a capsule.
	Start int
	// Problem notes a capsule whose firstKeptEntryId is not on its path (a
	// damaged transcript); the tail then starts right after the capsule.
	Problem string
}

// For is the base as a request to provider and model sees it: the native
// continuation stays only when it belongs to them (R-M1, R-N2).
func (b Base) For(provider, model string) Base {
	if !compatible(b.Native, InputOptions{Provider: provider, Model: model}) {
		b.Native = nil
	}
	return b
}

// FindBase locates the model input's base on the leaf path. It walks back
// only from the newest capsule to its first kept entry, so its cost follows
// the kept tail, not the history.
func FindBase(t Transcript) (Base, error) {
	b, err := findBase(t, t.LatestCapsule())
	if err != nil || b.Native == nil {
		return b, err
	}
	// A native continuation the provider refused is never sent again
	// (R-N2): a settings entry after the capsule says so.
	for i := b.CapsuleIndex + 1; i < t.Len(); i++ {
		if t.Node(i).Type != session.TypeSettings {
			continue
		}
		e, err := loadEntry(t, i)
		if err != nil {
			return Base{}, err
		}
		if e.Settings != nil && e.Settings.NativeRejected != "" && e.Settings.NativeRejected == b.CheckpointID {
			b.Native = nil
			break
		}
	}
	return b, nil
}

func findBase(t Transcript, ci int) (Base, error) {
	if ci < 0 {
		return Base{CapsuleIndex: -1}, nil
	}
	e, err := loadEntry(t, ci)
	if err != nil {
		return Base{}, err
	}
	switch {
	case e.Capsule != nil:
		st := e.Capsule.State
		b := Base{CapsuleIndex: ci, CheckpointID: e.Capsule.CheckpointID, State: &st, Native: e.Capsule.Native, Start: ci + 1}
		if fk := e.Capsule.FirstKeptEntryID; fk != "" {
			found := false
			for i := ci - 1; i >= 0; i-- {
				if t.Node(i).ID == fk {
					b.Start, found = i, true
					break
				}
			}
			if !found {
				b.Problem = "capsule " + b.CheckpointID + ": firstKeptEntryId " + fk + " is not on its path"
			}
		}
		return b, nil
	case e.CapsuleLoad != nil:
		// A loaded capsule joins the session's own state: roll it into the
		// newest capsule before it and keep that capsule's tail, so loading
		// never drops what the model already sees.
		prev := -1
		for i := ci - 1; i >= 0; i-- {
			if ty := t.Node(i).Type; ty == session.TypeCapsule || ty == session.TypeCapsuleLoad {
				prev = i
				break
			}
		}
		b, err := findBase(t, prev)
		if err != nil {
			return Base{}, err
		}
		loaded := e.CapsuleLoad.State
		if b.State != nil {
			merged := Roll(*b.State, loaded)
			b.State = &merged
		} else {
			b.State = &loaded
		}
		b.CapsuleIndex, b.CheckpointID = ci, e.CapsuleLoad.CheckpointID
		// A native continuation belongs to the conversation it came from;
		// after a load the portable state must be used.
		b.Native = nil
		return b, nil
	}
	return Base{CapsuleIndex: -1}, nil
}
