package agent

import (
	"sync"

	"github.com/sourcegraph/conc/panics"

	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/internal/background"
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
	// lean views decode as session.DecodeLineLean (Lean).
	lean bool

	// A reader walking the path in order (the barrier's builder, the
	// summarizer's input, an offline compaction) gets the entries ahead of
	// it decoded in a batch on all cores, and the batch after that decoded
	// in the background while it works through this one; mu guards the
	// window.
	mu        sync.Mutex
	next      int // the index after the last one read
	ahead     []session.Entry
	aheadFrom int
	// prefetch are the batches after the window being decoded in the
	// background, in path order, the first starting where ahead ends. A
	// batch the reader does not come to is dropped: its channel has room
	// for it.
	prefetch []pendingBatch
}

// prefetchDepth is how many batches are decoded ahead of the window: two,
// so that one batch's read from the file overlaps another's decoding.
const prefetchDepth = 2

// pendingBatch is a batch of entries from `from` on, being decoded.
type pendingBatch struct {
	from, end int
	ch        chan loadedBatch
}

// loadedBatch is the result of one background LoadMany.
type loadedBatch struct {
	entries []session.Entry
	err     error
}

// readAhead and readAheadBytes bound the entries decoded in one batch for a
// reader walking the path in order: a batch of huge tool results stays a
// few MB.
const (
	readAhead      = 256
	readAheadBytes = 4 << 20
)

// Len implements compaction.Transcript.
func (v *pathView) Len() int { return len(v.path) }

// Node implements compaction.Transcript.
func (v *pathView) Node(i int) compaction.Node {
	m := &v.path[i]
	return compaction.Node{ID: m.ID, Type: m.Type, Tokens: int(m.Tokens), Facts: m.Facts, MayHaveUsage: m.MayHaveUsage}
}

// Entry implements compaction.Transcript.
func (v *pathView) Entry(i int) (*session.Entry, error) {
	// An entry whose payload does not decode reads as its header alone
	// (R-T3): the model input, the budget and the barrier skip it instead
	// of failing every later turn; the store reports it once.
	v.mu.Lock()
	defer v.mu.Unlock()
	if k := i - v.aheadFrom; k >= 0 && k < len(v.ahead) {
		e := v.ahead[k]
		v.next = i + 1
		return &e, nil
	}
	if len(v.prefetch) > 0 && i == v.prefetch[0].from {
		b := <-v.prefetch[0].ch
		v.prefetch = v.prefetch[1:]
		if b.err == nil {
			v.install(i, b.entries)
			e := b.entries[0]
			return &e, nil
		}
		// A failed background read: read again below, and say why.
	}
	v.prefetch = nil // the reader left the walk: what is under way is dropped
	if i == v.next && i > 0 && i+1 < len(v.path) {
		// The second read in a row in order: batch the ones ahead.
		es, err := v.load(v.path[i:v.batchEnd(i)])
		if err != nil {
			return nil, err
		}
		v.install(i, es)
		e := es[0]
		return &e, nil
	}
	v.next = i + 1
	e, _, err := v.store.LoadLenientMeta(v.path[i])
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// batchEnd is the end of the batch read ahead from i: at most readAhead
// entries and readAheadBytes (at least one entry).
func (v *pathView) batchEnd(i int) int {
	end, size := i+1, v.path[i].Len
	for end < min(i+readAhead, len(v.path)) && size+v.path[end].Len <= readAheadBytes {
		size += v.path[end].Len
		end++
	}
	return end
}

// install makes es, the entries from i on, the window, and starts decoding
// the batches after it in the background, up to prefetchDepth. v.mu is
// held.
func (v *pathView) install(i int, es []session.Entry) {
	v.ahead, v.aheadFrom, v.next = es, i, i+1
	from := i + len(es)
	if n := len(v.prefetch); n > 0 {
		from = v.prefetch[n-1].end
	}
	for len(v.prefetch) < prefetchDepth && from < len(v.path) {
		end := v.batchEnd(from)
		metas := v.path[from:end]
		ch := make(chan loadedBatch, 1)
		v.prefetch = append(v.prefetch, pendingBatch{from: from, end: end, ch: ch})
		background.Go(func() {
			es, err := v.load(metas)
			ch <- loadedBatch{es, err}
		}, func(r *panics.Recovered) { ch <- loadedBatch{nil, background.Error(r)} })
		from = end
	}
}

// load decodes the entries of metas, lean or in full as the view does.
func (v *pathView) load(metas []session.Meta) ([]session.Entry, error) {
	if v.lean {
		return v.store.LoadManyLean(metas)
	}
	return v.store.LoadMany(metas)
}

// Lean implements compaction.LeanTranscript: a view of the same path whose
// batches leave out the content session.DecodeLineLean leaves out.
func (v *pathView) Lean() compaction.Transcript {
	return &pathView{store: v.store, path: v.path, latest: v.latest, lean: true}
}

// marked returns the positions on the view's path of its capsules and the
// entries carrying facts, from the store, when the path is the store's
// index from its first entry on (a session without branches): then a
// position in the index is one on the path.
func (v *pathView) marked() ([]int32, bool) {
	all := v.store.All()
	if len(v.path) == 0 || len(all) < len(v.path) || &all[0] != &v.path[0] {
		return nil, false
	}
	return v.store.Marked(), true
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
