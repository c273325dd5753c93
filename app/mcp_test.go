package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/soba-agent/soba-lsp/agent"
	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
	"github.com/soba-agent/soba-lsp/lsp/protocol"
)

// transcriptResults are the tool results of the session's transcript as
// "name:ok:content".
func (e *agentEnv) transcriptResults(t *testing.T) []string {
	t.Helper()
	var info protocol.SessionInfo
	if err := e.Command(protocol.CommandSessionInfo, nil, &info); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(info.Path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if strings.Contains(line, `"type":"tool_result"`) {
			out = append(out, line)
		}
	}
	return out
}

// TestLSPModeRunsConfiguredMCPServer: a server of the configuration's
// mcpServers (here the official Go SDK's, over streamable HTTP, with a
// configured header) gives the model mcp__<server>__<tool> in LSP mode, and
// a call's result is recorded in the transcript.
func TestLSPModeRunsConfiguredMCPServer(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	type lookupArgs struct {
		Key string `json:"key"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "lookup", Description: "looks a key up"}, func(_ context.Context, req *mcp.CallToolRequest, in lookupArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "value of " + in.Key}}}, nil, nil
	})
	var sawHeader atomic.Bool
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Team") == "soba" {
			sawHeader.Store(true)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	e := runAgentServer(t, func(s *Settings) {
		s.MCPServers = []agent.MCPServer{{Name: "notes", URL: srv.URL, Headers: map[string]string{"X-Team": "soba"}}}
	}, []providertest.Reply{
		providertest.Call("c1", "mcp__notes__lookup", map[string]any{"key": "colour"}),
		providertest.Text("Looked it up."),
	}, nil)
	if end := e.prompt(t, "look up colour"); end.Outcome != "completed" {
		t.Fatalf("turn %s: %s", end.Outcome, end.Error)
	}
	if !sawHeader.Load() {
		t.Error("the configured header was not sent")
	}
	got := e.transcriptResults(t)
	if len(got) != 1 || !strings.Contains(got[0], `"toolName":"mcp__notes__lookup"`) || !strings.Contains(got[0], "value of colour") || !strings.Contains(got[0], `"ok":true`) {
		t.Fatalf("tool results in the transcript: %q", got)
	}
}

// TestLSPModeRunsPublishedMCPServer: a published MCP server from npm
// (@modelcontextprotocol/server-everything, installed by
// acp/conformance/test.sh) configured as a stdio server in LSP mode; the
// fake model calls its echo tool. Skips when node or the package is absent.
func TestLSPModeRunsPublishedMCPServer(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed; run acp/conformance/test.sh")
	}
	script, err := filepath.Abs("../acp/conformance/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(script); err != nil {
		t.Skip("@modelcontextprotocol/server-everything not installed; run acp/conformance/test.sh (npm ci)")
	}
	e := runAgentServer(t, func(s *Settings) {
		s.MCPServers = []agent.MCPServer{{Name: "everything", Command: node, Args: []string{script, "stdio"}}}
	}, []providertest.Reply{
		providertest.Call("c1", "mcp__everything__echo", map[string]any{"message": "hello from the LSP mode"}),
		providertest.Text("It echoed."),
	}, nil)
	if end := e.prompt(t, "echo something"); end.Outcome != "completed" {
		t.Fatalf("turn %s: %s", end.Outcome, end.Error)
	}
	got := e.transcriptResults(t)
	if len(got) != 1 || !strings.Contains(got[0], "hello from the LSP mode") || !strings.Contains(got[0], `"ok":true`) {
		t.Fatalf("tool results in the transcript: %q", got)
	}
}
