package agent

import (
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/session"
)

// pathView is a compaction.Transcript over a suffix of the session's leaf
// path: headers from the store's path snapshot, payloads loaded on demand.
// The store's snapshots never change (appends write past their end, a
// rewind builds a new array) and its Load is safe for concurrent use, so a
// view made under the state's lock stays valid while a barrier reads it
// from another goroutine.
type pathView struct {
	store  *session.Store
	path   []session.Meta
	latest int
}

// Len implements compaction.Transcript.
func (v *pathView) Len() int { return len(v.path) }

// Node implements compaction.Transcript.
func (v *pathView) Node(i int) compaction.Node {
	m := v.path[i]
	return compaction.Node{ID: m.ID, Type: m.Type, Tokens: m.Tokens, Facts: m.Facts, MayHaveUsage: m.MayHaveUsage}
}

// Entry implements compaction.Transcript.
func (v *pathView) Entry(i int) (*session.Entry, error) {
	// An entry whose payload does not decode reads as its header alone
	// (R-T3): the model input, the budget and the barrier skip it instead
	// of failing every later turn; the store reports it once.
	e, _, err := v.store.LoadLenient(v.path[i].ID)
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// LatestCapsule implements compaction.Transcript.
func (v *pathView) LatestCapsule() int { return v.latest }

// newPathView views the leaf path from index from on; latest is the newest
// capsule's index on the whole path (-1 for none).
func newPathView(s *session.Store, path []session.Meta, from, latest int) *pathView {
	v := &pathView{store: s, path: path[from:], latest: -1}
	if latest >= from {
		v.latest = latest - from
	}
	return v
}

// latestCapsuleIndex scans the path back for the newest capsule or capsule
// load; the state keeps the answer and updates it on append, so the scan
// runs only on resume and rewind.
func latestCapsuleIndex(path []session.Meta) int {
	for i := len(path) - 1; i >= 0; i-- {
		if t := path[i].Type; t == session.TypeCapsule || t == session.TypeCapsuleLoad {
			return i
		}
	}
	return -1
}
