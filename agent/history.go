package agent

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/soba-agent/soba-lsp/internal/text"
	"github.com/soba-agent/soba-lsp/session"
)

// History returns the entries of the session's leaf path, root first: what
// a front end replays when a client loads the session (ACP session/load).
func (a *Agent) History() ([]session.Entry, error) {
	var out []session.Entry
	var ferr error
	err := a.do(func(st *state) {
		for _, m := range st.store.Path() {
			e, err := st.store.LoadMeta(m)
			if err != nil {
				ferr = err
				return
			}
			out = append(out, e)
		}
	})
	if err != nil {
		return nil, err
	}
	return out, ferr
}

// HistoryPoint is a place on the current path a rewind can go back to: a
// user request or a checkpoint (soba.session.history).
type HistoryPoint struct {
	EntryID   string
	Kind      string // "user" or "checkpoint"
	Text      string
	CreatedAt time.Time
	// RewindTo is the entry to rewind to so as to stand just before this
	// point: a request's parent (the request leaves the path and can be
	// sent again), a checkpoint itself.
	RewindTo string
	// FilesModifiedAfter are the files tool calls modified after RewindTo
	// on the current path, sorted; a rewind does not revert them.
	FilesModifiedAfter []string
}

// maxHistoryText bounds a point's text: a picker shows one line of it.
const maxHistoryText = 200

// HistoryPoints lists the user requests and checkpoints of the leaf path,
// root first. Only those entries and tool results are decoded.
func (a *Agent) HistoryPoints() ([]HistoryPoint, error) {
	// The path's headers are read under the lock; the entries are decoded
	// outside it (Load is safe from any goroutine), so a long session's
	// picker never holds up the budget or a prompt.
	var (
		store *session.Store
		picks []session.Meta
		at    []int // path index of picks[i]
		n     int
	)
	if err := a.do(func(st *state) {
		store = st.store
		path := st.store.Path()
		n = len(path)
		for i, m := range path {
			switch m.Type {
			case session.TypeUser, session.TypeCheckpoint, session.TypeToolResult:
				picks = append(picks, m)
				at = append(at, i)
			}
		}
	}); err != nil {
		return nil, err
	}
	entries, err := store.LoadMany(picks)
	if err != nil {
		return nil, err
	}
	type pointAt struct {
		point HistoryPoint
		from  int // the first path index after RewindTo
	}
	var points []pointAt
	modified := make([][]string, n)
	for k := range entries {
		e, i := &entries[k], at[k]
		switch {
		case e.User != nil && strings.TrimSpace(e.User.Text) != "":
			points = append(points, pointAt{HistoryPoint{EntryID: e.ID, Kind: "user", Text: text.Clip(e.User.Text, maxHistoryText),
				CreatedAt: e.Timestamp, RewindTo: e.Parent()}, i})
		case e.Checkpoint != nil:
			points = append(points, pointAt{HistoryPoint{EntryID: e.ID, Kind: "checkpoint", Text: text.Clip(checkpointText(e.Checkpoint), maxHistoryText),
				CreatedAt: e.Timestamp, RewindTo: e.ID}, i + 1})
		case e.ToolResult != nil && e.ToolResult.Artifacts != nil:
			modified[i] = e.ToolResult.Artifacts.FilesModified
		}
	}
	// The files modified after each point, gathered once from the end of
	// the path back (points are in path order): linear in the path, not in
	// points × path.
	set := map[string]bool{}
	next := n // modified[next:] is in set
	var out []HistoryPoint
	for k := len(points) - 1; k >= 0; k-- {
		p := points[k]
		for ; next > p.from; next-- {
			for _, f := range modified[next-1] {
				set[f] = true
			}
		}
		if p.point.RewindTo == "" { // a request at the root: nothing before it
			continue
		}
		p.point.FilesModifiedAfter = slices.Sorted(maps.Keys(set))
		out = append(out, p.point)
	}
	slices.Reverse(out)
	return out, nil
}

// checkpointText is how a checkpoint reads in a picker: its kind and note
// or title.
func checkpointText(c *session.Checkpoint) string {
	s := c.Kind
	if t := cmp.Or(c.Note, c.Title); t != "" {
		s += ": " + t
	}
	return s
}
