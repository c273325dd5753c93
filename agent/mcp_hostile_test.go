package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary doubles as a stdio MCP server when SOBA_FAKE_MCP names a
// behaviour, so the hostile servers are real processes speaking (or not
// speaking) MCP on their stdin and stdout.
func TestMain(m *testing.M) {
	if mode := os.Getenv("SOBA_FAKE_MCP"); mode != "" {
		runFakeMCP(mode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runFakeMCP(mode string) {
	if f := os.Getenv("SOBA_FAKE_MCP_PIDFILE"); f != "" {
		_ = os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o644)
	}
	switch mode {
	case "silent": // reads everything, answers nothing, ignores SIGTERM and stdin's end
		signal.Ignore(syscall.SIGTERM)
		fmt.Fprintln(os.Stderr, "starting up, slowly")
		go func() { _, _ = bufio.NewReader(os.Stdin).WriteTo(discard{}) }()
		select {}
	case "no-tools": // answers initialize, never tools/list
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					ProtocolVersion string `json:"protocolVersion"`
				} `json:"params"`
			}
			if json.Unmarshal(sc.Bytes(), &req) != nil || len(req.ID) == 0 {
				continue
			}
			switch req.Method {
			case "initialize":
				fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}}`+"\n", req.ID, req.Params.ProtocolVersion)
			case "tools/list":
				// never answered
			default:
				fmt.Printf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`+"\n", req.ID)
			}
		}
		select {}
	case "garbage": // writes what is not JSON-RPC
		for i := 0; i < 1000; i++ {
			fmt.Println("this is not json \x00\x01")
		}
		select {}
	case "crash": // a real server whose crash tool kills it
		s := mcp.NewServer(&mcp.Implementation{Name: "crashy", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "the server's process id"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pid=" + strconv.Itoa(os.Getpid())}}}, nil, nil
		})
		mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "exits at once"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "panic: fake crash")
			os.Exit(2)
			return nil, nil, nil
		})
		_ = s.Run(context.Background(), &mcp.StdioTransport{})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func fakeMCPServer(t *testing.T, name, mode string) (MCPServer, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	return MCPServer{Name: name, Command: exe, Args: []string{"-test.run=^$"},
		Env: map[string]string{"SOBA_FAKE_MCP": mode, "SOBA_FAKE_MCP_PIDFILE": pidFile}}, pidFile
}

// TestMCPStartIsBounded_RW4: a server that never answers initialize, one
// that never lists its tools and one that writes garbage are each a
// warning after the startup timeout, never a hung session; the process is
// stopped (killed when it ignores stdin's end and SIGTERM), and a good
// server beside them works.
func TestMCPStartIsBounded_RW4(t *testing.T) {
	tests := []struct {
		mode, want string
	}{
		{"silent", `no answer to initialize within 3s (its last stderr line: "starting up, slowly")`},
		{"no-tools", "no answer to tools/list within 3s"},
		{"garbage", ""},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			bad, pidFile := fakeMCPServer(t, "bad", tt.mode)
			// Long enough for the fake to answer initialize on a loaded
			// machine (two race-enabled CI runs at once), so that "no-tools"
			// fails at tools/list.
			bad.StartupTimeout = 3 * time.Second
			good, _ := fakeMCPServer(t, "good", "crash")
			start := time.Now()
			m, warns := connectTestMCP(t, []MCPServer{bad, good})
			if d := time.Since(start); d > bad.StartupTimeout+4*time.Second {
				t.Fatalf("connecting took %s", d)
			}
			if len(warns) != 1 || !strings.Contains(warns[0], `MCP server "bad" did not start`) || !strings.Contains(warns[0], tt.want) {
				t.Fatalf("warnings %q, want one about the bad server saying %q", warns, tt.want)
			}
			if specs := m.Specs(); len(specs) != 2 || specs[0].Name != "mcp__good__crash" || specs[1].Name != "mcp__good__pid" {
				t.Fatalf("tools %+v, want the good server's", specs)
			}
			data, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			pid, _ := strconv.Atoi(string(data))
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Fatalf("the bad server (pid %d) still runs: %v", pid, err)
			}
		})
	}
}

// TestMCPStdioServerRestartedOnce_RW4: a stdio server that stops during a
// call fails that call saying so; the next call restarts it (a warning says
// it had stopped) and runs; after a second stop its tools fail with why.
func TestMCPStdioServerRestartedOnce_RW4(t *testing.T) {
	srv, _ := fakeMCPServer(t, "crashy", "crash")
	var warns []string
	m := ConnectMCP(context.Background(), []MCPServer{srv}, t.TempDir(), func(w string) { warns = append(warns, w) })
	t.Cleanup(func() { m.Close() })
	ctx := context.Background()
	call := func(tool string) toolRun { return m.call(ctx, "mcp__crashy__"+tool, json.RawMessage(`{}`), nil) }

	first := call("pid")
	if !first.ok || !strings.HasPrefix(first.content, "pid=") {
		t.Fatalf("first call %+v", first)
	}
	steps := []struct {
		tool     string
		ok       bool
		want     string
		wantWarn string
	}{
		{"crash", false, `mcp__crashy__crash: MCP server "crashy" stopped during the call (its last stderr line: "panic: fake crash"); SOBA restarts it at the next call of its tools`, ""},
		{"pid", true, "pid=", `MCP server "crashy" had stopped (its last stderr line: "panic: fake crash"); SOBA restarted it`},
		{"crash", false, `MCP server "crashy" stopped during the call (its last stderr line: "panic: fake crash"); it is not restarted again`, ""},
		{"pid", false, `mcp__crashy__pid: MCP server "crashy" stopped again (its last stderr line: "panic: fake crash") after it was restarted once; its tools are unavailable until the workspace reopens`, ""},
	}
	for i, st := range steps {
		warns = nil
		r := call(st.tool)
		if r.ok != st.ok || !strings.Contains(r.content, st.want) {
			t.Fatalf("step %d (%s): ok %v %q, want ok %v containing %q", i, st.tool, r.ok, r.content, st.ok, st.want)
		}
		if st.ok && r.content == first.content {
			t.Fatalf("step %d: the same process %s answered after its crash", i, r.content)
		}
		if st.wantWarn != "" && (len(warns) != 1 || warns[0] != st.wantWarn) {
			t.Fatalf("step %d: warnings %q, want %q", i, warns, st.wantWarn)
		}
		if st.wantWarn == "" && len(warns) != 0 {
			t.Fatalf("step %d: warnings %q", i, warns)
		}
	}
}

// TestMCPHTTPTransports: a URL is reached over streamable HTTP, or over
// the older HTTP+SSE transport when the server only speaks that (the MCP
// specification's backwards compatibility); type sse goes to HTTP+SSE
// directly; a URL that is no MCP server is a warning naming both tries.
func TestMCPHTTPTransports(t *testing.T) {
	newServer := func() *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "adds a and b"}, func(_ context.Context, _ *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sum=" + strconv.Itoa(in.A+in.B)}}}, nil, nil
		})
		return s
	}
	sse := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return newServer() }, nil))
	t.Cleanup(func() {
		sse.CloseClientConnections() // the SSE stream would hold Close open
		sse.Close()
	})
	notMCP := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notMCP.Close)
	tests := []struct {
		name     string
		server   MCPServer
		wantWarn string
	}{
		{"streamable HTTP", MCPServer{Name: "calc", URL: mcpTestServer(t)}, ""},
		{"HTTP+SSE only, found by the fallback", MCPServer{Name: "calc", URL: sse.URL}, ""},
		{"type sse", MCPServer{Name: "calc", URL: sse.URL, SSE: true}, ""},
		{"not an MCP server", MCPServer{Name: "calc", URL: notMCP.URL}, "streamable HTTP: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, warns := connectTestMCP(t, []MCPServer{tt.server})
			if tt.wantWarn != "" {
				if len(warns) != 1 || !strings.Contains(warns[0], tt.wantWarn) || !strings.Contains(warns[0], "HTTP+SSE: ") {
					t.Fatalf("warnings %q, want one naming both transports", warns)
				}
				return
			}
			if len(warns) != 0 {
				t.Fatalf("warnings %q", warns)
			}
			r := m.call(context.Background(), "mcp__calc__add", json.RawMessage(`{"a":2,"b":3}`), nil)
			if !r.ok || r.content != "sum=5" {
				t.Fatalf("call %+v", r)
			}
		})
	}
}
