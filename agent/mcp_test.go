package agent

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
)

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

// mcpTestServer is an in-process MCP server of the official Go SDK over
// streamable HTTP with three tools: add, fail (an error result) and slow
// (waits for its context).
func mcpTestServer(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "adds a and b"}, func(_ context.Context, _ *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sum=" + strconv.Itoa(in.A+in.B)}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "always fails"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "it broke"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "never answers"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		// Until the client cancels; the bound only keeps a lost
		// cancellation from holding the test server's Close forever.
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(20 * time.Second):
			return nil, nil, errors.New("not cancelled within 20 s")
		}
	})
	type citeArgs struct {
		URIs []string `json:"uris"`
		Fail bool     `json:"fail,omitempty"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "cite", Description: "links the given URIs"}, func(_ context.Context, _ *mcp.CallToolRequest, in citeArgs) (*mcp.CallToolResult, any, error) {
		r := &mcp.CallToolResult{IsError: in.Fail}
		for i, u := range in.URIs {
			if i%2 == 0 {
				r.Content = append(r.Content, &mcp.ResourceLink{URI: u, Name: "f"})
			} else {
				r.Content = append(r.Content, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: u, Text: "contents"}})
			}
		}
		return r, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		// The client's standing GET stream may outlive its session: Close
		// waits for every request, so the connections are cut first.
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}

func connectTestMCP(t *testing.T, servers []MCPServer) (*MCP, []string) {
	t.Helper()
	var warns []string
	m := ConnectMCP(context.Background(), servers, t.TempDir(), func(w string) { warns = append(warns, w) })
	t.Cleanup(func() { m.Close() })
	return m, warns
}

// TestMCPToolsReachTheModelAndRun: the tools of a configured server reach the
// model as mcp__<server>__<tool>, a call runs and its result is recorded like
// any tool result; a server that fails to start is a warning, not a failure.
func TestMCPToolsReachTheModelAndRun(t *testing.T) {
	m, warns := connectTestMCP(t, []MCPServer{
		{Name: "calc", URL: mcpTestServer(t)},
		{Name: "broken", Command: "/nonexistent/mcp-server"},
	})
	if len(warns) != 1 || !strings.Contains(warns[0], `"broken"`) || !strings.Contains(warns[0], "did not start") {
		t.Fatalf("warnings = %q, want one naming the broken server", warns)
	}
	f := newFixture(t, func(o *Options) { o.MCP = m },
		providertest.Call("c1", "mcp__calc__add", map[string]any{"a": 2, "b": 40}),
		providertest.Call("c2", "mcp__calc__fail", map[string]any{}),
		providertest.Text("The sum is 42."))
	turn, _, _ := f.agent.Prompt("add 2 and 40")
	if end := f.rec.turnEnd(t, turn); end.Outcome != "completed" {
		t.Fatalf("turn %s: %s", end.Outcome, end.Error)
	}
	reqs := f.model.Requests()
	for _, want := range []string{"mcp__calc__add", "mcp__calc__fail", "mcp__calc__slow", "read_file"} {
		if !strings.Contains(strings.Join(reqs[0].Tools, " "), want) {
			t.Fatalf("the model was not offered %s: %v", want, reqs[0].Tools)
		}
	}
	var results []string
	for _, e := range f.entries(t) {
		if e.ToolResult != nil {
			results = append(results, e.ToolResult.ToolName+":"+boolWord(e.ToolResult.OK)+":"+e.ToolResult.Content)
		}
	}
	want := []string{"mcp__calc__add:ok:sum=42", "mcp__calc__fail:failed:it broke"}
	if strings.Join(results, "|") != strings.Join(want, "|") {
		t.Fatalf("recorded results = %q, want %q", results, want)
	}
}

func boolWord(ok bool) string {
	if ok {
		return "ok"
	}
	return "failed"
}

// TestMCPToolsAskForApproval_RW3: under tools.approval ask, an MCP tool asks
// like bash, and a denied call never reaches the server.
func TestMCPToolsAskForApproval_RW3(t *testing.T) {
	m, _ := connectTestMCP(t, []MCPServer{{Name: "calc", URL: mcpTestServer(t)}})
	asked := make(chan string, 4)
	f := newFixture(t, func(o *Options) {
		o.MCP = m
		o.Approval = "ask"
		o.Approver = approverFunc(func(tool, summary string) Approval { asked <- tool + " " + summary; return Deny })
	},
		providertest.Call("c1", "mcp__calc__add", map[string]any{"a": 1, "b": 1}),
		providertest.Text("Denied."))
	turn, _, _ := f.agent.Prompt("add")
	if end := f.rec.turnEnd(t, turn); end.Outcome != "completed" {
		t.Fatalf("turn %s: %s", end.Outcome, end.Error)
	}
	select {
	case q := <-asked:
		if !strings.HasPrefix(q, "mcp__calc__add ") || !strings.Contains(q, `"a":1`) {
			t.Fatalf("approval asked %q", q)
		}
	default:
		t.Fatal("an MCP tool ran without asking under tools.approval ask")
	}
	for _, e := range f.entries(t) {
		if e.ToolResult != nil && (e.ToolResult.OK || !strings.HasPrefix(e.ToolResult.Content, "denied")) {
			t.Fatalf("denied MCP call recorded as %+v", e.ToolResult)
		}
	}
}

type approverFunc func(tool, summary string) Approval

func (f approverFunc) Approve(_ context.Context, req ApprovalRequest) (Approval, error) {
	return f(req.Tool, req.Summary), nil
}

// TestMCPCallStopsOnCancel_RW4: cancelling the turn stops a running MCP call
// at once.
func TestMCPCallStopsOnCancel_RW4(t *testing.T) {
	m, _ := connectTestMCP(t, []MCPServer{{Name: "calc", URL: mcpTestServer(t)}})
	f := newFixture(t, func(o *Options) { o.MCP = m },
		providertest.Call("c1", "mcp__calc__slow", map[string]any{}),
		providertest.Text("never"))
	turn, _, _ := f.agent.Prompt("wait")
	f.rec.await(t, "the slow call", func(r *recorder) bool {
		for _, e := range r.events {
			if e.Type == "tool_call" && e.Name == "mcp__calc__slow" {
				return true
			}
		}
		return false
	})
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if _, _, err := f.agent.Cancel(); err != nil {
		t.Fatal(err)
	}
	end := f.rec.turnEnd(t, turn)
	if end.Outcome != "cancelled" {
		t.Fatalf("turn outcome %s, want cancelled", end.Outcome)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("cancel took %s", d)
	}
}

func TestMCPToolNameIsSafe(t *testing.T) {
	for _, c := range []struct{ server, tool, want string }{
		{"fs", "read_file", "mcp__fs__read_file"},
		{"my server", "do.it/now", "mcp__my_server__do_it_now"},
		{"x", strings.Repeat("t", 80), ("mcp__x__" + strings.Repeat("t", 80))[:64]},
	} {
		if got := MCPToolName(c.server, c.tool); got != c.want {
			t.Errorf("MCPToolName(%q, %q) = %q, want %q", c.server, c.tool, got, c.want)
		}
	}
}

// TestMCPServerApprovalOverridesToolsApproval_RW3: a server configured with
// approval auto runs without asking under tools.approval ask; one with ask
// asks under tools.approval auto.
func TestMCPServerApprovalOverridesToolsApproval_RW3(t *testing.T) {
	url := mcpTestServer(t)
	for _, c := range []struct {
		tools, server string
		wantAsked     bool
	}{
		{"ask", "auto", false},
		{"auto", "ask", true},
		{"ask", "", true},
		{"auto", "", false},
	} {
		m, _ := connectTestMCP(t, []MCPServer{{Name: "calc", URL: url, Approval: c.server}})
		asked := make(chan string, 4)
		f := newFixture(t, func(o *Options) {
			o.MCP = m
			o.Approval = c.tools
			o.Approver = approverFunc(func(tool, summary string) Approval { asked <- tool; return AllowOnce })
		},
			providertest.Call("c1", "mcp__calc__add", map[string]any{"a": 1, "b": 2}),
			providertest.Text("3"))
		turn, _, _ := f.agent.Prompt("add")
		if end := f.rec.turnEnd(t, turn); end.Outcome != "completed" {
			t.Fatalf("turn %s: %s", end.Outcome, end.Error)
		}
		if got := len(asked) > 0; got != c.wantAsked {
			t.Errorf("tools.approval %s, server approval %q: asked = %v, want %v", c.tools, c.server, got, c.wantAsked)
		}
		var ran bool
		for _, e := range f.entries(t) {
			if e.ToolResult != nil && e.ToolResult.Content == "sum=3" {
				ran = true
			}
		}
		if !ran {
			t.Errorf("tools.approval %s, server approval %q: the allowed call did not run", c.tools, c.server)
		}
	}
}

// TestMCPResultNamingFilesRecordsFilesRead_RC2: files of the workspace that
// a successful MCP result links or embeds are recorded as files read; files
// outside the workspace and a failed result's files are not (R-C6).
func TestMCPResultNamingFilesRecordsFilesRead_RC2(t *testing.T) {
	m, _ := connectTestMCP(t, []MCPServer{{Name: "calc", URL: mcpTestServer(t)}})
	f := newFixture(t, func(o *Options) { o.MCP = m })
	for _, name := range []string{"notes.md", "src/a.go", "failed.md"} {
		p := filepath.Join(f.dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := func(rel string) string { return "file://" + filepath.ToSlash(filepath.Join(f.dir, rel)) }
	f.model.Add(
		providertest.Call("c1", "mcp__calc__cite", map[string]any{"uris": []string{file("notes.md"), file("src/a.go"), "file:///etc/passwd", "https://example.com/x"}}),
		providertest.Call("c2", "mcp__calc__cite", map[string]any{"uris": []string{file("failed.md")}, "fail": true}),
		providertest.Text("cited"))
	turn, _, _ := f.agent.Prompt("cite")
	if end := f.rec.turnEnd(t, turn); end.Outcome != "completed" {
		t.Fatalf("turn %s: %s", end.Outcome, end.Error)
	}
	var got [][]string
	for _, e := range f.entries(t) {
		if e.ToolResult != nil {
			var read []string
			if e.ToolResult.Artifacts != nil {
				read = e.ToolResult.Artifacts.FilesRead
			}
			got = append(got, read)
		}
	}
	if len(got) != 2 || strings.Join(got[0], ",") != "notes.md,src/a.go" || len(got[1]) != 0 {
		t.Fatalf("files read recorded: %q, want [notes.md src/a.go] and nothing for the failed result", got)
	}
}
