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
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sourcegraph/conc"
	"github.com/sourcegraph/conc/panics"

	"github.com/soba-agent/soba-lsp/internal/background"
	"github.com/soba-agent/soba-lsp/internal/lazyregexp"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/workspace"
)

// MCPServer is one of the user's MCP servers: stdio (Command, Args, Env) or
// HTTP (URL, Headers). Name is the middle part of its tools' names,
// mcp__<server>__<tool>.
type MCPServer struct {
	Name    string
	Command string
	Args    []string
	Env     map[string]string
	URL     string
	Headers map[string]string
	// SSE reaches URL over the older HTTP+SSE transport only; otherwise a URL
	// is tried with streamable HTTP first, then HTTP+SSE.
	SSE bool
	// StartupTimeout bounds starting the server and listing its tools; 0
	// means mcpConnectTimeout.
	StartupTimeout time.Duration
	// Approval is "ask" or "auto" for this server's tools; empty follows
	// the agent's Approval (tools.approval).
	Approval string
}

// MCP limits.
const (
	// mcpConnectTimeout bounds a server's start: one that never answers
	// initialize or tools/list is a warning after it, never a hung session.
	mcpConnectTimeout = 30 * time.Second
	// mcpStopTimeout is how long a stdio server has to exit after its stdin
	// closes, and again after SIGTERM, before it is killed.
	mcpStopTimeout = time.Second
	// maxMCPStderr bounds the tail of a stdio server's stderr kept to say
	// why it stopped.
	maxMCPStderr   = 4 << 10
	mcpCallTimeout = 2 * time.Minute
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
	conns []*mcpConn
	warn  func(string)
}

type mcpRoute struct {
	conn     *mcpConn
	tool     string
	approval string
}

var unsafeName = lazyregexp.New(`[^A-Za-z0-9_-]`)

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

// ConnectMCP connects to the servers (concurrently, each within its startup
// timeout) and lists their tools. A server that cannot start or answer is
// reported through warn and left out; it never fails the workspace. dir is
// the working directory of stdio servers. warn also reports a server that
// stopped and was restarted.
func ConnectMCP(ctx context.Context, servers []MCPServer, dir string, warn func(string)) *MCP {
	m := &MCP{route: map[string]mcpRoute{}, warn: warn}
	type listed struct {
		conn  *mcpConn
		tools []*mcp.Tool
		err   error
	}
	results := make([]listed, len(servers))
	var wg conc.WaitGroup
	for i, s := range servers {
		wg.Go(func() {
			c := &mcpConn{server: s, dir: dir}
			tools, err := c.connect(ctx)
			results[i] = listed{conn: c, tools: tools, err: err}
		})
	}
	if r := wg.WaitAndRecover(); r != nil {
		warn("MCP: " + r.String())
	}
	for _, r := range results {
		if r.conn == nil {
			continue
		}
		name := r.conn.server.Name
		if r.err != nil {
			warn(fmt.Sprintf("MCP server %q did not start: %v; its tools are not available", name, r.err))
			continue
		}
		m.conns = append(m.conns, r.conn)
		for _, t := range r.tools {
			toolName := MCPToolName(name, t.Name)
			if _, dup := m.route[toolName]; dup {
				warn(fmt.Sprintf("MCP server %q: tool %q has the same name as another (%s); only the first is used", name, t.Name, toolName))
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
			m.route[toolName] = mcpRoute{conn: r.conn, tool: t.Name, approval: r.conn.server.Approval}
			m.specs = append(m.specs, ToolSpec{Name: toolName, Description: fmt.Sprintf("[MCP server %s] %s", name, desc), Parameters: params})
		}
	}
	sort.Slice(m.specs, func(i, j int) bool { return m.specs[i].Name < m.specs[j].Name })
	return m
}

// mcpConn is the connection to one server. A stdio server that stops is
// restarted once, by the next call of one of its tools; a second stop
// leaves its tools failing with why.
type mcpConn struct {
	server MCPServer
	dir    string

	mu       sync.Mutex // guards the fields below
	cs       *mcp.ClientSession
	ended    chan struct{} // closed when cs's connection ends
	stderr   *tailWriter   // the stdio server's stderr, its tail
	restarts int
	closed   bool
}

// connect starts (or restarts) the server and lists its tools, within the
// startup timeout.
func (c *mcpConn) connect(ctx context.Context) ([]*mcp.Tool, error) {
	timeout := c.server.StartupTimeout
	if timeout <= 0 {
		timeout = mcpConnectTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s := c.server
	client := mcp.NewClient(&mcp.Implementation{Name: "soba-lsp", Version: "1"}, nil)
	var (
		cs       *mcp.ClientSession
		stderr   *tailWriter
		err      error
		stopLive = func() {}
	)
	switch {
	case s.Command != "":
		cmd := exec.Command(s.Command, s.Args...)
		cmd.Dir = c.dir
		cmd.Env = os.Environ()
		for k, v := range s.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		stderr = &tailWriter{max: maxMCPStderr}
		cmd.Stderr = stderr
		// A child the server started may hold its stderr open after the
		// server exits (npx starts node): stopping must not wait for it.
		cmd.WaitDelay = mcpStopTimeout
		cs, err = client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: mcpStopTimeout}, nil)
		if err != nil {
			err = withStderr(err, stderr)
		}
	case s.URL != "":
		hc := &http.Client{Transport: headerTransport{s.Headers}}
		if !s.SSE {
			cs, err = client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc}, nil)
		}
		if s.SSE || (err != nil && ctx.Err() == nil) {
			// The older HTTP+SSE transport, for servers that only speak it
			// (the MCP specification's backwards compatibility). Its event
			// stream is the GET made at connect, so it must outlive the
			// startup deadline: it lives until the connection ends.
			streamErr := err
			live, stop := context.WithCancel(context.WithoutCancel(ctx))
			stopLive = stop
			cs, err = client.Connect(ctx, &boundedConnect{t: &mcp.SSEClientTransport{Endpoint: s.URL, HTTPClient: hc}, live: live}, nil)
			if err != nil && streamErr != nil {
				err = fmt.Errorf("streamable HTTP: %v; HTTP+SSE: %w", streamErr, err)
			}
		}
	default:
		return nil, errors.New("neither command nor url is set")
	}
	if err != nil {
		stopLive()
		if ctx.Err() == context.DeadlineExceeded {
			return nil, fmt.Errorf("no answer to initialize within %s%s", timeout, stderrNote(stderr))
		}
		return nil, err
	}
	var tools []*mcp.Tool
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			_ = cs.Close()
			stopLive()
			if ctx.Err() == context.DeadlineExceeded {
				return nil, fmt.Errorf("no answer to tools/list within %s%s", timeout, stderrNote(stderr))
			}
			return nil, fmt.Errorf("listing tools: %w", err)
		}
		tools = append(tools, tool)
	}
	ended := make(chan struct{})
	background.Go(func() {
		defer close(ended)
		defer stopLive()
		_ = cs.Wait()
	}, nil)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		_ = cs.Close() // the watcher stops the live context
		return nil, errors.New("closed")
	}
	c.cs, c.ended, c.stderr = cs, ended, stderr
	return tools, nil
}

// boundedConnect connects t with the long-lived context live, but gives up
// when the connect's own context ends (the startup deadline).
type boundedConnect struct {
	t    mcp.Transport
	live context.Context
}

func (b *boundedConnect) Connect(ctx context.Context) (mcp.Connection, error) {
	type result struct {
		c   mcp.Connection
		err error
	}
	ch := make(chan result, 1)
	background.Go(func() {
		c, err := b.t.Connect(b.live)
		ch <- result{c, err}
	}, func(r *panics.Recovered) { ch <- result{nil, background.Error(r)} })
	select {
	case r := <-ch:
		return r.c, r.err
	case <-ctx.Done():
		background.Go(func() { // a late connection is closed, never used
			if r := <-ch; r.err == nil {
				_ = r.c.Close()
			}
		}, nil)
		return nil, ctx.Err()
	}
}

// session is the live connection for a call. A stdio server that stopped
// since the last call is restarted once (note says so); after that, or for
// a server that cannot be restarted, the error says why.
func (c *mcpConn) session(ctx context.Context) (cs *mcp.ClientSession, note string, err error) {
	var restarts int
	c.mu.Lock()
	cs, ended, stderr := c.cs, c.ended, c.stderr
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, "", fmt.Errorf("MCP server %q is closed", c.server.Name)
	}
	if !isClosed(ended) {
		return cs, "", nil
	}
	why := stderrNote(stderr)
	if c.server.Command == "" {
		return nil, "", fmt.Errorf("the connection to MCP server %q ended", c.server.Name)
	}
	c.mu.Lock()
	if c.ended != ended { // another call restarted it meanwhile
		cs = c.cs
		c.mu.Unlock()
		return cs, "", nil
	}
	restarts = c.restarts
	c.restarts++
	c.mu.Unlock()
	if restarts > 0 {
		return nil, "", fmt.Errorf("MCP server %q stopped again%s after it was restarted once; its tools are unavailable until the workspace reopens", c.server.Name, why)
	}
	_ = cs.Close()
	if _, err := c.connect(ctx); err != nil {
		return nil, "", fmt.Errorf("MCP server %q stopped%s and did not restart: %v", c.server.Name, why, err)
	}
	c.mu.Lock()
	cs = c.cs
	c.mu.Unlock()
	return cs, fmt.Sprintf("MCP server %q had stopped%s; SOBA restarted it", c.server.Name, why), nil
}

// endedDuring reports whether the connection ended, waiting briefly: a
// call that failed because the server exited sees the end a moment later.
func (c *mcpConn) endedDuring() (bool, string) {
	c.mu.Lock()
	ended, stderr := c.ended, c.stderr
	c.mu.Unlock()
	select {
	case <-ended:
		return true, stderrNote(stderr)
	case <-time.After(200 * time.Millisecond):
		return false, ""
	}
}

func (c *mcpConn) close() error {
	c.mu.Lock()
	cs := c.cs
	c.closed = true
	c.mu.Unlock()
	if cs == nil {
		return nil
	}
	return cs.Close()
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	max int
	mu  sync.Mutex
	b   []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if len(w.b) > w.max {
		w.b = append([]byte(nil), w.b[len(w.b)-w.max:]...)
	}
	return len(p), nil
}

// lastLine is the last non-empty line written, cut to 200 bytes.
func (w *tailWriter) lastLine() string {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(w.b)), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if len(l) > 200 {
		l = l[:200] + "…"
	}
	return l
}

// stderrNote names the last line a stdio server wrote to stderr.
func stderrNote(w *tailWriter) string {
	if l := w.lastLine(); l != "" {
		return fmt.Sprintf(" (its last stderr line: %q)", l)
	}
	return ""
}

func withStderr(err error, w *tailWriter) error {
	if n := stderrNote(w); n != "" {
		return fmt.Errorf("%w%s", err, n)
	}
	return err
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
	cs, note, err := r.conn.session(ctx)
	if err != nil {
		return fail("%s: %v", name, err)
	}
	if note != "" && m.warn != nil {
		m.warn(note)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: r.tool, Arguments: args})
	if err != nil {
		switch {
		case ctx.Err() == context.DeadlineExceeded:
			return fail("%s: no answer within %s", name, mcpCallTimeout)
		case ctx.Err() != nil:
			return fail("%s: %v", name, err)
		}
		if ended, why := r.conn.endedDuring(); ended {
			again := "SOBA restarts it at the next call of its tools"
			if r.conn.server.Command == "" || r.conn.restartsDone() > 0 {
				again = "it is not restarted again"
			}
			return fail("%s: MCP server %q stopped during the call%s; %s", name, r.conn.server.Name, why, again)
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
	whole := ""
	if len(out) > maxMCPOutput {
		whole = out
		out = out[:maxMCPOutput] + fmt.Sprintf("\n[%s: result cut at %d bytes of %d]", name, maxMCPOutput, len(out))
	}
	// Fitted to its share of the context like every result (sizer.fit).
	run := toolRun{ok: !res.IsError, content: out, raw: whole}
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
	var errs []error
	for _, c := range m.conns {
		errs = append(errs, c.close())
	}
	return errors.Join(errs...)
}

func (c *mcpConn) restartsDone() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.restarts
}
