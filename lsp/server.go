// Package lsp is soba-lsp's language server: the JSON-RPC transport over a
// byte stream, the initialize/shutdown/exit lifecycle, the workspace commands
// of PROTOCOL.md, work-done progress for compaction barriers, and the
// notifications (soba/event, soba/budget, soba/compaction) the editor shows.
//
// The server drives a Backend created at initialize by a BackendFactory
// (the composition root, package app, makes the real one over the agent),
// and hands that backend a Notifier and an Approver that speak to the editor.
package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/conc"
	"github.com/sourcegraph/conc/panics"
	"go.lsp.dev/jsonrpc2"

	"github.com/soba-agent/soba-lsp/internal/text"
	"github.com/soba-agent/soba-lsp/lsp/protocol"
)

// serverState is the lifecycle of one connection.
type serverState int

const (
	stateCreated      serverState = iota // waiting for initialize
	stateInitializing                    // initialize answered, initialized not yet seen
	stateInitialized                     // serving
	stateShutdown                        // shutdown answered; only exit is accepted
)

func (s serverState) String() string {
	return [...]string{"created", "initializing", "initialized", "shutdown"}[s]
}

// Exit codes of Serve (PROTOCOL.md "Process").
const (
	ExitClean      = 0 // exit (or end of input) after shutdown
	ExitNoShutdown = 1 // exit or end of input without a prior shutdown
)

// Server is one soba-lsp language server. Serve runs it on one connection.
type Server struct {
	factory BackendFactory
	version string
	log     *slog.Logger

	// Tunables, set by options (tests shorten them).
	budgetInterval time.Duration
	flushTimeout   time.Duration
	closeTimeout   time.Duration
	createTimeout  time.Duration
	maxFrame       int64 // the largest message read (R-W7)

	conn     jsonrpc2.Conn
	baseCtx  context.Context // the connection's lifetime; parent of every request context
	out      *outbox
	progress *progressTracker
	budgets  *budgetCoalescer

	exited    chan struct{} // closed by the exit notification
	exitOnce  sync.Once
	inputDone chan struct{} // closed when the input ends or breaks
	inputOnce sync.Once

	// inflightMu guards inflight: the cancel function of every request being
	// handled, by id, for $/cancelRequest.
	inflightMu sync.Mutex
	inflight   map[jsonrpc2.ID]context.CancelFunc

	// mu guards state, backend and shutdownSeen. The backend pointer is set
	// once, by initialize, which runs inline on the read loop before any
	// request that could read it.
	mu           sync.Mutex
	state        serverState
	backend      Backend
	shutdownSeen bool

	closeOnce sync.Once
	closeErr  error
}

// Option configures a Server.
type Option func(*Server)

// WithVersion sets serverInfo.version.
func WithVersion(v string) Option { return func(s *Server) { s.version = v } }

// WithLogger sets the logger for server-side diagnostics (never stdout).
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// WithBudgetInterval sets the minimum spacing of soba/budget notifications
// (default 100ms, i.e. at most ~10 a second).
func WithBudgetInterval(d time.Duration) Option { return func(s *Server) { s.budgetInterval = d } }

// WithMaxMessage sets the largest message read from the editor (default
// maxFrameBytes); a larger one is skipped unread and refused (R-W7).
func WithMaxMessage(n int64) Option { return func(s *Server) { s.maxFrame = n } }

// NewServer returns a server that creates its backend with factory at
// initialize.
func NewServer(factory BackendFactory, opts ...Option) *Server {
	s := &Server{
		factory:        factory,
		version:        "dev",
		log:            slog.New(slog.DiscardHandler),
		budgetInterval: 100 * time.Millisecond,
		flushTimeout:   2 * time.Second,
		closeTimeout:   250 * time.Millisecond,
		createTimeout:  5 * time.Second,
		maxFrame:       maxFrameBytes,
		exited:         make(chan struct{}),
		inflight:       map[jsonrpc2.ID]context.CancelFunc{},
		inputDone:      make(chan struct{}),
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Serve runs the server on rwc (Content-Length framed JSON-RPC) until the
// client sends exit, the input ends, or ctx is cancelled, and returns the
// process exit code: 0 after shutdown, 1 without it. On the way out the
// backend is closed (so no appended entry is lost) and queued notifications
// are flushed. Serve may be called once per Server.
func (s *Server) Serve(ctx context.Context, rwc io.ReadWriteCloser) int {
	// Requests live in connCtx; the writer has its own context so that it can
	// still flush after connCtx (or the caller's ctx) is cancelled.
	connCtx, cancelConn := context.WithCancel(ctx)
	defer cancelConn()
	writerCtx, cancelWriter := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWriter()

	input := &inputTail{ReadWriteCloser: rwc}
	stream := &tolerantStream{
		Stream: jsonrpc2.NewHeaderStream(input), // for writing; frames reads
		frames: newBoundedFrames(input, s.maxFrame),
		skipped: func(method string, err error) {
			s.log.Warn("a notification was skipped", "method", text.Clip(method, maxEchoBytes), "err", err)
		},
		onReadEnd: func(err error) {
			if isCleanEnd(err) {
				s.log.Debug("input ended", "err", err)
			} else {
				// A broken frame cannot be resynchronised: say why the
				// server stops, at a level the default shows.
				s.log.Error("the editor's input is broken; the server stops reading", "err", err, "near", input.last())
			}
			s.inputOnce.Do(func() { close(s.inputDone) })
		},
	}
	s.conn = jsonrpc2.NewConn(stream, jsonrpc2.WithCodec(wireCodec{}))
	s.out = newOutbox(s.conn, s.log)
	s.progress = newProgressTracker(s.conn, s.out, s.createTimeout, s.log)
	s.budgets = newBudgetCoalescer(s.budgetInterval, func(raw jsonrpc2.RawMessage) {
		s.out.notify(MethodBudget, raw)
	})

	var wg conc.WaitGroup
	wg.Go(func() { s.out.run(writerCtx) })

	s.baseCtx = connCtx
	s.conn.Go(connCtx, s.handle)

	select {
	case <-s.exited:
	case <-s.inputDone:
	case <-s.conn.Done():
	case <-ctx.Done():
	}

	// Teardown order matters: cancel every running request (a compaction
	// ends as cancelled), close the backend (it flushes the transcript and
	// may still report), send the last budget and everything queued, then
	// close the connection.
	cancelConn()
	s.closeBackend()
	s.budgets.stop()
	s.out.flush(s.flushTimeout)
	s.out.close()
	s.closeConn()
	cancelWriter()
	select {
	case <-s.out.done:
		if r := wg.WaitAndRecover(); r != nil {
			s.log.Error("notification writer panicked", "panic", r.String())
		}
	case <-time.After(s.closeTimeout):
		s.log.Warn("notification writer still blocked on output; leaving it to the exit")
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutdownSeen {
		return ExitClean
	}
	return ExitNoShutdown
}

// closeConn closes the connection (the client sees the end of our output at
// once), but waits only briefly for it to finish: Close also waits for the
// read goroutine, which may sit in a read of a stdin that cannot be
// interrupted; the process exit ends that read.
func (s *Server) closeConn() {
	done := make(chan struct{})
	var wg conc.WaitGroup
	wg.Go(func() {
		defer close(done)
		if err := s.conn.Close(); err != nil {
			s.log.Debug("closing connection", "err", err)
		}
	})
	select {
	case <-done:
		wg.Wait()
	case <-time.After(s.closeTimeout):
		s.log.Debug("reader still blocked on input; leaving it to the exit")
	}
}

// closeBackend closes the backend once, if one was created.
func (s *Server) closeBackend() error {
	s.mu.Lock()
	b := s.backend
	s.mu.Unlock()
	if b == nil {
		return nil
	}
	s.closeOnce.Do(func() {
		if r := panics.Try(func() { s.closeErr = b.Close() }); r != nil {
			s.closeErr = r.AsError()
		}
		if s.closeErr != nil {
			s.log.Error("closing backend", "err", s.closeErr)
		}
	})
	return s.closeErr
}

// inlineCall reports the requests handled on the read loop, in wire order: the lifecycle
// (so a pipelined shutdown is answered before exit is read) and every
// notification. Every other request is released with jsonrpc2.Async so that
// a long command never holds up the connection.
func inlineCall(method string) bool {
	return method == MethodInitialize || method == MethodShutdown
}

// handle is the connection's jsonrpc2 handler. It never lets a panic or a
// notification error reach jsonrpc2, which would end the connection for both.
//
// Each request gets its own context derived from the connection's, not from
// jsonrpc2's pooled request context: deriving from that one (as
// jsonrpc2.CancelHandler does) starts a stdlib watcher goroutine that can
// outlive the recycled request and panic (see docs/dependencies.md).
func (s *Server) handle(rpcCtx context.Context, req *jsonrpc2.Request) (result any, err error) {
	ctx, cancel := context.WithCancel(s.baseCtx)
	defer cancel()
	if req.IsCall() {
		// Registered before the read loop moves on, so a $/cancelRequest
		// that follows this request always finds it.
		id := req.ID()
		s.inflightMu.Lock()
		s.inflight[id] = cancel
		s.inflightMu.Unlock()
		defer func() {
			s.inflightMu.Lock()
			delete(s.inflight, id)
			s.inflightMu.Unlock()
		}()
		if !inlineCall(req.Method()) {
			jsonrpc2.Async(rpcCtx)
		}
	}
	// Read the method after Async: the release re-homes the borrowed bytes.
	method := strings.Clone(req.Method())
	if r := panics.Try(func() { result, err = s.dispatch(ctx, method, req) }); r != nil {
		s.log.Error("handler panicked", "method", method, "panic", r.String())
		result, err = nil, jsonrpc2.Errorf(jsonrpc2.InternalError, "%s: internal error: %v", method, r.Value)
	}
	if !req.IsCall() {
		if err != nil {
			s.log.Warn("notification failed", "method", method, "err", err)
		}
		return nil, nil
	}
	return result, err
}

// Methods handled by the server.
const (
	MethodInitialize         = "initialize"
	MethodInitialized        = "initialized"
	MethodShutdown           = "shutdown"
	MethodExit               = "exit"
	MethodCancelRequest      = "$/cancelRequest"
	MethodSetTrace           = "$/setTrace"
	MethodExecuteCommand     = "workspace/executeCommand"
	MethodDidChangeConfig    = "workspace/didChangeConfiguration"
	MethodDidOpen            = "textDocument/didOpen"
	MethodDidChange          = "textDocument/didChange"
	MethodDidSave            = "textDocument/didSave"
	MethodDidClose           = "textDocument/didClose"
	MethodWorkDoneCancel     = "window/workDoneProgress/cancel"
	MethodWorkDoneCreate     = "window/workDoneProgress/create"
	MethodProgress           = "$/progress"
	MethodLogMessage         = "window/logMessage"
	MethodShowMessage        = "window/showMessage"
	MethodShowMessageRequest = "window/showMessageRequest"
	MethodEvent              = "soba/event"
	MethodBudget             = "soba/budget"
	MethodCompaction         = "soba/compaction"
)

// dispatch routes one message by lifecycle state and method.
func (s *Server) dispatch(ctx context.Context, method string, req *jsonrpc2.Request) (any, error) {
	params := req.Params()
	switch method {
	case MethodInitialize:
		return s.initialize(params)
	case MethodInitialized:
		return nil, s.initialized()
	case MethodShutdown:
		return s.shutdown()
	case MethodExit:
		s.exitOnce.Do(func() { close(s.exited) })
		return nil, nil
	case MethodCancelRequest:
		return nil, s.cancelRequest(params)
	case MethodSetTrace:
		return nil, nil
	}

	s.mu.Lock()
	state, b := s.state, s.backend
	s.mu.Unlock()
	switch state {
	case stateCreated:
		if req.IsCall() {
			return nil, jsonrpc2.Errorf(jsonrpc2.ServerNotInitialized, "%s: server not initialized", method)
		}
		return nil, nil
	case stateShutdown:
		if req.IsCall() {
			return nil, jsonrpc2.Errorf(jsonrpc2.InvalidRequest, "%s: server is shut down", method)
		}
		return nil, nil
	}

	switch method {
	case MethodExecuteCommand:
		return s.executeCommand(ctx, b, params)
	case MethodDidChangeConfig:
		return nil, s.didChangeConfiguration(b, params)
	case MethodDidOpen, MethodDidChange, MethodDidSave, MethodDidClose:
		return nil, documentSync(b, method, params)
	case MethodWorkDoneCancel:
		return nil, s.progress.cancelFromClient(params)
	}
	if req.IsCall() {
		return nil, jsonrpc2.Errorf(jsonrpc2.MethodNotFound, "%s: method not supported by soba-lsp", method)
	}
	return nil, nil
}

// executeParams is workspace/executeCommand's params; arguments stay raw
// for strict decoding.
type executeParams struct {
	Command       string            `json:"command"`
	Arguments     []json.RawMessage `json:"arguments"`
	WorkDoneToken json.RawMessage   `json:"workDoneToken"`
}

func (s *Server) executeCommand(ctx context.Context, b Backend, raw jsonrpc2.RawMessage) (any, error) {
	var p executeParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "%s: bad params: %v", MethodExecuteCommand, err)
	}
	run, ok := commandTable[p.Command]
	if !ok {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "unknown command %s (soba-lsp knows %s)", echo(json.RawMessage(strconv.Quote(p.Command))), strings.Join(knownCommands, ", "))
	}
	if p.Command == protocol.CommandCompact && len(p.WorkDoneToken) > 0 && !isJSONNull(p.WorkDoneToken) {
		// The client brought its own progress token: the barrier of this
		// explicit compaction reports on it (PROTOCOL.md $/progress).
		release := s.progress.offerToken(p.WorkDoneToken)
		defer release()
	}
	var result any
	var err error
	if r := panics.Try(func() { result, err = run(ctx, b, p.Command, p.Arguments) }); r != nil {
		s.log.Error("command panicked", "command", p.Command, "panic", r.String())
		return nil, jsonrpc2.Errorf(jsonrpc2.InternalError, "%s: internal error: %v", p.Command, r.Value)
	}
	// The answer goes out directly, the notifications through the outbox:
	// let those the command queued (a compaction's soba/compaction end and
	// $/progress end, a budget) reach the editor first, so a client never
	// hears an answer before the events it reports.
	select {
	case <-s.out.reached():
	case <-ctx.Done():
	}
	if err != nil {
		return nil, replyError(ctx, p.Command, err)
	}
	enc, err := encodeJSON(result)
	if err != nil {
		return nil, jsonrpc2.Errorf(jsonrpc2.InternalError, "%s: encoding result: %v", p.Command, err)
	}
	return enc, nil
}

// cancelRequest handles $/cancelRequest with a numeric or string id: the
// named request's context is cancelled.
func (s *Server) cancelRequest(raw jsonrpc2.RawMessage) error {
	var p struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return fmt.Errorf("%s: bad params: %w", MethodCancelRequest, err)
	}
	id, err := parseID(p.ID)
	if err != nil {
		return fmt.Errorf("%s: %w", MethodCancelRequest, err)
	}
	s.inflightMu.Lock()
	cancel := s.inflight[id]
	s.inflightMu.Unlock()
	if cancel != nil {
		cancel()
	}
	return nil
}

// parseID reads a JSON-RPC id: an integer or a string.
func parseID(raw json.RawMessage) (jsonrpc2.ID, error) {
	var n int64
	if err := json.Unmarshal(raw, &n); err == nil {
		return jsonrpc2.NewNumberID(n), nil
	}
	var str string
	if err := json.Unmarshal(raw, &str); err == nil {
		return jsonrpc2.NewStringID(str), nil
	}
	return jsonrpc2.ID{}, errors.New("id must be an integer or a string, got " + string(raw))
}
