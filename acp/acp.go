// Package acp is SOBA's Agent Client Protocol front end (docs/acp.md): ACP v1
// over newline-delimited JSON-RPC on a byte stream, on
// github.com/coder/acp-go-sdk. It drives a Backend of its own, which the
// composition root implements over the agent of a workspace, and gives each
// session a Peer through which the backend streams session/update
// notifications and asks for permissions. It imports nothing of the module
// but the shared leaves.
package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/sourcegraph/conc"
	"github.com/sourcegraph/conc/panics"
)

// StopReason is why a prompt turn ended (ACP's stopReason).
type StopReason string

// Stop reasons SOBA reports.
const (
	EndTurn         StopReason = "end_turn"
	Cancelled       StopReason = "cancelled"
	MaxTurnRequests StopReason = "max_turn_requests"
	Refusal         StopReason = "refusal"
)

// MCPServer is one of the user's MCP servers as session/new hands it over:
// stdio (Command, Args, Env) or HTTP (URL, Headers).
type MCPServer struct {
	Name    string
	Command string
	Args    []string
	Env     map[string]string
	URL     string
	Headers map[string]string
}

// SessionOptions open a session.
type SessionOptions struct {
	Cwd        string
	MCPServers []MCPServer
	// SessionID names the session to load or resume; empty for new.
	SessionID string
	// Replay asks for the session's history as session/updates (load,
	// not resume).
	Replay bool
	Peer   *Peer
}

// SessionSummary is one session of a workspace, for session/list.
type SessionSummary struct {
	ID        string
	UpdatedAt time.Time
	// Title is the session's first request, clipped; empty when it has none.
	Title string
}

// Backend makes sessions; the composition root implements it.
type Backend interface {
	// NewSession opens a new SOBA session in the workspace at Cwd.
	NewSession(ctx context.Context, opt SessionOptions) (Session, error)
	// LoadSession reopens opt.SessionID and, with opt.Replay, replays its
	// leaf path through opt.Peer before it returns.
	LoadSession(ctx context.Context, opt SessionOptions) (Session, error)
	// ListSessions lists the sessions of the workspace at cwd, most
	// recently updated first.
	ListSessions(ctx context.Context, cwd string) ([]SessionSummary, error)
}

// Session is one ACP session: one SOBA session's agent.
type Session interface {
	ID() string
	// Prompt runs one turn (or one slash command), streaming through the
	// Peer, and returns when it ended. ctx is cancelled by session/cancel.
	Prompt(ctx context.Context, text string) (StopReason, error)
	// Cancel cancels the running turn and its barrier (R-F2).
	Cancel()
	Close() error
}

// Server is one ACP connection.
type Server struct {
	backend Backend
	version string
	log     *slog.Logger
	conn    *sdk.AgentSideConnection
	work    conc.WaitGroup
	// out is the stream the SDK and the raw compaction updates share;
	// compaction is set when the client's initialize opted in to them.
	out        *lineWriter
	compaction atomic.Bool

	mu       sync.Mutex // guards sessions
	sessions map[string]Session
}

// Serve runs the ACP server on in/out until the peer disconnects or ctx ends,
// then closes every session.
func Serve(ctx context.Context, backend Backend, in io.Reader, out io.Writer, version string, log *slog.Logger) error {
	s := &Server{backend: backend, version: version, log: log, sessions: map[string]Session{}, out: &lineWriter{w: out}}
	// The SDK's reader starts at once, and its SetLogger is not
	// synchronized with it: nothing is read until the logger is set.
	ready := make(chan struct{})
	s.conn = sdk.NewAgentSideConnection(s, s.out, &gatedReader{r: &initSniffer{r: in, compaction: &s.compaction}, open: ready})
	s.conn.SetLogger(log)
	close(ready)
	select {
	case <-s.conn.Done():
	case <-ctx.Done():
	}
	s.mu.Lock()
	sessions := s.sessions
	s.sessions = map[string]Session{}
	s.mu.Unlock()
	var errs []error
	for _, ss := range sessions {
		ss.Cancel()
		errs = append(errs, ss.Close())
	}
	if r := s.work.WaitAndRecover(); r != nil {
		errs = append(errs, r.AsError())
	}
	return errors.Join(errs...)
}

var _ sdk.Agent = (*Server)(nil)
var _ sdk.AgentLoader = (*Server)(nil)

func (s *Server) Initialize(_ context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	return sdk.InitializeResponse{
		ProtocolVersion: sdk.ProtocolVersionNumber,
		AgentCapabilities: sdk.AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: sdk.PromptCapabilities{EmbeddedContext: true},
			McpCapabilities:    sdk.McpCapabilities{Http: true},
			SessionCapabilities: sdk.SessionCapabilities{List: &sdk.SessionListCapabilities{},
				Resume: &sdk.SessionResumeCapabilities{}, Close: &sdk.SessionCloseCapabilities{}},
		},
		AgentInfo:   &sdk.Implementation{Name: "soba-lsp", Title: sdk.Ptr("SOBA"), Version: s.version},
		AuthMethods: []sdk.AuthMethod{},
	}, nil
}

func (s *Server) Authenticate(context.Context, sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	return sdk.AuthenticateResponse{}, nil
}

func (s *Server) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	ss, err := s.open(ctx, p.Cwd, "", false, p.McpServers)
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	return sdk.NewSessionResponse{SessionId: sdk.SessionId(ss.ID())}, nil
}

func (s *Server) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	if p.SessionId == "" {
		return sdk.LoadSessionResponse{}, sdk.NewInvalidParams(map[string]any{"error": "sessionId is empty"})
	}
	_, err := s.open(ctx, p.Cwd, string(p.SessionId), true, p.McpServers)
	return sdk.LoadSessionResponse{}, err
}

// open makes or loads a session and announces its slash commands once the
// answer is on its way.
func (s *Server) open(ctx context.Context, cwd, id string, replay bool, mcp []sdk.McpServer) (Session, error) {
	if !filepath.IsAbs(cwd) {
		return nil, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("cwd %q is not an absolute path: name the workspace folder", cwd)})
	}
	servers, err := mcpServers(mcp)
	if err != nil {
		return nil, sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	if id != "" {
		// A session open in this process is closed first: its file lock
		// would refuse the reopen (the client loads a session it has open,
		// e.g. from its history).
		s.mu.Lock()
		old := s.sessions[id]
		delete(s.sessions, id)
		s.mu.Unlock()
		if old != nil {
			old.Cancel()
			_ = old.Close()
		}
	}
	peer := &Peer{conn: s.conn, id: id, raw: s.out, compaction: &s.compaction}
	opt := SessionOptions{Cwd: cwd, MCPServers: servers, SessionID: id, Replay: replay, Peer: peer}
	var ss Session
	if id == "" {
		ss, err = s.backend.NewSession(ctx, opt)
	} else {
		ss, err = s.backend.LoadSession(ctx, opt)
	}
	if err != nil {
		return nil, err
	}
	peer.setID(ss.ID())
	s.mu.Lock()
	old := s.sessions[ss.ID()]
	s.sessions[ss.ID()] = ss
	s.mu.Unlock()
	if old != nil && old != ss {
		old.Cancel()
		_ = old.Close()
	}
	s.work.Go(func() {
		if r := panics.Try(func() { peer.Commands(context.Background()) }); r != nil {
			s.log.Error("acp: announcing commands", "panic", r.Value)
		}
	})
	return ss, nil
}

func mcpServers(in []sdk.McpServer) ([]MCPServer, error) {
	out := make([]MCPServer, 0, len(in))
	for _, m := range in {
		switch {
		case m.Stdio != nil:
			env := map[string]string{}
			for _, e := range m.Stdio.Env {
				env[e.Name] = e.Value
			}
			out = append(out, MCPServer{Name: m.Stdio.Name, Command: m.Stdio.Command, Args: m.Stdio.Args, Env: env})
		case m.Http != nil:
			h := map[string]string{}
			for _, e := range m.Http.Headers {
				h[e.Name] = e.Value
			}
			out = append(out, MCPServer{Name: m.Http.Name, URL: m.Http.Url, Headers: h})
		default:
			return nil, fmt.Errorf("mcpServers: only stdio and http servers are supported")
		}
	}
	return out, nil
}

func (s *Server) session(id sdk.SessionId) (Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.sessions[string(id)]; ss != nil {
		return ss, nil
	}
	return nil, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown session %q", id)})
}

func (s *Server) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	ss, err := s.session(p.SessionId)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	text := promptText(p.Prompt)
	if strings.TrimSpace(text) == "" {
		return sdk.PromptResponse{}, sdk.NewInvalidParams(map[string]any{"error": "prompt has no text"})
	}
	stop, err := ss.Prompt(ctx, text)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	return sdk.PromptResponse{StopReason: sdk.StopReason(stop)}, nil
}

// promptText is what the user sent, as the model sees it: text blocks as
// they are, embedded resources as their text with the URI, links by URI.
func promptText(blocks []sdk.ContentBlock) string {
	var b strings.Builder
	for _, c := range blocks {
		switch {
		case c.Text != nil:
			b.WriteString(c.Text.Text)
		case c.ResourceLink != nil:
			fmt.Fprintf(&b, "\n[%s](%s)\n", c.ResourceLink.Name, c.ResourceLink.Uri)
		case c.Resource != nil && c.Resource.Resource.TextResourceContents != nil:
			r := c.Resource.Resource.TextResourceContents
			fmt.Fprintf(&b, "\n<context uri=%q>\n%s\n</context>\n", r.Uri, r.Text)
		}
	}
	return b.String()
}

func (s *Server) Cancel(_ context.Context, p sdk.CancelNotification) error {
	if ss, err := s.session(p.SessionId); err == nil {
		ss.Cancel()
	}
	return nil
}

func (s *Server) CloseSession(_ context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	s.mu.Lock()
	ss := s.sessions[string(p.SessionId)]
	delete(s.sessions, string(p.SessionId))
	s.mu.Unlock()
	if ss == nil {
		return sdk.CloseSessionResponse{}, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown session %q", p.SessionId)})
	}
	ss.Cancel()
	return sdk.CloseSessionResponse{}, ss.Close()
}

// ListSessions lists the sessions of the workspace named by cwd (SOBA's
// sessions live in a workspace's .soba/, so cwd is required); all of them,
// in one page.
func (s *Server) ListSessions(ctx context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	if p.Cwd == nil || *p.Cwd == "" {
		return sdk.ListSessionsResponse{}, sdk.NewInvalidParams(map[string]any{"error": "cwd is required: SOBA's sessions belong to a workspace"})
	}
	list, err := s.backend.ListSessions(ctx, *p.Cwd)
	if err != nil {
		return sdk.ListSessionsResponse{}, err
	}
	out := sdk.ListSessionsResponse{Sessions: []sdk.SessionInfo{}}
	for _, l := range list {
		info := sdk.SessionInfo{SessionId: sdk.SessionId(l.ID), Cwd: *p.Cwd,
			UpdatedAt: sdk.Ptr(l.UpdatedAt.UTC().Format(time.RFC3339))}
		if l.Title != "" {
			info.Title = sdk.Ptr(l.Title)
		}
		out.Sessions = append(out.Sessions, info)
	}
	return out, nil
}

// ResumeSession reopens a session like session/load, without replaying it.
func (s *Server) ResumeSession(ctx context.Context, p sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	if p.SessionId == "" {
		return sdk.ResumeSessionResponse{}, sdk.NewInvalidParams(map[string]any{"error": "sessionId is empty"})
	}
	_, err := s.open(ctx, p.Cwd, string(p.SessionId), false, p.McpServers)
	return sdk.ResumeSessionResponse{}, err
}

func (s *Server) SetSessionConfigOption(context.Context, sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	return sdk.SetSessionConfigOptionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionSetConfigOption)
}

func (s *Server) SetSessionMode(context.Context, sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	return sdk.SetSessionModeResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionSetMode)
}

// gatedReader blocks reads until open is closed.
type gatedReader struct {
	r    io.Reader
	open <-chan struct{}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	<-g.open
	return g.r.Read(p)
}
