package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sourcegraph/conc"

	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/tool"
	"github.com/soba-agent/soba-lsp/workspace"
)

// MCPServer is one of the user's MCP servers: stdio (Command, Args, Env) or
// streamable HTTP (URL, Headers). Name is the middle part of its tools'
// names, mcp__<server>__<tool>.
type MCPServer struct {
	Name    string
	Command string
	Args    []string
	Env     map[string]string
	URL     string
	Headers map[string]string
	// Approval is "ask" or "auto" for this server's tools; empty follows
	// the agent's Approval (tools.approval).
	Approval string
}

// MCP limits.
const (
	mcpConnectTimeout = 30 * time.Second
	mcpCallTimeout    = 2 * time.Minute
	// maxMCPOutput bounds one result as recorded in the transcript; the
	// model input shortens it further (maxToolResultChars).
	maxMCPOutput = 1 << 20
	// mcpToolPrefix starts the name of every MCP tool.
	mcpToolPrefix = "mcp__"
)

// MCP holds the connections to the user's MCP servers of one workspace and
// their tools as the model sees them. It is made once per workspace and
// shared by its sessions; Close ends the connections (and stdio servers).
type MCP struct {
	specs []ToolSpec
	route map[string]mcpRoute // model-facing name → server and tool

	mu       sync.Mutex // guards sessions
	sessions []*mcp.ClientSession
}

type mcpRoute struct {
	session  *mcp.ClientSession
	tool     string
	approval string
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// MCPToolName is the name the model sees for a server's tool: characters
// outside [A-Za-z0-9_-] become _, and the name is cut to 64 (the providers'
// limit).
func MCPToolName(server, tool string) string {
	n := mcpToolPrefix + unsafeName.ReplaceAllString(server, "_") + "__" + unsafeName.ReplaceAllString(tool, "_")
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

// IsMCPTool reports whether name is an MCP tool's model-facing name.
func IsMCPTool(name string) bool { return strings.HasPrefix(name, mcpToolPrefix) }

// ConnectMCP connects to the servers (concurrently, each within a timeout)
// and lists their tools. A server that cannot start or answer is reported
// through warn and left out; it never fails the workspace. dir is the
// working directory of stdio servers.
func ConnectMCP(ctx context.Context, servers []MCPServer, dir string, warn func(string)) *MCP {
	m := &MCP{route: map[string]mcpRoute{}}
	type listed struct {
		server  MCPServer
		session *mcp.ClientSession
		tools   []*mcp.Tool
		err     error
	}
	results := make([]listed, len(servers))
	var wg conc.WaitGroup
	for i, s := range servers {
		wg.Go(func() {
			cs, tools, err := connectOne(ctx, s, dir)
			results[i] = listed{server: s, session: cs, tools: tools, err: err}
		})
	}
	if r := wg.WaitAndRecover(); r != nil {
		warn("MCP: " + r.String())
	}
	for _, r := range results {
		if r.err != nil {
			warn(fmt.Sprintf("MCP server %q did not start: %v; its tools are not available", r.server.Name, r.err))
			continue
		}
		if r.session == nil {
			continue
		}
		m.sessions = append(m.sessions, r.session)
		for _, t := range r.tools {
			name := MCPToolName(r.server.Name, t.Name)
			if _, dup := m.route[name]; dup {
				warn(fmt.Sprintf("MCP server %q: tool %q has the same name as another (%s); only the first is used", r.server.Name, t.Name, name))
				continue
			}
			params, err := json.Marshal(t.InputSchema)
			if err != nil || t.InputSchema == nil {
				params = json.RawMessage(`{"type":"object"}`)
			}
			desc := t.Description
			if desc == "" {
				desc = t.Title
			}
			m.route[name] = mcpRoute{session: r.session, tool: t.Name, approval: r.server.Approval}
			m.specs = append(m.specs, ToolSpec{Name: name, Description: fmt.Sprintf("[MCP server %s] %s", r.server.Name, desc), Parameters: params})
		}
	}
	sort.Slice(m.specs, func(i, j int) bool { return m.specs[i].Name < m.specs[j].Name })
	return m
}

func connectOne(ctx context.Context, s MCPServer, dir string) (*mcp.ClientSession, []*mcp.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, mcpConnectTimeout)
	defer cancel()
	var t mcp.Transport
	switch {
	case s.Command != "":
		cmd := exec.Command(s.Command, s.Args...)
		cmd.Dir = dir
		cmd.Env = os.Environ()
		for k, v := range s.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		t = &mcp.CommandTransport{Command: cmd}
	case s.URL != "":
		t = &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: &http.Client{Transport: headerTransport{s.Headers}}}
	default:
		return nil, nil, errors.New("neither command nor url is set")
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "soba-lsp", Version: "1"}, nil)
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		return nil, nil, err
	}
	var tools []*mcp.Tool
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			_ = cs.Close()
			return nil, nil, fmt.Errorf("listing tools: %w", err)
		}
		tools = append(tools, tool)
	}
	return cs, tools, nil
}

// headerTransport adds the configured headers to each request.
type headerTransport struct{ h map[string]string }

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// needsApproval reports whether a call of the tool name asks the user
// first: writes and bash under tools.approval ask; MCP tools as their
// server's approval says, else as tools.approval says.
func (a *Agent) needsApproval(name string) bool {
	if IsMCPTool(name) {
		if m := a.opt.MCP; m != nil {
			if r, ok := m.route[name]; ok && r.approval != "" {
				return r.approval == "ask"
			}
		}
		return a.opt.Approval == "ask"
	}
	return tool.Mutates(name) && a.opt.Approval == "ask"
}

// toolSpecs are the tools the model is offered: SOBA's own, then the MCP
// servers'.
func (a *Agent) toolSpecs() []ToolSpec {
	mcpSpecs := a.opt.MCP.Specs()
	if len(mcpSpecs) == 0 {
		return Tools
	}
	return append(append(make([]ToolSpec, 0, len(Tools)+len(mcpSpecs)), Tools...), mcpSpecs...)
}

// Specs are the MCP tools as the model sees them, sorted by name.
func (m *MCP) Specs() []ToolSpec {
	if m == nil {
		return nil
	}
	return m.specs
}

// call runs one MCP tool under the turn's context and a timeout (R-W4). Its
// text content is the result; a result the server marks as an error, or a
// failed call, is a failed tool result.
func (m *MCP) call(ctx context.Context, name string, raw json.RawMessage, root *workspace.Root) toolRun {
	if m == nil {
		return fail("unknown tool %q", name)
	}
	r, ok := m.route[name]
	if !ok {
		return fail("unknown tool %q", name)
	}
	var args map[string]any
	if len(strings.TrimSpace(string(raw))) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil {
			return fail("%s: bad arguments: %v", name, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, mcpCallTimeout)
	defer cancel()
	res, err := r.session.CallTool(ctx, &mcp.CallToolParams{Name: r.tool, Arguments: args})
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return fail("%s: no answer within %s", name, mcpCallTimeout)
		}
		return fail("%s: %v", name, err)
	}
	var b strings.Builder
	var named []string // workspace files the result names (R-C2)
	nameFile := func(uri string) {
		if rel, ok := workspaceFile(root, uri); ok && !slices.Contains(named, rel) {
			named = append(named, rel)
		}
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			b.WriteString(c.Text)
		case *mcp.ImageContent:
			fmt.Fprintf(&b, "[image %s, %d bytes]", c.MIMEType, len(c.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(&b, "[audio %s, %d bytes]", c.MIMEType, len(c.Data))
		case *mcp.ResourceLink:
			fmt.Fprintf(&b, "[resource %s]", c.URI)
			nameFile(c.URI)
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				nameFile(c.Resource.URI)
			}
			if c.Resource != nil && c.Resource.Text != "" {
				fmt.Fprintf(&b, "[resource %s]\n%s", c.Resource.URI, c.Resource.Text)
			} else if c.Resource != nil {
				fmt.Fprintf(&b, "[resource %s]", c.Resource.URI)
			}
		}
		b.WriteString("\n")
	}
	if b.Len() == 0 && res.StructuredContent != nil {
		if data, err := json.Marshal(res.StructuredContent); err == nil {
			b.Write(data)
		}
	}
	out := strings.TrimRight(b.String(), "\n")
	if len(out) > maxMCPOutput {
		out = out[:maxMCPOutput] + fmt.Sprintf("\n[%s: result cut at %d bytes of %d]", name, maxMCPOutput, len(out))
	}
	run := toolRun{ok: !res.IsError, content: out}
	if run.ok && len(named) > 0 {
		// The server handed the model these files' contents or links:
		// they are files read, as exact as the read_file tool's (R-C2). A
		// failed result names nothing (R-C6).
		run.artifacts = &session.Artifacts{FilesRead: named}
	}
	return run
}

// workspaceFile is the workspace-relative path of a file:// URI inside the
// workspace root.
func workspaceFile(root *workspace.Root, uri string) (string, bool) {
	u, err := url.Parse(uri)
	if root == nil || err != nil || u.Scheme != "file" || u.Path == "" {
		return "", false
	}
	_, rel, err := root.Resolve(u.Path)
	return rel, err == nil
}

// Close ends every connection; stdio servers are stopped.
func (m *MCP) Close() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	sessions := m.sessions
	m.sessions = nil
	m.mu.Unlock()
	var errs []error
	for _, s := range sessions {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
