package agent

import (
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/session"
)

// pathView is a compaction.Transcript over a suffix of the session's leaf
// path: headers copied, payloads loaded from the store on demand. A view
// made by the owner stays valid while the owner appends or rewinds, so a
// barrier can read it from another goroutine (the store's Load is safe for
// concurrent use).
type pathView struct {
	store  *session.Store
	nodes  []compaction.Node
	latest int
}

// Len implements compaction.Transcript.
func (v *pathView) Len() int { return len(v.nodes) }

// Node implements compaction.Transcript.
func (v *pathView) Node(i int) compaction.Node { return v.nodes[i] }

// Entry implements compaction.Transcript.
func (v *pathView) Entry(i int) (*session.Entry, error) {
	e, err := v.store.Load(v.nodes[i].ID)
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// LatestCapsule implements compaction.Transcript.
func (v *pathView) LatestCapsule() int { return v.latest }

// newPathView copies the leaf path's headers from index from on; latest is
// the newest capsule's index on the whole path (-1 for none).
func newPathView(s *session.Store, path []session.Meta, from, latest int) *pathView {
	v := &pathView{store: s, nodes: make([]compaction.Node, 0, len(path)-from), latest: -1}
	for _, m := range path[from:] {
		v.nodes = append(v.nodes, compaction.Node{ID: m.ID, Type: m.Type, Tokens: m.Tokens})
	}
	if latest >= from {
		v.latest = latest - from
	}
	return v
}

// livePath is a compaction.Transcript over the whole current leaf path,
// used only on the owner goroutine (it is not a copy).
type livePath struct {
	store  *session.Store
	path   []session.Meta
	latest int
}

func (l *livePath) Len() int { return len(l.path) }
func (l *livePath) Node(i int) compaction.Node {
	m := l.path[i]
	return compaction.Node{ID: m.ID, Type: m.Type, Tokens: m.Tokens}
}
func (l *livePath) Entry(i int) (*session.Entry, error) {
	e, err := l.store.Load(l.path[i].ID)
	if err != nil {
		return nil, err
	}
	return &e, nil
}
func (l *livePath) LatestCapsule() int { return l.latest }

// latestCapsuleIndex scans the path back for the newest capsule or capsule
// load; the owner keeps the answer and updates it on append, so the scan
// runs only on resume and rewind.
func latestCapsuleIndex(path []session.Meta) int {
	for i := len(path) - 1; i >= 0; i-- {
		if t := path[i].Type; t == session.TypeCapsule || t == session.TypeCapsuleLoad {
			return i
		}
	}
	return -1
}
