package app

import (
	"context"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/compaction/tokens"
	"github.com/soba-agent/soba-lsp/lsp"
	"github.com/soba-agent/soba-lsp/lsp/lsptest"
	"github.com/soba-agent/soba-lsp/lsp/protocol"
	"github.com/soba-agent/soba-lsp/session"
)

// agentEnv is the real server with the real agent backend, a fake editor,
// and a fake model server speaking the OpenAI wire format.
type agentEnv struct {
	*lsptest.Editor
	dir     string
	model   *providertest.Server
	summary *providertest.Server
}

// smallSettings make a few kilobytes of history meaningful: hard limit
// 10000, soft 8000, keep 1500.
func smallSettings(dir, modelURL, summaryURL string) Settings {
	c := compaction.DefaultConfig()
	c.ContextWindow, c.MaxOutputTokens, c.SafetyReserveTokens = 12000, 1000, 1000
	c.KeepRecentTokens, c.MinTokensForAutoCompact, c.MinReclaimableTokens = 1500, 3000, 1000
	s := Settings{Model: ModelSettings{Provider: "openai", BaseURL: modelURL, Name: "m", ContextWindow: 12000, MaxOutputTokens: 1000},
		Compaction: c, Approval: "auto", SessionDir: filepath.Join(dir, ".soba", "sessions")}
	if summaryURL != "" {
		s.SummaryModel = &ModelSettings{Provider: "openai", BaseURL: summaryURL, Name: "s", ContextWindow: 12000, MaxOutputTokens: 1000}
	}
	return s
}

// serveLSP serves the real LSP server over the backends that load's settings
// make, on srvEnd, and returns the fake editor on edEnd; both stop with the
// test.
func serveLSP(t *testing.T, load SettingsLoader, srvEnd, edEnd net.Conn) *lsptest.Editor {
	t.Helper()
	counter := tokens.Default()
	factory := LSPBackendFactory(load, counter, tokens.Estimator{Counter: counter}.EntryTokens)
	ctx, cancel := context.WithCancel(context.Background())
	s := lsp.NewServer(factory, lsp.WithVersion("test"), lsp.WithBudgetInterval(20*time.Millisecond))
	e := lsptest.NewEditor(t, edEnd)
	var wg conc.WaitGroup
	wg.Go(func() { s.Serve(ctx, srvEnd) })
	t.Cleanup(func() {
		cancel()
		e.Close()
		_ = srvEnd.Close()
		wg.Wait()
	})
	return e
}

func runAgentServer(t *testing.T, mod func(*Settings), script []providertest.Reply, summaries []providertest.Reply) *agentEnv {
	t.Helper()
	dir := t.TempDir()
	model := providertest.NewOpenAI(t, script...)
	var summary *providertest.Server
	summaryURL := ""
	if summaries != nil {
		summary = providertest.NewOpenAI(t, summaries...)
		summaryURL = summary.URL
	}
	load := func(root string, init, change json.RawMessage) (Settings, []string, error) {
		s := smallSettings(dir, model.URL, summaryURL)
		if mod != nil {
			mod(&s)
		}
		return s, nil, nil
	}
	srvEnd, edEnd := net.Pipe()
	e := &agentEnv{Editor: serveLSP(t, load, srvEnd, edEnd), dir: dir, model: model, summary: summary}
	var result map[string]any
	params := map[string]any{"processId": nil, "rootUri": (&url.URL{Scheme: "file", Path: dir}).String(),
		"capabilities": map[string]any{"window": map[string]any{"workDoneProgress": true}}}
	if err := e.Call(lsp.MethodInitialize, params, &result); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	e.Notify(lsp.MethodInitialized, map[string]any{})
	return e
}

func eventsOf(s lsptest.State, typ string) []protocol.Event {
	var out []protocol.Event
	for _, n := range lsptest.Of(s.Notes, lsp.MethodEvent) {
		var ev protocol.Event
		_ = json.Unmarshal(n.Params, &ev)
		if typ == "" || string(ev.Type) == typ {
			out = append(out, ev)
		}
	}
	return out
}

func (e *agentEnv) prompt(t *testing.T, text string) protocol.Event {
	t.Helper()
	var r protocol.PromptResult
	if err := e.Command(protocol.CommandPrompt, map[string]any{"text": text}, &r); err != nil {
		t.Fatalf("soba.prompt: %v", err)
	}
	var end protocol.Event
	e.Await(func(s lsptest.State) bool {
		for _, ev := range eventsOf(s, "turn_end") {
			if ev.TurnID == r.TurnID {
				end = ev
				return true
			}
		}
		return false
	}, 20*time.Second)
	return end
}

func TestAgentBackendFullTurnWithTools(t *testing.T) {
	e := runAgentServer(t, nil, []providertest.Reply{
		providertest.Call("c1", "write_file", map[string]any{"path": "notes.txt", "content": "hello"}),
		providertest.Call("c2", "read_file", map[string]any{"path": "notes.txt"}),
		providertest.Text("Wrote and read notes.txt."),
	}, nil)
	end := e.prompt(t, "write notes.txt then read it")
	if end.Outcome != "completed" {
		t.Fatalf("turn %s: %s", end.Outcome, end.Error)
	}
	s := e.Snapshot()
	calls, results, texts := eventsOf(s, "tool_call"), eventsOf(s, "tool_result"), eventsOf(s, "text")
	if len(calls) != 2 || calls[0].Name != "write_file" || len(results) != 2 || !*results[1].OK || len(texts) == 0 {
		t.Fatalf("events: %d calls, %d results, %d texts", len(calls), len(results), len(texts))
	}
	// The editor's file lists come from the results, never the calls (R-C6).
	if !slices.Equal(results[0].FilesModified, []string{"notes.txt"}) || !slices.Equal(results[1].FilesRead, []string{"notes.txt"}) ||
		len(results[0].FilesRead)+len(results[1].FilesModified) != 0 {
		t.Fatalf("tool_result files: %+v / %+v", results[0], results[1])
	}
	if b, _ := os.ReadFile(filepath.Join(e.dir, "notes.txt")); string(b) != "hello" {
		t.Fatalf("notes.txt = %q", b)
	}
	var info protocol.SessionInfo
	if err := e.Command(protocol.CommandSessionInfo, nil, &info); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(info.Path)
	if n := strings.Count(string(data), `"type":"tool_result"`); n != 2 {
		t.Fatalf("%d tool results in the transcript", n)
	}
}

// progressWords is a compaction's progress message.
var progressWords = regexp.MustCompile(`^(waiting for the summary model|summarizing · [0-9,]+ tokens?|building the capsule) · [0-9]+ s$`)

var filler = strings.Repeat("The quick brown fox jumps over the lazy dog. ", 60)

func TestAgentBackendAutoCompactionShowsProgress_RB3(t *testing.T) {
	var script []providertest.Reply
	for i := 0; i < 14; i++ {
		script = append(script, providertest.Text("answer "+filler))
	}
	e := runAgentServer(t, nil, script, []providertest.Reply{providertest.Text("## Goal\nanswer the questions\n## Done\n- answered\n")})
	e.summary.RepeatLast()
	for i := 0; i < 14; i++ {
		e.prompt(t, "question "+filler)
	}
	s := e.Snapshot()
	var begin, end map[string]any
	reports := 0
	for _, p := range lsptest.Of(s.Notes, lsp.MethodProgress) {
		var pp struct {
			Value map[string]any `json:"value"`
		}
		_ = json.Unmarshal(p.Params, &pp)
		switch pp.Value["kind"] {
		case "begin":
			begin = pp.Value
		case "report":
			// One summary request: what it waits for, never an invented percentage.
			msg, _ := pp.Value["message"].(string)
			if _, pct := pp.Value["percentage"]; !pct && progressWords.MatchString(msg) {
				reports++
			}
		case "end":
			end = pp.Value
		}
	}
	if reports == 0 {
		t.Fatal("no $/progress report saying what the barrier waits for")
	}
	if begin == nil || begin["title"] != "Compacting context before response" || begin["cancellable"] != true {
		t.Fatalf("progress begin %v", begin)
	}
	if end == nil || !strings.HasPrefix(end["message"].(string), "Compaction") && !strings.HasPrefix(end["message"].(string), "Compacted context · ") {
		t.Fatalf("progress end %v", end)
	}
	if len(lsptest.Of(s.Requests, lsp.MethodWorkDoneCreate)) == 0 {
		t.Fatal("no window/workDoneProgress/create")
	}
	logged := false
	for _, m := range lsptest.Of(s.Notes, lsp.MethodLogMessage) {
		if strings.Contains(string(m.Params), "Compacted context · ") {
			logged = true
		}
	}
	if !logged {
		t.Fatal("the result line was not logged")
	}
	var b protocol.Budget
	if err := e.Command(protocol.CommandBudget, nil, &b); err != nil || b.LastCompaction == nil {
		t.Fatalf("budget %+v %v", b, err)
	}
}

func TestAgentBackendCancelDuringBarrier_RF2(t *testing.T) {
	var script []providertest.Reply
	for i := 0; i < 6; i++ {
		script = append(script, providertest.Text("answer "+filler))
	}
	slow := providertest.Text("## Goal\nlate\n")
	slow.Delay = 10 * time.Second
	e := runAgentServer(t, func(s *Settings) { s.Compaction.Auto = false }, script, []providertest.Reply{slow})
	for i := 0; i < 6; i++ {
		e.prompt(t, "q "+filler)
	}
	ch, _ := e.Go(lsp.MethodExecuteCommand, map[string]any{"command": protocol.CommandCompact, "arguments": []any{map[string]any{}}})
	e.Await(func(s lsptest.State) bool { return len(lsptest.Of(s.Notes, lsp.MethodCompaction)) > 0 }, 10*time.Second)
	var c protocol.CancelResult
	if err := e.Command(protocol.CommandCancel, nil, &c); err != nil || !c.Cancelled || c.What != "compaction" {
		t.Fatalf("cancel %+v %v", c, err)
	}
	var r protocol.CompactionResult
	if err := e.Wait(protocol.CommandCompact, ch, &r); err != nil {
		t.Fatal(err)
	}
	if r.Outcome != compaction.OutcomeCancelled {
		t.Fatalf("outcome %s", r.Outcome)
	}
	var info protocol.SessionInfo
	e.Command(protocol.CommandSessionInfo, nil, &info)
	data, _ := os.ReadFile(info.Path)
	if strings.Contains(string(data), `"type":"capsule"`) {
		t.Fatal("a cancelled compaction appended a capsule")
	}
	_ = session.TypeCapsule
}

// TestAgentBackendCancelSecondCompactOnly: two soba.compact requests wait on
// one compaction; $/cancelRequest for the second answers it cancelled, and
// the compaction the first started completes and answers the first.
func TestAgentBackendCancelSecondCompactOnly(t *testing.T) {
	var script []providertest.Reply
	for i := 0; i < 6; i++ {
		script = append(script, providertest.Text("answer "+filler))
	}
	slow := providertest.Text("## Goal\nkeep going\n## Done\n- things\n")
	slow.Delay = 800 * time.Millisecond // the history is summarised in two parts
	e := runAgentServer(t, func(s *Settings) { s.Compaction.Auto = false }, script, []providertest.Reply{slow, slow})
	for i := 0; i < 6; i++ {
		e.prompt(t, "q "+filler)
	}
	first, _ := e.Go(lsp.MethodExecuteCommand, map[string]any{"command": protocol.CommandCompact, "arguments": []any{map[string]any{}}})
	e.Await(func(s lsptest.State) bool { return len(lsptest.Of(s.Notes, lsp.MethodCompaction)) > 0 }, 10*time.Second)
	second, id := e.Go(lsp.MethodExecuteCommand, map[string]any{"command": protocol.CommandCompact, "arguments": []any{map[string]any{}}})
	e.Notify(lsp.MethodCancelRequest, map[string]any{"id": id})
	var r2 protocol.CompactionResult
	if err := e.Wait(protocol.CommandCompact, second, &r2); err != nil {
		t.Fatal(err)
	}
	if r2.Outcome != compaction.OutcomeCancelled {
		t.Fatalf("the cancelled second request answered %s", r2.Outcome)
	}
	var r1 protocol.CompactionResult
	if err := e.Wait(protocol.CommandCompact, first, &r1); err != nil {
		t.Fatal(err)
	}
	if r1.Outcome != compaction.OutcomeCompleted {
		t.Fatalf("the first request answered %s (%s), want completed", r1.Outcome, r1.Reason)
	}
	var info protocol.SessionInfo
	e.Command(protocol.CommandSessionInfo, nil, &info)
	data, _ := os.ReadFile(info.Path)
	if strings.Count(string(data), `"type":"capsule"`) != 1 {
		t.Fatal("the first request's compaction appended no capsule")
	}
}

func TestAgentBackendBudgetWhileStreaming(t *testing.T) {
	slow := providertest.Text(strings.Repeat("word ", 400))
	slow.ChunkDelay = 5 * time.Millisecond
	e := runAgentServer(t, nil, []providertest.Reply{slow}, nil)
	var r protocol.PromptResult
	if err := e.Command(protocol.CommandPrompt, map[string]any{"text": "talk"}, &r); err != nil {
		t.Fatal(err)
	}
	e.Await(func(s lsptest.State) bool { return len(eventsOf(s, "text")) > 2 }, 10*time.Second)
	start := time.Now()
	var b protocol.Budget
	if err := e.Command(protocol.CommandBudget, nil, &b); err != nil {
		t.Fatal(err)
	}
	if b.State != compaction.StateGenerating {
		t.Fatalf("state %s while streaming", b.State)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("soba.budget took %v while a turn streamed", d)
	}
}

func TestAgentBackendSettingsChangeAppliesToSession(t *testing.T) {
	e := runAgentServer(t, func(s *Settings) {}, []providertest.Reply{providertest.Text("hi")}, nil)
	var before protocol.Budget
	e.Command(protocol.CommandBudget, nil, &before)
	var info1 protocol.SessionInfo
	e.Command(protocol.CommandSessionInfo, nil, &info1)
	e.Notify("workspace/didChangeConfiguration", map[string]any{"settings": map[string]any{"soba": map[string]any{}}})
	e.prompt(t, "hello")
	var info2 protocol.SessionInfo
	e.Command(protocol.CommandSessionInfo, nil, &info2)
	if info2.Path != info1.Path {
		t.Fatalf("a settings change moved the session: %s → %s", info1.Path, info2.Path)
	}
	if info2.Entries <= info1.Entries {
		t.Fatal("the session did not go on after the settings change")
	}
}

// TestAgentBackendEditorDocumentsInCapsule_RC2: what the editor's document
// sync reports reaches the capsule's artifacts through the real backend: a
// document opened is read, one edited is modified (R-C2).
func TestAgentBackendEditorDocumentsInCapsule_RC2(t *testing.T) {
	var script []providertest.Reply
	for range 3 {
		script = append(script, providertest.Text("answer "+filler))
	}
	// The summary model defaults to the model: the compaction's summary.
	script = append(script, providertest.Text("## Goal\nWork on package x.\n"))
	e := runAgentServer(t, func(s *Settings) { s.Compaction.Auto = false }, script, nil)
	for _, name := range []string{"opened.go", "edited.go"} {
		if err := os.WriteFile(filepath.Join(e.dir, name), []byte("package x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	uri := func(name string) string { return (&url.URL{Scheme: "file", Path: filepath.Join(e.dir, name)}).String() }
	e.Notify(lsp.MethodDidOpen, map[string]any{"textDocument": map[string]any{"uri": uri("opened.go"), "languageId": "go", "version": 1, "text": "package x\n"}})
	e.Notify(lsp.MethodDidOpen, map[string]any{"textDocument": map[string]any{"uri": uri("edited.go"), "languageId": "go", "version": 1, "text": "package x\n"}})
	e.Notify(lsp.MethodDidChange, map[string]any{"textDocument": map[string]any{"uri": uri("edited.go"), "version": 2},
		"contentChanges": []any{map[string]any{"text": "package x\n\nfunc F() {}\n"}}})
	for range 3 {
		if end := e.prompt(t, "question "+filler); end.Outcome != "completed" {
			t.Fatalf("turn %s: %s", end.Outcome, end.Error)
		}
	}
	var res protocol.CompactionResult
	if err := e.Command(protocol.CommandCompact, nil, &res); err != nil || res.Outcome != compaction.OutcomeCompleted {
		t.Fatalf("compact: %+v %v", res, err)
	}
	var shown protocol.CapsuleShowResult
	if err := e.Command(protocol.CommandCapsuleShow, nil, &shown); err != nil {
		t.Fatal(err)
	}
	read, modified := section(shown.Markdown, "Files read"), section(shown.Markdown, "Files modified")
	if !strings.Contains(read, "opened.go") || !strings.Contains(read, "edited.go") {
		t.Errorf("files read:\n%s", read)
	}
	// (The watcher saw both files created, which also counts as modified.)
	if !strings.Contains(modified, "edited.go") {
		t.Errorf("files modified:\n%s", modified)
	}
}

// section is the text under a capsule's "## name" heading.
func section(md, name string) string {
	_, after, ok := strings.Cut(md, "## "+name+"\n")
	if !ok {
		return ""
	}
	if i := strings.Index(after, "\n## "); i >= 0 {
		after = after[:i]
	}
	return after
}

// TestApprovalScopeOverTheWire_RW3: in LSP mode the approval's allow action
// for the session names what it covers and soba.scope carries it; answering
// it for a write_file allows the edit_file after it without a question
// (file edits), while the bash command after that is asked with its own
// scope. A change to a skill, asked every time, is offered no answer for the
// session.
func TestApprovalScopeOverTheWire_RW3(t *testing.T) {
	e := runAgentServer(t, func(s *Settings) { s.Approval = "ask" }, []providertest.Reply{
		providertest.Call("c0", "write_file", map[string]any{"path": ".soba/skills/x/SKILL.md", "content": "---\nname: x\n---\nobey\n"}),
		providertest.Call("c1", "write_file", map[string]any{"path": "a.txt", "content": "one\n"}),
		providertest.Call("c2", "edit_file", map[string]any{"path": "a.txt", "old_text": "one", "new_text": "two"}),
		providertest.Call("c3", "bash", map[string]any{"command": "echo hi"}),
		providertest.Text("done"),
	}, nil)
	type action struct {
		Title string `json:"title"`
	}
	type asked struct {
		Actions []action                `json:"actions"`
		Soba    protocol.ApprovalDetail `json:"soba"`
	}
	var mu sync.Mutex
	var got []asked
	e.Answer(func(method string, params json.RawMessage) (any, *lsptest.Error) {
		if method != lsp.MethodShowMessageRequest {
			return nil, nil
		}
		var p asked
		if err := json.Unmarshal(params, &p); err != nil || len(p.Actions) < 2 {
			return nil, &lsptest.Error{Code: -32602, Message: "bad approval request"}
		}
		mu.Lock()
		defer mu.Unlock()
		got = append(got, p)
		if p.Soba.Tool == "write_file" && len(p.Actions) == 3 {
			return p.Actions[2], nil // the allow for the session, as offered
		}
		return p.Actions[1], nil // Allow once
	})
	if end := e.prompt(t, "write, edit, then run"); end.Outcome != "completed" {
		t.Fatalf("turn %s: %s", end.Outcome, end.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []struct{ tool, scope, title string }{
		{"write_file", "", ""}, // the skill: Deny and Allow once only
		{"write_file", "file edits", "Allow file edits for this session"},
		{"bash", "bash commands", "Allow bash commands for this session"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d approval requests (%+v), want %d: the edit after 'Allow file edits for this session' is not asked", len(got), got, len(want))
	}
	for i, w := range want {
		var titles []string
		for _, a := range got[i].Actions {
			titles = append(titles, a.Title)
		}
		wantTitles := []string{lsp.ActionDeny, lsp.ActionAllowOnce}
		if w.title != "" {
			wantTitles = append(wantTitles, w.title)
		}
		if got[i].Soba.Tool != w.tool || got[i].Soba.Scope != w.scope || !slices.Equal(titles, wantTitles) {
			t.Errorf("request %d = %+v, want tool %s, scope %q, actions %q", i, got[i], w.tool, w.scope, wantTitles)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(e.dir, "a.txt")); string(b) != "two\n" {
		t.Errorf("a.txt = %q, want the write and the edit applied", b)
	}
	for _, r := range eventsOf(e.Snapshot(), "tool_result") {
		if r.OK == nil || !*r.OK {
			t.Errorf("tool_result %s failed: %s", r.ID, r.Summary)
		}
	}
}
