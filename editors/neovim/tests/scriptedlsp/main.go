//go:build sobascripted

// Command scriptedlsp is the project's real language server layer (package
// lsp: transport, initialize, commands, progress, notifications) in front of
// a scripted in-memory backend. The Neovim plugin's end-to-end tests run
// against it on every machine, so the editor side of PROTOCOL.md is checked
// on the wire even where no model server runs; the same tests then run
// against the full soba-lsp when it serves the commands.
//
// It is built only with `-tags sobascripted` (editors/neovim/test.sh), so
// a change of the lsp package's API never breaks `go build ./...`.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/soba-agent/soba-lsp/lsp"
	"github.com/soba-agent/soba-lsp/lsp/protocol"
)

type stdio struct {
	io.Reader
	io.Writer
}

func (stdio) Close() error { return os.Stdin.Close() }

func main() {
	if len(os.Args) > 1 && os.Args[1] == "--version" {
		fmt.Println("soba-lsp scripted (Neovim plugin tests)")
		return
	}
	srv := lsp.NewServer(newBackend, lsp.WithVersion("scripted"), lsp.WithBudgetInterval(20*time.Millisecond))
	os.Exit(srv.Serve(context.Background(), stdio{os.Stdin, os.Stdout}))
}

type capsuleRec struct {
	info     protocol.CapsuleInfo
	markdown string
}

// backend keeps a fake session: effective tokens grow with each turn and a
// compaction cuts them to a third, writing a capsule.
type backend struct {
	root    string
	notify  lsp.Notifier
	approve lsp.Approver
	wg      conc.WaitGroup

	mu        sync.Mutex // guards the fields below
	effective int
	auto      bool
	state     protocol.State
	entries   int
	turns     int
	resumed   bool // a session was resumed: soba.session.transcript pages its scripted conversation
	capsules  []capsuleRec
	last      *protocol.CompactionResult
	seq       int
}

func newBackend(_ context.Context, opts lsp.BackendOptions) (lsp.Backend, error) {
	b := &backend{root: opts.Root, notify: opts.Notifier, approve: opts.Approver, effective: 1200, auto: true, state: protocol.StateIdle, entries: 1}
	if err := os.MkdirAll(filepath.Join(b.root, ".soba", "sessions"), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(b.sessionPath(), []byte(`{"type":"session","id":"e1","parentId":null}`+"\n"), 0o644); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *backend) sessionPath() string {
	return filepath.Join(b.root, ".soba", "sessions", "s_scripted.jsonl")
}

func (b *backend) budgetLocked() protocol.Budget {
	return protocol.Budget{
		EffectiveTokens: b.effective, HardLimit: 48808, SoftLimit: 39046, ContextWindow: 65000,
		MaxOutputTokens: 8000, SafetyReserveTokens: 8192, Source: "estimated", AutoCompact: b.auto,
		Pending: []protocol.Trigger{}, State: b.state, LastCompaction: b.last,
	}
}

func (b *backend) publish() {
	b.mu.Lock()
	bud := b.budgetLocked()
	b.mu.Unlock()
	b.notify.Budget(bud)
}

func (b *backend) Prompt(_ context.Context, a protocol.PromptArgs) (protocol.PromptResult, error) {
	b.mu.Lock()
	b.turns++
	id := fmt.Sprintf("t%d", b.turns)
	b.mu.Unlock()
	b.wg.Go(func() {
		b.notify.Event(protocol.Event{TurnID: id, Type: "turn_start"})
		b.setState(protocol.StateGenerating)
		// "run: CMD" asks for approval of a bash call, as tools.approval
		// "ask" does, through window/showMessageRequest.
		if cmd, ok := strings.CutPrefix(a.Text, "run: "); ok {
			args, _ := json.Marshal(map[string]string{"command": cmd})
			b.notify.Event(protocol.Event{TurnID: id, Type: "tool_call", ID: "c1", Name: "bash", Arguments: args})
			decision, err := b.approve.Approve(context.Background(), lsp.ApprovalRequest{Tool: "bash", Summary: cmd, Scope: "bash commands"})
			names := map[lsp.Approval]string{lsp.Deny: "denied", lsp.AllowOnce: "allowed once", lsp.AllowSession: "allowed for session"}
			okv := err == nil && decision != lsp.Deny
			summary := names[decision]
			if err != nil {
				summary = err.Error()
			}
			b.notify.Event(protocol.Event{TurnID: id, Type: "tool_result", ID: "c1", OK: &okv, Summary: summary})
		}
		for _, w := range []string{"Summary: ", "the parser ", "keeps tokens."} {
			b.notify.Event(protocol.Event{TurnID: id, Type: "text", Delta: w})
			time.Sleep(10 * time.Millisecond)
		}
		b.mu.Lock()
		b.effective += len(a.Text)/4 + 40
		b.entries += 2
		b.state = protocol.StateIdle
		b.mu.Unlock()
		b.publish()
		b.notify.Event(protocol.Event{TurnID: id, Type: "turn_end", Outcome: "completed"})
	})
	return protocol.PromptResult{TurnID: id}, nil
}

func (b *backend) setState(s protocol.State) {
	b.mu.Lock()
	b.state = s
	b.mu.Unlock()
	b.publish()
}

func (b *backend) Cancel(context.Context) (protocol.CancelResult, error) {
	return protocol.CancelResult{What: protocol.CancelledNone}, nil
}

func (b *backend) Budget(context.Context) (protocol.Budget, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.budgetLocked(), nil
}

func (b *backend) newCapsule(trigger protocol.Trigger, title string) capsuleRec {
	b.seq++
	ck := fmt.Sprintf("ck_%06x", 0x8f2a00+b.seq)
	md := fmt.Sprintf("---\nformat: soba-capsule/1\ncheckpointId: %s\ntrigger: %s\ntitle: %s\n---\n\n"+
		"## Goal\nKeep the parser notes.\n\n## Constraints\n\n## Done\n\n## In progress\n\n## Pending\n\n"+
		"## Decisions\n\n## Blockers\n\n## Next steps\nWrite the lexer.\n\n## Notes\n", ck, trigger, title)
	c := capsuleRec{info: protocol.CapsuleInfo{CheckpointID: ck, Trigger: trigger, Title: title, Quality: "full",
		CreatedAt: time.Now().UTC()}, markdown: md}
	b.capsules = append(b.capsules, c)
	b.entries++
	return c
}

func (b *backend) Compact(ctx context.Context, a protocol.CompactArgs) (protocol.CompactionResult, error) {
	b.mu.Lock()
	b.seq++
	op := fmt.Sprintf("op_%d", b.seq)
	before := b.effective
	b.state = protocol.StateCompacting
	b.mu.Unlock()
	b.publish()
	b.notify.Compaction(protocol.CompactionEvent{Phase: "start", OperationID: op, Trigger: protocol.TriggerUser})
	for _, p := range []int{30, 82} {
		select {
		case <-ctx.Done():
			return protocol.CompactionResult{}, ctx.Err()
		case <-time.After(150 * time.Millisecond):
		}
		pct := p
		b.notify.Compaction(protocol.CompactionEvent{Phase: "progress", OperationID: op, Trigger: protocol.TriggerUser, Percentage: &pct})
	}
	b.mu.Lock()
	c := b.newCapsule(protocol.TriggerUser, "user compaction: "+a.Instructions)
	after := before / 3
	b.effective = after
	b.state = protocol.StateIdle
	r := protocol.CompactionResult{
		OperationID: op, Trigger: protocol.TriggerUser, Outcome: protocol.OutcomeCompleted,
		TokensBefore: before, TokensAfter: after, ReclaimedTokens: before - after,
		ReclaimedRatio: float64(before-after) / float64(before), CheckpointID: c.info.CheckpointID,
		Quality: "full", DurationMs: 300,
		Line: fmt.Sprintf("Compacted context · user · %d → %d tokens (%d%% reclaimed) · %s", before, after,
			(before-after)*100/before, c.info.CheckpointID),
	}
	b.last = &r
	b.mu.Unlock()
	b.notify.Compaction(protocol.CompactionEvent{Phase: "end", OperationID: op, Trigger: protocol.TriggerUser, CompactionResult: &r})
	b.notify.Log(r.Line)
	b.publish()
	return r, nil
}

func (b *backend) SetAutoCompact(_ context.Context, a protocol.AutoCompactArgs) (protocol.Budget, error) {
	b.mu.Lock()
	b.auto = a.Enabled
	bud := b.budgetLocked()
	b.mu.Unlock()
	b.notify.Budget(bud)
	return bud, nil
}

func (b *backend) Checkpoint(_ context.Context, a protocol.CheckpointArgs) (protocol.CheckpointResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	b.entries++
	return protocol.CheckpointResult{CheckpointID: fmt.Sprintf("ck_%06x", 0xc00000+b.seq)}, nil
}

func (b *backend) abs(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(b.root, p)
}

func (b *backend) CapsuleCreate(_ context.Context, a protocol.CapsuleCreateArgs) (protocol.CapsuleCreateResult, error) {
	b.mu.Lock()
	c := b.newCapsule("user", a.Title)
	b.mu.Unlock()
	dir := filepath.Join(b.root, ".soba", "capsules")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return protocol.CapsuleCreateResult{}, err
	}
	slug := strings.ToLower(strings.Join(strings.Fields(a.Title), "-"))
	p := filepath.Join(dir, c.info.CheckpointID+"-"+slug+".capsule.md")
	if err := os.WriteFile(p, []byte(c.markdown), 0o644); err != nil {
		return protocol.CapsuleCreateResult{}, err
	}
	return protocol.CapsuleCreateResult{CheckpointID: c.info.CheckpointID, Path: p}, nil
}

func (b *backend) find(ck string) (capsuleRec, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := len(b.capsules) - 1; i >= 0; i-- {
		if ck == "" || b.capsules[i].info.CheckpointID == ck {
			return b.capsules[i], nil
		}
	}
	return capsuleRec{}, fmt.Errorf("capsule %q not found on the leaf path", ck)
}

func (b *backend) CapsuleExport(_ context.Context, a protocol.CapsuleExportArgs) (protocol.CapsuleExportResult, error) {
	c, err := b.find(a.CheckpointID)
	if err != nil {
		return protocol.CapsuleExportResult{}, err
	}
	p := b.abs(a.Path)
	if _, err := os.Stat(p); err == nil && !a.Overwrite {
		return protocol.CapsuleExportResult{}, fmt.Errorf("export %s: %s already exists (set overwrite)", a.CheckpointID, p)
	}
	return protocol.CapsuleExportResult{Path: p}, os.WriteFile(p, []byte(c.markdown), 0o644)
}

func (b *backend) CapsuleLoad(_ context.Context, a protocol.CapsuleLoadArgs) (protocol.CapsuleLoadResult, error) {
	data, err := os.ReadFile(b.abs(a.Path))
	if err != nil {
		return protocol.CapsuleLoadResult{}, fmt.Errorf("load capsule: %w", err)
	}
	if !strings.HasPrefix(string(data), "---\n") {
		return protocol.CapsuleLoadResult{}, errors.New("load capsule " + a.Path + ": no front matter")
	}
	b.mu.Lock()
	c := b.newCapsule("capsule_load", "loaded")
	b.mu.Unlock()
	return protocol.CapsuleLoadResult{CheckpointID: c.info.CheckpointID, Title: "loaded", Warnings: []string{}}, nil
}

func (b *backend) CapsuleList(context.Context) ([]protocol.CapsuleInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]protocol.CapsuleInfo, 0, len(b.capsules))
	for _, c := range b.capsules {
		out = append(out, c.info)
	}
	return out, nil
}

func (b *backend) CapsuleShow(_ context.Context, a protocol.CapsuleShowArgs) (protocol.CapsuleShowResult, error) {
	c, err := b.find(a.CheckpointID)
	if err != nil {
		return protocol.CapsuleShowResult{}, err
	}
	return protocol.CapsuleShowResult{CheckpointID: c.info.CheckpointID, Markdown: c.markdown}, nil
}

func (b *backend) SessionInfo(context.Context) (protocol.SessionInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return protocol.SessionInfo{SessionID: "s_scripted", Path: b.sessionPath(), LeafID: "e1", Entries: b.entries,
		FlightPath: filepath.Join(b.root, ".soba", "flight", "s_scripted.jsonl")}, nil
}

func (b *backend) SessionList(context.Context) ([]protocol.SessionSummary, error) {
	return []protocol.SessionSummary{{SessionID: "s_scripted", Path: b.sessionPath(), UpdatedAt: time.Now().UTC(), Entries: 1}}, nil
}

func (b *backend) SessionNew(context.Context) (protocol.SessionNewResult, error) {
	return protocol.SessionNewResult{SessionID: "s_new", Path: b.sessionPath()}, nil
}

func (b *backend) SessionResume(_ context.Context, a protocol.SessionResumeArgs) (protocol.SessionResumeResult, error) {
	b.mu.Lock()
	b.resumed = true
	b.mu.Unlock()
	return protocol.SessionResumeResult{SessionID: a.SessionID, Path: b.sessionPath(), LeafID: "e1"}, nil
}

func (b *backend) SessionRewind(_ context.Context, a protocol.SessionRewindArgs) (protocol.SessionRewindResult, error) {
	return protocol.SessionRewindResult{LeafID: a.EntryID}, nil
}

func (b *backend) SessionHistory(context.Context) ([]protocol.HistoryPoint, error) {
	return []protocol.HistoryPoint{
		{EntryID: "e2", Kind: protocol.HistoryUser, Text: "fix the login bug", CreatedAt: time.Now().UTC().Add(-time.Hour), RewindTo: "e1",
			FilesModifiedAfter: []string{"auth/login.go"}},
		{EntryID: "e5", Kind: protocol.HistoryCheckpoint, Text: "milestone: tests pass", CreatedAt: time.Now().UTC(), RewindTo: "e5",
			FilesModifiedAfter: []string{}},
	}, nil
}

// SessionTranscript pages a scripted reopened session: the newest page holds
// a request with a tool call the user allowed, the answer in Markdown and
// the compaction marker before them; older pages hold earlier requests, the
// oldest "the first request".
func (b *backend) SessionTranscript(_ context.Context, a protocol.SessionTranscriptArgs) (protocol.SessionTranscript, error) {
	b.mu.Lock()
	resumed := b.resumed
	b.mu.Unlock()
	if !resumed {
		// The session the server starts with is new: nothing to show yet.
		return protocol.SessionTranscript{LeafID: "e0"}, nil
	}
	at := time.Now().UTC().Add(-time.Hour)
	ok := true
	item := func(id string, kind protocol.TranscriptKind, text string) protocol.TranscriptItem {
		return protocol.TranscriptItem{EntryID: id, Kind: kind, CreatedAt: at, Text: text}
	}
	switch a.Before {
	case "":
		tool := item("e21", protocol.KindTool, "")
		tool.Tool = &protocol.TranscriptTool{ID: "c1", Name: "write_file", Arguments: json.RawMessage(`{"path":"notes.md","content":"x\n"}`),
			OK: &ok, Summary: "wrote 1 line", Approval: protocol.ApprovalOnce, FilesModified: []string{"notes.md"}}
		marker := item("e20", protocol.KindCompaction, "Compacted")
		marker.Compaction = &protocol.TranscriptCompaction{CheckpointID: "ck_1", Trigger: protocol.TriggerUser, TokensBefore: 9000, TokensAfter: 1200, Quality: protocol.QualityFull}
		return protocol.SessionTranscript{LeafID: "e23", Before: "e20", Items: []protocol.TranscriptItem{
			marker, item("e21u", protocol.KindUser, "write the notes"), tool, item("e23", protocol.KindAssistant, "Wrote **notes.md**.")}}, nil
	case "e20":
		return protocol.SessionTranscript{LeafID: "e23", Before: "e10", Items: []protocol.TranscriptItem{
			item("e11", protocol.KindUser, "fix the login bug"), item("e12", protocol.KindAssistant, "Fixed `auth/login.go`.")}}, nil
	case "e10":
		return protocol.SessionTranscript{LeafID: "e23", Items: []protocol.TranscriptItem{
			item("e1", protocol.KindUser, "the first request"), item("e2", protocol.KindAssistant, "The first answer.")}}, nil
	}
	return protocol.SessionTranscript{}, fmt.Errorf("no entry %q on the session's current path; ask for the newest page (no `before`) and page back from there", a.Before)
}

func (b *backend) CancelCompaction(string) bool    { return false }
func (b *backend) Configure(json.RawMessage) error { return nil }
func (b *backend) DidOpen(string)                  {}
func (b *backend) DidChange(string, int32)         {}
func (b *backend) DidSave(string)                  {}
func (b *backend) DidClose(string)                 {}

func (b *backend) Close() error {
	b.wg.Wait()
	return nil
}
