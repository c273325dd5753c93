package app

import (
	"slices"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
	"github.com/soba-agent/soba-lsp/lsp/protocol"
)

// TestSessionHistoryAndRewind_RT4 drives the rewind picker's source through
// the real server: soba.session.history lists the requests and checkpoints
// of the current path with the files modified after each point; rewinding
// to a point's rewindTo leaves the kept history (and its list) in place;
// a bad id answers in words; soba.session.list titles the session with its
// first request.
func TestSessionHistoryAndRewind_RT4(t *testing.T) {
	e := runAgentServer(t, nil, []providertest.Reply{
		providertest.Call("c1", "write_file", map[string]any{"path": "a.txt", "content": "one"}),
		providertest.Text("Wrote a.txt."),
		providertest.Call("c2", "write_file", map[string]any{"path": "b.txt", "content": "two"}),
		providertest.Text("Wrote b.txt."),
	}, nil)
	e.prompt(t, "write a.txt\nwith one")
	var ck protocol.CheckpointResult
	if err := e.Command(protocol.CommandCheckpoint, map[string]any{"kind": "milestone", "note": "a done"}, &ck); err != nil {
		t.Fatal(err)
	}
	e.prompt(t, "write b.txt")

	var points []protocol.HistoryPoint
	if err := e.Command(protocol.CommandSessionHistory, nil, &points); err != nil {
		t.Fatal(err)
	}
	type row struct {
		kind  protocol.HistoryKind
		text  string
		files []string
	}
	var got []row
	for _, p := range points {
		got = append(got, row{p.Kind, p.Text, p.FilesModifiedAfter})
		if p.CreatedAt.IsZero() || p.RewindTo == "" || p.EntryID == "" {
			t.Errorf("point %+v lacks a time, an id or a rewind target", p)
		}
	}
	want := []row{
		{protocol.HistoryUser, "write a.txt\nwith one", []string{"a.txt", "b.txt"}},
		{protocol.HistoryCheckpoint, "milestone: a done", []string{"b.txt"}},
		{protocol.HistoryUser, "write b.txt", []string{"b.txt"}},
	}
	if !slices.EqualFunc(got, want, func(a, b row) bool { return a.kind == b.kind && a.text == b.text && slices.Equal(a.files, b.files) }) {
		t.Fatalf("history = %+v, want %+v", got, want)
	}

	// Rewind to just before the second request: the first turn and the
	// checkpoint stay.
	var rw protocol.SessionRewindResult
	if err := e.Command(protocol.CommandSessionRewind, map[string]any{"entryId": points[2].RewindTo}, &rw); err != nil {
		t.Fatal(err)
	}
	var after []protocol.HistoryPoint
	if err := e.Command(protocol.CommandSessionHistory, nil, &after); err != nil {
		t.Fatal(err)
	}
	if len(after) != 2 || after[0].EntryID != points[0].EntryID || after[1].EntryID != points[1].EntryID || len(after[1].FilesModifiedAfter) != 0 {
		t.Fatalf("after the rewind: %+v", after)
	}

	err := e.Command(protocol.CommandSessionRewind, map[string]any{"entryId": "e_nope"}, &rw)
	if err == nil {
		t.Fatal("a rewind to an unknown id succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, `no entry "e_nope" in this session`) || !strings.Contains(msg, "soba.session.history") ||
		strings.Contains(msg, "session: rewind") || strings.Count(msg, "soba.session.rewind") > 1 {
		t.Fatalf("error %q does not say what is wrong once, in words", msg)
	}

	var list []protocol.SessionSummary
	if err := e.Command(protocol.CommandSessionList, nil, &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Title != "write a.txt" || list[0].Bytes <= 0 {
		t.Fatalf("session list %+v", list)
	}
	var b protocol.Budget
	if err := e.Command(protocol.CommandBudget, nil, &b); err != nil {
		t.Fatal(err)
	}
	if want := protocol.BudgetDisplay(b.EffectiveTokens, b.HardLimit); b.Display != want || !strings.Contains(b.Display, "%)") {
		t.Fatalf("budget display %q, want %q", b.Display, want)
	}
}
