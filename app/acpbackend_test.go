package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sourcegraph/conc"

	"github.com/soba-agent/soba-lsp/acp"
	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/compaction/tokens"
)

// acpClient is an ACP client of the Go SDK that records updates and answers
// permission requests with its decide function.
type acpClient struct {
	decide func(sdk.RequestPermissionRequest) string

	mu          sync.Mutex
	updates     []sdk.SessionNotification
	permissions []sdk.RequestPermissionRequest
}

func (c *acpClient) RequestPermission(_ context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.permissions = append(c.permissions, p)
	c.mu.Unlock()
	return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected(sdk.PermissionOptionId(c.decide(p)))}, nil
}

func (c *acpClient) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, n)
	c.mu.Unlock()
	return nil
}

var errNoClientFS = errors.New("this test client offers no file system or terminal")

func (c *acpClient) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, errNoClientFS
}
func (c *acpClient) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, errNoClientFS
}
func (c *acpClient) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, errNoClientFS
}
func (c *acpClient) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, errNoClientFS
}
func (c *acpClient) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, errNoClientFS
}
func (c *acpClient) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, errNoClientFS
}
func (c *acpClient) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, errNoClientFS
}

// runACP serves ACP in process with the real backend over pipes and returns
// a connected Go SDK client with a new session in a fresh workspace.
func runACP(t *testing.T, client *acpClient, script ...providertest.Reply) (*sdk.ClientSideConnection, sdk.SessionId, string) {
	t.Helper()
	return runACPModel(t, client, nil, script...)
}

// runACPModel is runACP with the fake model server adjusted by mod.
func runACPModel(t *testing.T, client *acpClient, mod func(*providertest.Server), script ...providertest.Reply) (*sdk.ClientSideConnection, sdk.SessionId, string) {
	t.Helper()
	return runACPServers(t, client, mod, nil, script...)
}

// runACPServers is runACPModel with MCP servers handed over in session/new.
func runACPServers(t *testing.T, client *acpClient, mod func(*providertest.Server), servers []sdk.McpServer, script ...providertest.Reply) (*sdk.ClientSideConnection, sdk.SessionId, string) {
	t.Helper()
	return runACPSettings(t, client, mod, servers, nil, script...)
}

// runACPSettings is runACPServers with the settings adjusted by adjust.
func runACPSettings(t *testing.T, client *acpClient, mod func(*providertest.Server), servers []sdk.McpServer, adjust func(*Settings), script ...providertest.Reply) (*sdk.ClientSideConnection, sdk.SessionId, string) {
	t.Helper()
	if servers == nil {
		servers = []sdk.McpServer{}
	}
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dir := t.TempDir()
	model := providertest.NewOpenAI(t, script...)
	if mod != nil {
		mod(model)
	}
	load := func(root string, init, change json.RawMessage) (Settings, []string, error) {
		s := Settings{Model: ModelSettings{Provider: "openai", BaseURL: model.URL, Name: "m", ContextWindow: 65000, MaxOutputTokens: 8000},
			Compaction: compaction.DefaultConfig(), Approval: "ask", SessionDir: filepath.Join(root, ".soba", "sessions")}
		if adjust != nil {
			adjust(&s)
		}
		return s, nil, nil
	}
	counter := tokens.Default()
	backend := &ACPBackend{Load: load, Counter: counter, EntryTokens: tokens.Estimator{Counter: counter}.EntryTokens}
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	var wg conc.WaitGroup
	wg.Go(func() {
		_ = acp.Serve(ctx, backend, toAgentR, toClientW, "test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	})
	t.Cleanup(func() {
		cancel()
		toAgentW.Close()
		toClientW.Close()
		wg.Wait()
	})
	conn := sdk.NewClientSideConnection(client, toAgentW, toClientR)
	if _, err := conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	s, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: dir, McpServers: servers})
	if err != nil {
		t.Fatal(err)
	}
	return conn, s.SessionId, dir
}

// TestACPRejectAlwaysStopsAsking_RW3: the permission request shows the whole
// command with its padding visible; "reject for this session" refuses that
// tool's later calls without asking, and nothing denied runs.
func TestACPRejectAlwaysStopsAsking_RW3(t *testing.T) {
	client := &acpClient{decide: func(sdk.RequestPermissionRequest) string { return "reject_always" }}
	conn, id, dir := runACP(t, client,
		providertest.Call("c1", "bash", map[string]any{"command": "touch a.txt   "}),
		providertest.Call("c2", "bash", map[string]any{"command": "touch b.txt"}),
		providertest.Text("I was not allowed."))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock("make two files")}})
	if err != nil || r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %v, %v", r.StopReason, err)
	}
	client.mu.Lock()
	defer client.mu.Unlock()
	if len(client.permissions) != 1 {
		t.Fatalf("%d permission requests, want 1 (the second call was rejected for the session)", len(client.permissions))
	}
	p := client.permissions[0]
	shown, _ := json.Marshal(p.ToolCall.Content)
	if p.ToolCall.ToolCallId != "c1" || !strings.Contains(string(shown), "touch a.txt ⟨3 trailing blank characters⟩") {
		t.Fatalf("the permission request shows %s for %s", shown, p.ToolCall.ToolCallId)
	}
	for _, f := range []string{"a.txt", "b.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Fatalf("%s exists although its command was rejected", f)
		}
	}
	var failed int
	for _, u := range client.updates {
		if u.Update.ToolCallUpdate != nil && u.Update.ToolCallUpdate.Status != nil && *u.Update.ToolCallUpdate.Status == sdk.ToolCallStatusFailed {
			failed++
		}
	}
	if failed != 2 {
		t.Fatalf("%d failed tool_call_updates, want 2", failed)
	}
}

// A prompt for a session that does not exist, and a relative cwd, are
// refused with invalid params; the server keeps serving.
func TestACPRefusesUnknownSessionAndRelativeCwd(t *testing.T) {
	client := &acpClient{decide: func(sdk.RequestPermissionRequest) string { return "allow_once" }}
	conn, id, _ := runACP(t, client, providertest.Text("fine"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: "s_nope", Prompt: []sdk.ContentBlock{sdk.TextBlock("hi")}}); err == nil || !strings.Contains(err.Error(), "Invalid params") {
		t.Fatalf("prompt of an unknown session: %v", err)
	}
	if _, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: "relative/dir", McpServers: []sdk.McpServer{}}); err == nil {
		t.Fatal("a relative cwd was accepted")
	}
	if r, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock("hi")}}); err != nil || r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("the server stopped serving: %v, %v", r.StopReason, err)
	}
}

// TestACPUsageUpdatesCoalesced_RO1: a turn whose budget changes with every
// tool result sends at most one usage_update per 100 ms (plus the last),
// and the last one carries the final budget.
func TestACPUsageUpdatesCoalesced_RO1(t *testing.T) {
	var script []providertest.Reply
	for i := range 40 {
		script = append(script, providertest.Call("r"+strconv.Itoa(i), "list_files", map[string]any{}))
	}
	script = append(script, providertest.Text("listed"))
	client := &acpClient{decide: func(sdk.RequestPermissionRequest) string { return "allow_once" }}
	conn, id, _ := runACP(t, client, script...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	if r, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock("list a lot")}}); err != nil || r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %v, %v", r.StopReason, err)
	}
	elapsed := time.Since(start)
	time.Sleep(300 * time.Millisecond) // a trailing update may follow the answer
	client.mu.Lock()
	var usages []sdk.SessionUsageUpdate
	for _, u := range client.updates {
		if u.Update.UsageUpdate != nil {
			usages = append(usages, *u.Update.UsageUpdate)
		}
	}
	client.mu.Unlock()
	limit := int(elapsed/(100*time.Millisecond)) + 3
	if len(usages) == 0 || len(usages) > limit {
		t.Fatalf("%d usage_updates in %s, want 1..%d", len(usages), elapsed, limit)
	}
	last := usages[len(usages)-1]
	if last.Size != 65000-8000-8192 || last.Used <= usages[0].Used {
		t.Fatalf("last usage_update %+v (first %+v): size must be the hard limit and used must have grown", last, usages[0])
	}
}

// A turn that reaches the agent's bound of model calls without a final
// answer stops with max_turn_requests, not an error.
func TestACPTooManyModelCallsIsMaxTurnRequests(t *testing.T) {
	client := &acpClient{decide: func(sdk.RequestPermissionRequest) string { return "allow_once" }}
	conn, id, _ := runACPModel(t, client, (*providertest.Server).RepeatLast, providertest.Call("r", "list_files", map[string]any{}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock("list forever")}})
	if err != nil || r.StopReason != sdk.StopReasonMaxTurnRequests {
		t.Fatalf("prompt: %q, %v; want max_turn_requests", r.StopReason, err)
	}
}

// A client may load a session this process has open (from its history):
// the open one is closed and the load replays it.
func TestACPLoadOfAnOpenSession_RT4(t *testing.T) {
	client := &acpClient{decide: func(sdk.RequestPermissionRequest) string { return "allow_once" }}
	conn, id, dir := runACP(t, client, providertest.Text("first answer"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock("remember me")}}); err != nil {
		t.Fatal(err)
	}
	client.mu.Lock()
	from := len(client.updates)
	client.mu.Unlock()
	if _, err := conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: id, Cwd: dir, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatalf("loading the open session: %v", err)
	}
	client.mu.Lock()
	defer client.mu.Unlock()
	var replayed string
	for _, u := range client.updates[from:] {
		if c := u.Update.UserMessageChunk; c != nil && c.Content.Text != nil {
			replayed += c.Content.Text.Text
		}
	}
	if replayed != "remember me" {
		t.Fatalf("replayed user messages %q", replayed)
	}
}

// TestACPReplayShowsWhatWasRecorded_RT4: a reopened session's replayed
// write_file and edit_file calls show what the transcript recorded (the
// written text; the replaced text and its replacement), never a diff
// against the disk as it is now, which holds a later state.
func TestACPReplayShowsWhatWasRecorded_RT4(t *testing.T) {
	client := &acpClient{decide: func(sdk.RequestPermissionRequest) string { return "allow_once" }}
	conn, id, dir := runACP(t, client,
		providertest.Call("w1", "write_file", map[string]any{"path": "notes.txt", "content": "alpha\nbeta\n"}),
		providertest.Call("e1", "edit_file", map[string]any{"path": "notes.txt", "old_text": "beta", "new_text": "gamma"}),
		providertest.Text("done"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock("write and edit")}}); err != nil {
		t.Fatal(err)
	}
	// The user changes the file afterwards.
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("rewritten by the user\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	client.mu.Lock()
	from := len(client.updates)
	client.mu.Unlock()
	if _, err := conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: id, Cwd: dir, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	client.mu.Lock()
	defer client.mu.Unlock()
	shown := map[string][]sdk.ToolCallContent{}
	for _, u := range client.updates[from:] {
		if c := u.Update.ToolCall; c != nil {
			shown[string(c.ToolCallId)] = c.Content
		}
	}
	w, e := shown["w1"], shown["e1"]
	if len(w) != 1 || w[0].Diff != nil || w[0].Content == nil || w[0].Content.Content.Text == nil ||
		!strings.Contains(w[0].Content.Content.Text.Text, "alpha\nbeta\n") {
		t.Errorf("the replayed write shows %+v, want its written text and no diff", w)
	}
	if len(e) != 1 || e[0].Diff == nil || e[0].Diff.OldText == nil || *e[0].Diff.OldText != "beta" || e[0].Diff.NewText != "gamma" {
		t.Errorf("the replayed edit shows %+v, want the diff beta → gamma", e)
	}
	for _, c := range append(w, e...) {
		if c.Diff != nil && (strings.Contains(c.Diff.NewText, "rewritten") || (c.Diff.OldText != nil && strings.Contains(*c.Diff.OldText, "rewritten"))) {
			t.Errorf("a replayed call shows the disk as it is now: %+v", c.Diff)
		}
	}
}

// The client sees the command and the whole output of a bash call.
func TestACPBashShowsCommandAndOutput(t *testing.T) {
	client := &acpClient{decide: func(sdk.RequestPermissionRequest) string { return "allow_once" }}
	conn, id, _ := runACP(t, client,
		providertest.Call("b1", "bash", map[string]any{"command": "printf 'first line\\nsecond line\\n'"}),
		providertest.Text("ran"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock("run it")}}); err != nil {
		t.Fatal(err)
	}
	client.mu.Lock()
	defer client.mu.Unlock()
	var call, result string
	for _, u := range client.updates {
		if tc := u.Update.ToolCall; tc != nil {
			b, _ := json.Marshal(tc.Content)
			call = string(b)
		}
		if tu := u.Update.ToolCallUpdate; tu != nil && tu.Status != nil && *tu.Status == sdk.ToolCallStatusCompleted {
			b, _ := json.Marshal(tu.Content)
			result = string(b)
		}
	}
	if !strings.Contains(call, `printf 'first line\\nsecond line\\n'`) {
		t.Errorf("tool_call content %s lacks the command", call)
	}
	if !strings.Contains(result, `first line\nsecond line`) {
		t.Errorf("tool_call_update content %s lacks the whole output", result)
	}
}

// TestACPApprovalScopes_RW3: an answer "for this session" covers a kind of
// tool or one MCP server, as the options say: allowing a write_file for the
// session also allows edit_file but still asks for bash; rejecting one tool
// of an MCP server for the session refuses its other tools without asking,
// while another server and SOBA's tools still ask. Nothing rejected runs.
func TestACPApprovalScopes_RW3(t *testing.T) {
	var calls atomic.Int32
	newServer := func(name string) string {
		s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
		for _, tool := range []string{"one", "two"} {
			mcp.AddTool(s, &mcp.Tool{Name: tool, Description: tool}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				calls.Add(1)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " " + tool + " ran"}}}, nil, nil
			})
		}
		srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	servers := []sdk.McpServer{
		{Http: &sdk.McpServerHttpInline{Name: "alpha", Type: "http", Url: newServer("alpha"), Headers: []sdk.HttpHeader{}}},
		{Http: &sdk.McpServerHttpInline{Name: "beta", Type: "http", Url: newServer("beta"), Headers: []sdk.HttpHeader{}}},
	}
	tests := []struct {
		name   string
		script []providertest.Reply
		// first is the answer to the first request; later ones are allow_once.
		first     string
		wantAsked []string // tool call ids asked about
		wantName  string   // the first request's allow_always or reject_always option name
		wantRuns  int32    // MCP tools that ran
	}{
		{"allow file edits for the session", []providertest.Reply{
			providertest.Call("c1", "write_file", map[string]any{"path": "a.txt", "content": "one\n"}),
			providertest.Call("c2", "edit_file", map[string]any{"path": "a.txt", "old_text": "one", "new_text": "two"}),
			providertest.Call("c3", "bash", map[string]any{"command": "cat a.txt"}),
			providertest.Text("done"),
		}, "allow_always", []string{"c1", "c3"}, "Allow file edits for this session", 0},
		{"reject an MCP server for the session", []providertest.Reply{
			providertest.Call("c1", "mcp__alpha__one", map[string]any{}),
			providertest.Call("c2", "mcp__alpha__two", map[string]any{}),
			providertest.Call("c3", "mcp__beta__one", map[string]any{}),
			providertest.Call("c4", "bash", map[string]any{"command": "true"}),
			providertest.Text("done"),
		}, "reject_always", []string{"c1", "c3", "c4"}, `Reject the tools of MCP server "alpha" for this session`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls.Store(0)
			asked := 0
			client := &acpClient{decide: func(sdk.RequestPermissionRequest) string {
				asked++
				if asked == 1 {
					return tt.first
				}
				return "allow_once"
			}}
			conn, id, dir := runACPServers(t, client, nil, servers, tt.script...)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			r, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock("go")}})
			if err != nil || r.StopReason != sdk.StopReasonEndTurn {
				t.Fatalf("prompt: %v, %v", r.StopReason, err)
			}
			client.mu.Lock()
			defer client.mu.Unlock()
			var got []string
			for _, p := range client.permissions {
				got = append(got, string(p.ToolCall.ToolCallId))
			}
			if strings.Join(got, ",") != strings.Join(tt.wantAsked, ",") {
				t.Fatalf("asked about %v, want %v", got, tt.wantAsked)
			}
			found := false
			for _, o := range client.permissions[0].Options {
				found = found || (string(o.OptionId) == tt.first && o.Name == tt.wantName)
			}
			if !found {
				t.Fatalf("options %+v, want %s named %q", client.permissions[0].Options, tt.first, tt.wantName)
			}
			if n := calls.Load(); n != tt.wantRuns {
				t.Fatalf("%d MCP tools ran, want %d", n, tt.wantRuns)
			}
			if tt.first == "allow_always" {
				if data, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(data) != "two\n" {
					t.Fatalf("a.txt = %q, %v; the allowed edit did not run", data, err)
				}
			}
		})
	}
}

// TestACPStartWarningsReachTheClient: an MCP server handed over in
// session/new that does not start is a warning the client sees (the
// session is made; the warning is not lost for lack of a session id).
func TestACPStartWarningsReachTheClient(t *testing.T) {
	client := &acpClient{decide: func(sdk.RequestPermissionRequest) string { return "allow_once" }}
	servers := []sdk.McpServer{{Stdio: &sdk.McpServerStdio{Name: "broken", Command: "/nonexistent/mcp-server", Args: []string{}, Env: []sdk.EnvVariable{}}}}
	_, id, _ := runACPServers(t, client, nil, servers, providertest.Text("fine"))
	deadline := time.Now().Add(5 * time.Second)
	for {
		client.mu.Lock()
		var text strings.Builder
		for _, u := range client.updates {
			if u.SessionId == id && u.Update.AgentMessageChunk != nil && u.Update.AgentMessageChunk.Content.Text != nil {
				text.WriteString(u.Update.AgentMessageChunk.Content.Text.Text)
			}
		}
		client.mu.Unlock()
		if strings.Contains(text.String(), `MCP server "broken" did not start`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no warning about the broken MCP server; the client saw %q", text.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestACPRecordedAutoApprovalRestoredOnlyWhenTrusted_RW5: a session's
// approval set from the editor is recorded, and a reopened session restores
// a recorded auto only when the workspace is trusted (its configuration
// could turn approvals off then); otherwise the configuration's ask
// stands: the session file lies in the workspace, where a repository could
// have put one.
func TestACPRecordedAutoApprovalRestoredOnlyWhenTrusted_RW5(t *testing.T) {
	for _, tc := range []struct {
		trusted bool
		want    string
	}{{false, "ask"}, {true, "auto"}} {
		t.Run(fmt.Sprintf("trusted=%v", tc.trusted), func(t *testing.T) {
			client := &acpClient{decide: func(sdk.RequestPermissionRequest) string { return "allow_once" }}
			conn, id, dir := runACPSettings(t, client, nil, nil, func(s *Settings) { s.WorkspaceTrusted = tc.trusted })
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			approval := func(opts []sdk.SessionConfigOption) string {
				for _, o := range opts {
					if o.Select != nil && o.Select.Id == acp.OptionApproval {
						return string(o.Select.CurrentValue)
					}
				}
				return ""
			}
			set, err := conn.SetSessionConfigOption(ctx, sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{
				SessionId: id, ConfigId: acp.OptionApproval, Value: "auto"}})
			if err != nil || approval(set.ConfigOptions) != "auto" {
				t.Fatalf("set approval auto: %v, %+v", err, set)
			}
			loaded, err := conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: id, Cwd: dir, McpServers: []sdk.McpServer{}})
			if err != nil {
				t.Fatal(err)
			}
			if got := approval(loaded.ConfigOptions); got != tc.want {
				t.Fatalf("the reopened session's approval is %q, want %q", got, tc.want)
			}
			if loaded.Modes == nil || string(loaded.Modes.CurrentModeId) != tc.want {
				t.Fatalf("modes after the reopen: %+v", loaded.Modes)
			}
		})
	}
}

// TestACPModelChoice_RS3: with the user's named `models`, the session offers
// `model` and `summary_model` selects (choices: the names, current: the
// active one); a change applies from the next turn (the next prompt reaches
// the chosen model's server, not the configured one's), is recorded as a
// settings entry, and a name not among the models is refused naming them.
func TestACPModelChoice_RS3(t *testing.T) {
	big := providertest.NewOpenAI(t, providertest.Text("from big"))
	client := &acpClient{decide: func(sdk.RequestPermissionRequest) string { return "allow_once" }}
	conn, id, dir := runACPSettings(t, client, nil, nil, func(s *Settings) {
		s.Models = map[string]ModelSettings{"small": s.Model,
			"big": {Provider: "openai", BaseURL: big.URL, Name: "big-model", ContextWindow: 65000, MaxOutputTokens: 8000}}
		s.ModelName = "small"
	}, providertest.Text("from small"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	current := func(opts []sdk.SessionConfigOption, id string) (string, []string) {
		for _, o := range opts {
			if o.Select != nil && string(o.Select.Id) == id {
				var names []string
				for _, c := range *o.Select.Options.Ungrouped {
					names = append(names, string(c.Value))
				}
				return string(o.Select.CurrentValue), names
			}
		}
		return "", nil
	}
	loaded, err := conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: id, Cwd: dir, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if v, names := current(loaded.ConfigOptions, acp.OptionModel); v != "small" || strings.Join(names, ",") != ModelFromSettings+",big,small" {
		t.Fatalf("model option = %q of %v, want small of [(settings) big small]", v, names)
	}
	if v, _ := current(loaded.ConfigOptions, acp.OptionSummaryModel); v != ModelFromSettings {
		t.Fatalf("summary_model option = %q, want %q", v, ModelFromSettings)
	}
	_, err = conn.SetSessionConfigOption(ctx, sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{
		SessionId: id, ConfigId: acp.OptionModel, Value: "huge"}})
	if err == nil || !strings.Contains(err.Error(), `is not a value of model; choose one of: (settings), big, small`) {
		t.Fatalf("set model huge: %v, want a refusal naming the models", err)
	}
	set, err := conn.SetSessionConfigOption(ctx, sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{
		SessionId: id, ConfigId: acp.OptionModel, Value: "big"}})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := current(set.ConfigOptions, acp.OptionModel); v != "big" {
		t.Fatalf("model after the change = %q, want big", v)
	}
	r, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock("hi")}})
	if err != nil || r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %v, %+v", err, r)
	}
	if n := len(big.Requests()); n != 1 {
		t.Fatalf("the chosen model's server got %d requests, want 1", n)
	}
	// The choice is in the transcript, for replay and resume.
	files, _ := filepath.Glob(filepath.Join(dir, ".soba", "sessions", "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("transcripts: %v", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"settings":{"model":"big"}`) {
		t.Fatalf("no settings entry recording the model choice in %s", data)
	}
}

// TestACPModelPickRestoredOnlyWhenTrusted_RW5: a model picked from the
// editor is a settings entry, and a reopened session (session/load) picks it
// again only when the workspace is trusted and the name is still among the
// user's `models`: a session file lies in the workspace, and until trusted
// a repository may not choose one of the user's models by writing one. When
// the pick does not apply, the configured model answers and a warning says
// why.
func TestACPModelPickRestoredOnlyWhenTrusted_RW5(t *testing.T) {
	for _, tc := range []struct {
		name            string
		trusted, remove bool
		want            string // the model option after the reopen
		warning         string // in the client's messages after the reopen
	}{
		{name: "trusted", trusted: true, want: "big"},
		{name: "not trusted", want: "small", warning: `its model "big", picked from the editor, is not applied: the workspace is not trusted`},
		{name: "trusted, name gone", trusted: true, remove: true, want: "small", warning: `its model "big", picked from the editor, is no longer one of the models`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			big := providertest.NewOpenAI(t, providertest.Text("from big"), providertest.Text("from big again"))
			removed := false
			client := &acpClient{decide: func(sdk.RequestPermissionRequest) string { return "allow_once" }}
			conn, id, dir := runACPSettings(t, client, nil, nil, func(s *Settings) {
				s.Models = map[string]ModelSettings{"small": s.Model}
				if !removed {
					s.Models["big"] = ModelSettings{Provider: "openai", BaseURL: big.URL, Name: "big-model", ContextWindow: 65000, MaxOutputTokens: 8000}
				}
				s.ModelName = "small"
				s.WorkspaceTrusted = tc.trusted
			}, providertest.Text("from small"), providertest.Text("from small again"))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			model := func(opts []sdk.SessionConfigOption) string {
				for _, o := range opts {
					if o.Select != nil && string(o.Select.Id) == acp.OptionModel {
						return string(o.Select.CurrentValue)
					}
				}
				return ""
			}
			if _, err := conn.SetSessionConfigOption(ctx, sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{
				SessionId: id, ConfigId: acp.OptionModel, Value: "big"}}); err != nil {
				t.Fatal(err)
			}
			removed = tc.remove
			loaded, err := conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: id, Cwd: dir, McpServers: []sdk.McpServer{}})
			if err != nil {
				t.Fatal(err)
			}
			if got := model(loaded.ConfigOptions); got != tc.want {
				t.Fatalf("model after the reopen = %q, want %q", got, tc.want)
			}
			r, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock("hi")}})
			if err != nil || r.StopReason != sdk.StopReasonEndTurn {
				t.Fatalf("prompt: %v, %+v", err, r)
			}
			if got, want := len(big.Requests()), map[bool]int{true: 1, false: 0}[tc.want == "big"]; got != want {
				t.Fatalf("the picked model's server got %d requests after the reopen, want %d", got, want)
			}
			client.mu.Lock()
			var text strings.Builder
			for _, u := range client.updates {
				if u.Update.AgentMessageChunk != nil && u.Update.AgentMessageChunk.Content.Text != nil {
					text.WriteString(u.Update.AgentMessageChunk.Content.Text.Text)
				}
			}
			client.mu.Unlock()
			if tc.warning != "" && !strings.Contains(text.String(), tc.warning) {
				t.Fatalf("no warning %q; the client saw %q", tc.warning, text.String())
			}
			if tc.warning == "" && strings.Contains(text.String(), "picked from the editor") {
				t.Fatalf("an unexpected warning: %q", text.String())
			}
		})
	}
}

// TestACPProtectedPathsAskedEveryTime_RW6: a write to a protected path
// (agent.AskPaths: a git hook, a VS Code task, a skill) is asked with its
// reason as the request's first content and only allow once and reject
// offered, and is asked again after an allow-always answer for file edits;
// an ordinary write still offers the four answers.
func TestACPProtectedPathsAskedEveryTime_RW6(t *testing.T) {
	client := &acpClient{decide: func(p sdk.RequestPermissionRequest) string {
		for _, o := range p.Options {
			if o.OptionId == "allow_always" {
				return "allow_always"
			}
		}
		return "allow_once"
	}}
	conn, id, dir := runACP(t, client,
		providertest.Call("c1", "write_file", map[string]any{"path": "a.txt", "content": "one\n"}),
		providertest.Call("c2", "write_file", map[string]any{"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}),
		providertest.Call("c3", "write_file", map[string]any{"path": ".vscode/tasks.json", "content": "{}\n"}),
		providertest.Call("c4", "write_file", map[string]any{"path": ".soba/skills/x/SKILL.md", "content": "be nice\n"}),
		providertest.Call("c5", "write_file", map[string]any{"path": "b.txt", "content": "two\n"}),
		providertest.Text("done"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock("write")}}); err != nil || r.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %v, %+v", err, r)
	}
	want := []struct {
		call, why string // why: "" for an ordinary write
	}{
		{"c2", "Asked every time: .git/hooks/pre-commit — git runs commands from it"},
		{"c3", "Asked every time: .vscode/tasks.json — VS Code runs commands from it"},
		{"c4", "Asked every time: .soba/skills/x/SKILL.md — a skill is instructions the model follows"},
	}
	client.mu.Lock()
	perms := slices.Clone(client.permissions)
	client.mu.Unlock()
	var asked []string
	for _, p := range perms {
		asked = append(asked, string(p.ToolCall.ToolCallId))
	}
	// c1 is allowed for the session (file edits), so b.txt is not asked;
	// every protected path is, each time.
	if strings.Join(asked, ",") != "c1,c2,c3,c4" {
		t.Fatalf("asked about %v, want c1 and each protected path", asked)
	}
	options := func(p sdk.RequestPermissionRequest) string {
		var ids []string
		for _, o := range p.Options {
			ids = append(ids, string(o.OptionId))
		}
		return strings.Join(ids, ",")
	}
	if got := options(perms[0]); got != "allow_once,allow_always,reject_once,reject_always" {
		t.Fatalf("an ordinary write offers %s", got)
	}
	for i, w := range want {
		p := perms[i+1]
		if got := options(p); got != "allow_once,reject_once" {
			t.Errorf("%s offers %s, want allow once and reject only", w.call, got)
		}
		if len(p.ToolCall.Content) == 0 || p.ToolCall.Content[0].Content == nil || p.ToolCall.Content[0].Content.Content.Text == nil ||
			!strings.HasPrefix(p.ToolCall.Content[0].Content.Content.Text.Text, w.why) {
			t.Errorf("%s: the request's first content is %+v, want the reason %q", w.call, p.ToolCall.Content, w.why)
		}
		if len(p.ToolCall.Content) < 2 || p.ToolCall.Content[1].Diff == nil {
			t.Errorf("%s: the diff no longer follows the reason: %+v", w.call, p.ToolCall.Content)
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, ".git", "hooks", "pre-commit")); err != nil || string(data) != "#!/bin/sh\n" {
		t.Fatalf("the hook allowed once was not written: %q, %v", data, err)
	}
}
