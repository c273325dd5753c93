package app

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/lsp/protocol"
	"github.com/soba-agent/soba-lsp/session"
)

// writeChatSession writes session id into the test server's session
// directory: a request answered with a write_file the user allowed once, a
// denied bash call, a compaction, then `turns` more requests answered with
// Markdown. It returns the file's path.
func writeChatSession(t testing.TB, dir, id string, turns int) string {
	t.Helper()
	st, err := session.Create(filepath.Join(dir, ".soba", "sessions"), session.SessionHeader{SessionID: id}, session.Options{Sync: session.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	add := func(e session.Entry) string {
		e2, err := st.Append(e)
		if err != nil {
			t.Fatal(err)
		}
		return e2.ID
	}
	args, _ := json.Marshal(map[string]string{"path": "a.txt", "content": "one\n"})
	bashArgs, _ := json.Marshal(map[string]string{"command": "rm -rf build"})
	add(session.Entry{Type: session.TypeUser, User: &session.UserMessage{Text: "write a.txt"}})
	add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{ToolCalls: []session.ToolCall{{ID: "c1", Name: "write_file", Arguments: args}}}})
	add(session.Entry{Type: session.TypeToolResult, ToolResult: &session.ToolResult{ToolCallID: "c1", ToolName: "write_file", OK: true, Content: "wrote a.txt (1 line)",
		Summary: "wrote 1 line", Approval: session.ApprovalOnce, Artifacts: &session.Artifacts{FilesModified: []string{"a.txt"}}}})
	add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{ToolCalls: []session.ToolCall{{ID: "c2", Name: "bash", Arguments: bashArgs}}}})
	add(session.Entry{Type: session.TypeToolResult, ToolResult: &session.ToolResult{ToolCallID: "c2", ToolName: "bash", Content: "denied: the user did not allow this bash call", Approval: session.ApprovalDenied}})
	kept := add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{Text: "Wrote **a.txt**."}})
	add(session.Entry{Type: session.TypeCapsule, Capsule: &session.Capsule{CheckpointID: "ck_1", Trigger: "user", FirstKeptEntryID: kept,
		TokensBefore: 9000, TokensAfter: 1200, Quality: "full", Title: "Compacted", State: capsule.State{Goal: "write a.txt"}}})
	for i := range turns {
		add(session.Entry{Type: session.TypeUser, User: &session.UserMessage{Text: fmt.Sprintf("question %d", i)}})
		add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{Text: fmt.Sprintf("Answer %d: `code`", i)}})
	}
	return st.FilePath()
}

// TestSessionTranscriptPages_RT2 reads a reopened session's conversation
// through the real server in pages: the newest page first, each page's
// items root first, `before` leading back to the session's start; together
// the pages are the whole path — requests, answers, tool cards with their
// results and the user's approvals, the compaction marker.
func TestSessionTranscriptPages_RT2(t *testing.T) {
	e := runAgentServer(t, nil, nil, nil)
	writeChatSession(t, e.dir, "s_chat", 10)
	var res protocol.SessionResumeResult
	if err := e.Command(protocol.CommandSessionResume, map[string]any{"sessionId": "s_chat"}, &res); err != nil {
		t.Fatal(err)
	}
	var pages [][]protocol.TranscriptItem
	before := ""
	for range 20 {
		var p protocol.SessionTranscript
		args := map[string]any{"limit": 6}
		if before != "" {
			args["before"] = before
		}
		if err := e.Command(protocol.CommandSessionTranscript, args, &p); err != nil {
			t.Fatal(err)
		}
		if p.LeafID != res.LeafID {
			t.Fatalf("page leaf %q, want %q", p.LeafID, res.LeafID)
		}
		pages = append(pages, p.Items)
		if before = p.Before; before == "" {
			break
		}
	}
	if len(pages) < 3 {
		t.Fatalf("%d pages of 6 entries for 28 entries", len(pages))
	}
	if last := pages[0][len(pages[0])-1]; last.Kind != protocol.KindAssistant || last.Text != "Answer 9: `code`" {
		t.Errorf("the newest page ends with %+v", last)
	}
	var all []protocol.TranscriptItem
	for _, p := range slices.Backward(pages) {
		all = append(all, p...)
	}
	var got []string
	for _, it := range all {
		s := string(it.Kind) + ":" + it.Text
		if it.Tool != nil {
			ok := "none"
			if it.Tool.OK != nil {
				ok = fmt.Sprint(*it.Tool.OK)
			}
			s = fmt.Sprintf("tool:%s ok=%s approval=%s summary=%s", it.Tool.Name, ok, it.Tool.Approval, it.Tool.Summary)
		}
		if it.Compaction != nil {
			s += fmt.Sprintf(" %s %d→%d", it.Compaction.CheckpointID, it.Compaction.TokensBefore, it.Compaction.TokensAfter)
		}
		if it.EntryID == "" || it.CreatedAt.IsZero() {
			t.Errorf("item %q has no entry id or time", s)
		}
		got = append(got, s)
	}
	want := []string{
		"user:write a.txt",
		"tool:write_file ok=true approval=once summary=wrote 1 line",
		"tool:bash ok=false approval=denied summary=denied: the user did not allow this bash call",
		"assistant:Wrote **a.txt**.",
		"compaction:Compacted ck_1 9000→1200",
	}
	for i := range 10 {
		want = append(want, fmt.Sprintf("user:question %d", i), fmt.Sprintf("assistant:Answer %d: `code`", i))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages together:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A cursor not on the path says so in words.
	err := e.Command(protocol.CommandSessionTranscript, map[string]any{"before": "e_nope"}, nil)
	if err == nil || !strings.Contains(err.Error(), `no entry "e_nope" on the session's current path`) {
		t.Fatalf("unknown cursor: %v", err)
	}
	if err := e.Command(protocol.CommandSessionTranscript, map[string]any{"limit": 501}, nil); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("limit 501: %v", err)
	}
}

// TestTranscriptNewestPageOf10kSession_RT2: reopening a 10,000-entry
// session shows its newest page in well under 300 ms (resume and the page
// request over the wire; docs/benchmarks.md has the figures).
func TestTranscriptNewestPageOf10kSession_RT2(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 10,000-entry session")
	}
	e := runAgentServer(t, nil, nil, nil)
	writeChatSession(t, e.dir, "s_big", 4996) // 8 + 2×4996 = 10,000 entries
	t0 := time.Now()
	if err := e.Command(protocol.CommandSessionResume, map[string]any{"sessionId": "s_big"}, nil); err != nil {
		t.Fatal(err)
	}
	resumed := time.Since(t0)
	var p protocol.SessionTranscript
	t1 := time.Now()
	if err := e.Command(protocol.CommandSessionTranscript, map[string]any{}, &p); err != nil {
		t.Fatal(err)
	}
	page := time.Since(t1)
	t.Logf("10,000 entries: resume %v, newest page %v (%d items)", resumed, page, len(p.Items))
	if len(p.Items) == 0 || p.Items[len(p.Items)-1].Text != "Answer 4995: `code`" || p.Before == "" {
		t.Fatalf("newest page: %d items, before %q", len(p.Items), p.Before)
	}
	if page > 300*time.Millisecond {
		t.Errorf("the newest page took %v, over 300 ms", page)
	}
}
