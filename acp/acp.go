// Package acp is SOBA's Agent Client Protocol front end (docs/acp.md): ACP v1
// over newline-delimited JSON-RPC on a byte stream, on
// github.com/coder/acp-go-sdk. It drives a Backend of its own, which the
// composition root implements over the agent of a workspace, and gives each
// session a Peer through which the backend streams session/update
// notifications and asks for permissions. It imports nothing of the module
// but the shared leaves.
package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
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
// stdio (Command, Args, Env) or HTTP (URL, Headers; SSE for the older
// HTTP+SSE transport).
type MCPServer struct {
	Name    string
	Command string
	Args    []string
	Env     map[string]string
	URL     string
	Headers map[string]string
	SSE     bool
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
	ID string
	// Cwd is the workspace the session belongs to.
	Cwd       string
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
	// DeleteSession removes session id of the workspace at cwd from its
	// list; found is false when the workspace has no such session.
	DeleteSession(ctx context.Context, cwd, id string) (found bool, err error)
}

// Usage is the tokens of one turn (PromptResponse.usage): Input counts
// every prompt token sent, Cached the part of it a prompt cache served.
type Usage struct {
	Input, Output, Cached int
}

// TurnResult is how a prompt turn ended.
type TurnResult struct {
	Stop StopReason
	// Usage is nil when the provider reported none (a slash command, a
	// model server without usage).
	Usage *Usage
}

// Session is one ACP session: one SOBA session's agent.
type Session interface {
	ID() string
	// Prompt runs one turn (or one slash command), streaming through the
	// Peer, and returns when it ended. ctx is cancelled by
	// $/cancel_request or the end of the connection; session/cancel
	// calls Cancel.
	Prompt(ctx context.Context, text string) (TurnResult, error)
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
	// caps is what the client offered in initialize.
	caps atomic.Pointer[ClientCaps]
	// home is the process's working directory: where a client that names
	// no cwd (session/list, session/delete) looks first.
	home string

	mu       sync.Mutex // guards sessions, cwds
	sessions map[string]Session
	// cwds are the workspaces of the sessions opened on this connection, by
	// session id.
	cwds map[string]string
	// cancels counts the session/cancel notifications of each session.
	cancels map[string]int
}

// ClientCaps is what the client offers the agent (initialize): its file
// system and terminal, and boolean config options.
type ClientCaps struct {
	ReadTextFile, WriteTextFile, Terminal bool
	BooleanConfigOptions                  bool
}

// Serve runs the ACP server on in/out until the peer disconnects or ctx ends,
// then closes every session.
func Serve(ctx context.Context, backend Backend, in io.Reader, out io.Writer, version string, log *slog.Logger) error {
	s := &Server{backend: backend, version: version, log: log, sessions: map[string]Session{}, cwds: map[string]string{}, cancels: map[string]int{}, out: &lineWriter{w: out}}
	if wd, err := os.Getwd(); err == nil {
		s.home = wd
	}
	s.caps.Store(&ClientCaps{})
	// The SDK's reader starts at once, and its SetLogger is not
	// synchronized with it: nothing is read until the logger is set.
	ready := make(chan struct{})
	// Lines over maxLineBytes are refused before anything else sees them
	// (R-W7).
	s.conn = sdk.NewAgentSideConnection(s, s.out, &gatedReader{r: newInterceptor(&boundedLines{r: in, out: s.out, log: log, limit: maxLineBytes}, s.intercept), open: ready})
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

// AuthMethodID is SOBA's one authentication method: a local-first agent
// signs in nowhere; the model and the name of its API key's environment
// variable come from the user's configuration files.
const AuthMethodID = "soba-config"

// Initialize answers initialize (intercept.go adds what the SDK's types
// lack).
func (s *Server) Initialize(_ context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	return sdk.InitializeResponse{
		ProtocolVersion: sdk.ProtocolVersionNumber,
		AgentCapabilities: sdk.AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: sdk.PromptCapabilities{EmbeddedContext: true},
			McpCapabilities:    sdk.McpCapabilities{Http: true, Sse: true},
			SessionCapabilities: sdk.SessionCapabilities{List: &sdk.SessionListCapabilities{},
				Resume: &sdk.SessionResumeCapabilities{}, Close: &sdk.SessionCloseCapabilities{}},
		},
		AgentInfo: &sdk.Implementation{Name: "soba-lsp", Title: sdk.Ptr("SOBA"), Version: s.version},
		AuthMethods: []sdk.AuthMethod{{Agent: &sdk.AuthMethodAgent{Id: AuthMethodID, Name: "SOBA configuration",
			Description: sdk.Ptr("Nothing to sign in to: SOBA runs locally and reaches the model named in ~/.config/soba/config.json " +
				"(or the workspace's .soba/config.json), with the API key from the environment variable that file names.")}}},
	}, nil
}

// Authenticate accepts SOBA's one method: there is nothing to sign in to.
func (s *Server) Authenticate(_ context.Context, p sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	if p.MethodId != AuthMethodID {
		return sdk.AuthenticateResponse{}, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown auth method %q: SOBA offers %q", p.MethodId, AuthMethodID)})
	}
	return sdk.AuthenticateResponse{}, nil
}

func (s *Server) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	ss, err := s.open(ctx, p.Cwd, "", false, p.McpServers)
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	if cancelledByClient(ctx) {
		s.drop(ss.ID())
		return sdk.NewSessionResponse{}, sdk.NewRequestCancelled(nil)
	}
	opts, m := s.settings(ss)
	return sdk.NewSessionResponse{SessionId: sdk.SessionId(ss.ID()), ConfigOptions: opts, Modes: m}, nil
}

func (s *Server) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	if p.SessionId == "" {
		return sdk.LoadSessionResponse{}, sdk.NewInvalidParams(map[string]any{"error": "sessionId is empty"})
	}
	ss, err := s.open(ctx, p.Cwd, string(p.SessionId), true, p.McpServers)
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	opts, m := s.settings(ss)
	return sdk.LoadSessionResponse{ConfigOptions: opts, Modes: m}, nil
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
	peer := &Peer{conn: s.conn, id: id, raw: s.out, compaction: &s.compaction, caps: *s.caps.Load()}
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
	s.cwds[ss.ID()] = filepath.Clean(cwd)
	s.mu.Unlock()
	if old != nil && old != ss {
		old.Cancel()
		_ = old.Close()
	}
	s.work.Go(func() {
		if r := panics.Try(func() { peer.Commands(context.Background()); peer.flushEarly(context.Background()) }); r != nil {
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
		case m.Sse != nil:
			h := map[string]string{}
			for _, e := range m.Sse.Headers {
				h[e.Name] = e.Value
			}
			out = append(out, MCPServer{Name: m.Sse.Name, URL: m.Sse.Url, Headers: h, SSE: true})
		default:
			return nil, fmt.Errorf("mcpServers: a server is neither stdio, http nor sse")
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
	s.mu.Lock()
	cancels := s.cancels[string(p.SessionId)]
	s.mu.Unlock()
	r, err := ss.Prompt(ctx, text)
	s.mu.Lock()
	sessionCancel := s.cancels[string(p.SessionId)] != cancels
	s.mu.Unlock()
	if cancelledByClient(ctx) && !sessionCancel {
		// $/cancel_request: the turn was cancelled and has ended; the
		// request answers -32800 (session/cancel answers stopReason
		// cancelled instead).
		return sdk.PromptResponse{}, sdk.NewRequestCancelled(map[string]any{"stopReason": string(r.Stop)})
	}
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	out := sdk.PromptResponse{StopReason: sdk.StopReason(r.Stop)}
	if u := r.Usage; u != nil {
		out.Usage = &sdk.Usage{InputTokens: u.Input, OutputTokens: u.Output, TotalTokens: u.Input + u.Output, CachedReadTokens: sdk.Ptr(u.Cached)}
	}
	return out, nil
}

// cancelledByClient tells a request the client cancelled (the SDK cancels
// its context with context.Canceled as the cause for $/cancel_request, and
// a prompt's for session/cancel) from one whose connection ended.
func cancelledByClient(ctx context.Context) bool {
	return ctx.Err() != nil && context.Cause(ctx) == context.Canceled
}

// drop closes an open session of this connection, if it is one.
func (s *Server) drop(id string) {
	s.mu.Lock()
	ss := s.sessions[id]
	delete(s.sessions, id)
	s.mu.Unlock()
	if ss != nil {
		ss.Cancel()
		_ = ss.Close()
	}
}

// InvalidInput makes err the answer to a request whose own input is wrong
// (-32602, its text under data.error), such as a prompt over the hard limit
// (R-W7); other errors of a backend are -32603.
func InvalidInput(err error) error {
	return sdk.NewInvalidParams(map[string]any{"error": err.Error()})
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

// ListSessions lists the sessions of the workspace named by cwd, or without
// cwd those of every workspace this agent knows (knownDirs), most recently
// updated first; all of them, in one page.
func (s *Server) ListSessions(ctx context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	var list []SessionSummary
	if p.Cwd != nil && *p.Cwd != "" {
		if !filepath.IsAbs(*p.Cwd) {
			return sdk.ListSessionsResponse{}, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("cwd %q is not an absolute path", *p.Cwd)})
		}
		l, err := s.backend.ListSessions(ctx, *p.Cwd)
		if err != nil {
			return sdk.ListSessionsResponse{}, err
		}
		for i := range l {
			l[i].Cwd = *p.Cwd
		}
		list = l
	} else {
		for _, dir := range s.knownDirs("") {
			l, err := s.backend.ListSessions(ctx, dir)
			if err != nil {
				s.log.Warn("acp: session/list", "cwd", dir, "error", err)
				continue
			}
			for i := range l {
				l[i].Cwd = dir
			}
			list = append(list, l...)
		}
		slices.SortStableFunc(list, func(a, b SessionSummary) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
	}
	out := sdk.ListSessionsResponse{Sessions: []sdk.SessionInfo{}}
	for _, l := range list {
		info := sdk.SessionInfo{SessionId: sdk.SessionId(l.ID), Cwd: l.Cwd,
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
	ss, err := s.open(ctx, p.Cwd, string(p.SessionId), false, p.McpServers)
	if err != nil {
		return sdk.ResumeSessionResponse{}, err
	}
	opts, m := s.settings(ss)
	return sdk.ResumeSessionResponse{ConfigOptions: opts, Modes: m}, nil
}

// knownDirs are the workspaces a request without cwd reaches: first, when
// given, the one of session id; then the process's working directory (an
// editor starts its agent in the project), then every workspace a session
// was opened in on this connection.
func (s *Server) knownDirs(id string) []string {
	s.mu.Lock()
	var dirs []string
	if d := s.cwds[id]; d != "" {
		dirs = append(dirs, d)
	}
	if s.home != "" {
		dirs = append(dirs, s.home)
	}
	var rest []string
	for _, d := range s.cwds {
		rest = append(rest, d)
	}
	s.mu.Unlock()
	slices.Sort(rest)
	dirs = append(dirs, rest...)
	seen := map[string]bool{}
	out := dirs[:0]
	for _, d := range dirs {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// methodSessionDelete is stable since schema 1.21; the SDK has no name for
// it.
const methodSessionDelete = "session/delete"

// deleteSession answers session/delete: the session, closed first if it is
// open on this connection, leaves its workspace's list (docs/acp.md says
// where it goes). A session no known workspace has succeeds silently, as
// the spec asks.
func (s *Server) deleteSession(ctx context.Context, params json.RawMessage) any {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.SessionID == "" {
		return sdk.NewInvalidParams(map[string]any{"error": "session/delete needs a sessionId"})
	}
	dirs := s.knownDirs(p.SessionID)
	s.drop(p.SessionID)
	for _, dir := range dirs {
		found, err := s.backend.DeleteSession(ctx, dir, p.SessionID)
		if err != nil {
			return err
		}
		if found {
			break
		}
	}
	return map[string]any{}
}

// requestError is err as a JSON-RPC error object.
func requestError(err error) *sdk.RequestError {
	var re *sdk.RequestError
	if errors.As(err, &re) {
		return re
	}
	return sdk.NewInternalError(map[string]any{"error": err.Error()})
}

// initialize answers the client's initialize: the SDK's answer, with what
// its types lack (sessionCapabilities.delete), and the client's
// capabilities kept, with the ones the SDK's types lack
// (session.compaction, session.configOptions.boolean). A request the SDK's
// types cannot read goes to the SDK, which answers its error.
func (s *Server) initialize(m rpcMessage) bool {
	var p sdk.InitializeRequest
	if json.Unmarshal(m.Params, &p) != nil || p.Validate() != nil {
		return false
	}
	var extra struct {
		ClientCapabilities struct {
			Session struct {
				Compaction    json.RawMessage `json:"compaction"`
				ConfigOptions *struct {
					Boolean json.RawMessage `json:"boolean"`
				} `json:"configOptions"`
			} `json:"session"`
		} `json:"clientCapabilities"`
	}
	_ = json.Unmarshal(m.Params, &extra)
	sess := extra.ClientCapabilities.Session
	s.compaction.Store(present(sess.Compaction))
	caps := ClientCaps{ReadTextFile: p.ClientCapabilities.Fs.ReadTextFile, WriteTextFile: p.ClientCapabilities.Fs.WriteTextFile,
		Terminal: p.ClientCapabilities.Terminal, BooleanConfigOptions: sess.ConfigOptions != nil && present(sess.ConfigOptions.Boolean)}
	s.caps.Store(&caps)
	resp, err := s.Initialize(context.Background(), p)
	if err != nil {
		s.reply(m.ID, err)
		return true
	}
	var obj map[string]any
	b, err := json.Marshal(resp)
	if err == nil {
		err = json.Unmarshal(b, &obj)
	}
	if err != nil {
		s.reply(m.ID, err)
		return true
	}
	if ac, ok := obj["agentCapabilities"].(map[string]any); ok {
		if sc, ok := ac["sessionCapabilities"].(map[string]any); ok {
			sc["delete"] = map[string]any{}
		}
	}
	s.reply(m.ID, obj)
	return true
}

// present says whether a capability object was given (not absent, not
// null).
func present(raw json.RawMessage) bool {
	c := bytes.TrimSpace(raw)
	return len(c) > 0 && !bytes.Equal(c, []byte("null"))
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
