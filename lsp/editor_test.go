package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sourcegraph/conc"
)

// This file is the fake editor of the integration tests (the gopls
// pattern): an LSP client written independently of jsonrpc2, speaking
// Content-Length framed JSON over a net.Pipe to the real Server, recording
// every notification and server request so tests can Await them.

// wireMsg is any JSON-RPC message as the editor sees it.
type wireMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("code %d: %s", e.Code, e.Message) }

// Editor is the fake editor.
type Editor struct {
	t    testing.TB
	conn net.Conn

	wmu    sync.Mutex // serialises frames
	nextID atomic.Int64

	// mu guards the fields below.
	mu       sync.Mutex
	pending  map[string]chan wireMsg // outstanding calls by id
	notes    []wireMsg               // notifications from the server
	requests []wireMsg               // requests from the server
	stray    []wireMsg               // responses to no call (e.g. parse errors, id null)
	changed  chan struct{}           // closed and replaced on every arrival
	answer   func(method string, params json.RawMessage) (any, *rpcError)
	eof      bool

	readers conc.WaitGroup
}

func newEditor(t testing.TB, conn net.Conn) *Editor {
	e := &Editor{t: t, conn: conn, pending: map[string]chan wireMsg{}, changed: make(chan struct{})}
	e.answer = func(method string, _ json.RawMessage) (any, *rpcError) {
		if method == methodShowMessageRequest {
			return nil, nil // dismissed
		}
		return nil, nil
	}
	e.readers.Go(e.readLoop)
	return e
}

// Answer sets how the editor answers server requests.
func (e *Editor) Answer(f func(method string, params json.RawMessage) (any, *rpcError)) {
	e.mu.Lock()
	e.answer = f
	e.mu.Unlock()
}

func (e *Editor) readLoop() {
	r := bufio.NewReader(e.conn)
	tp := textproto.NewReader(r)
	for {
		hdr, err := tp.ReadMIMEHeader()
		if err != nil {
			e.setEOF()
			return
		}
		n, err := strconv.Atoi(hdr.Get("Content-Length"))
		if err != nil {
			e.t.Errorf("editor: bad Content-Length %q", hdr.Get("Content-Length"))
			e.setEOF()
			return
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			e.setEOF()
			return
		}
		var m wireMsg
		if err := json.Unmarshal(body, &m); err != nil {
			e.t.Errorf("editor: server sent invalid JSON %q: %v", body, err)
			continue
		}
		e.receive(m)
	}
}

func (e *Editor) setEOF() {
	e.mu.Lock()
	e.eof = true
	e.broadcastLocked()
	e.mu.Unlock()
}

func (e *Editor) broadcastLocked() {
	close(e.changed)
	e.changed = make(chan struct{})
}

func (e *Editor) receive(m wireMsg) {
	e.mu.Lock()
	defer e.mu.Unlock()
	defer e.broadcastLocked()
	switch {
	case m.Method != "" && len(m.ID) > 0:
		e.requests = append(e.requests, m)
		answer := e.answer
		// Answer off the read loop, as a real editor would (a dialog).
		e.readers.Go(func() {
			result, rerr := answer(m.Method, m.Params)
			reply := map[string]any{"jsonrpc": "2.0", "id": m.ID}
			if rerr != nil {
				reply["error"] = rerr
			} else {
				reply["result"] = result
			}
			e.writeJSON(reply)
		})
	case m.Method != "":
		e.notes = append(e.notes, m)
	default:
		if ch, ok := e.pending[string(m.ID)]; ok {
			delete(e.pending, string(m.ID))
			ch <- m
			return
		}
		e.stray = append(e.stray, m)
	}
}

// WriteRaw writes bytes to the server as they are.
func (e *Editor) WriteRaw(b []byte) {
	e.wmu.Lock()
	defer e.wmu.Unlock()
	if _, err := e.conn.Write(b); err != nil {
		e.t.Logf("editor: write: %v", err)
	}
}

// frame returns body framed with Content-Length.
func frame(body []byte) []byte {
	return append([]byte(fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body))), body...)
}

func (e *Editor) writeJSON(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		e.t.Fatalf("editor: marshal: %v", err)
	}
	e.WriteRaw(frame(b))
}

// Go sends a request and returns the channel its response arrives on, and its id.
func (e *Editor) Go(method string, params any) (<-chan wireMsg, int64) {
	id := e.nextID.Add(1)
	ch := make(chan wireMsg, 1)
	e.mu.Lock()
	e.pending[strconv.FormatInt(id, 10)] = ch
	e.mu.Unlock()
	msg := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	e.writeJSON(msg)
	return ch, id
}

// Call sends a request and waits (5s) for its response. It returns the
// JSON-RPC error, if any; the result is decoded into result when non-nil.
func (e *Editor) Call(method string, params, result any) *rpcError {
	e.t.Helper()
	ch, _ := e.Go(method, params)
	return e.wait(method, ch, result)
}

func (e *Editor) wait(method string, ch <-chan wireMsg, result any) *rpcError {
	e.t.Helper()
	select {
	case m := <-ch:
		if m.Error != nil {
			return m.Error
		}
		if result != nil {
			if err := json.Unmarshal(m.Result, result); err != nil {
				e.t.Fatalf("%s: decoding result %s: %v", method, m.Result, err)
			}
		}
		return nil
	case <-time.After(5 * time.Second):
		e.t.Fatalf("%s: no response within 5s", method)
		return nil
	}
}

// Command runs workspace/executeCommand; args nil sends no arguments.
func (e *Editor) Command(command string, args any, result any) *rpcError {
	e.t.Helper()
	params := map[string]any{"command": command}
	if args != nil {
		params["arguments"] = []any{args}
	}
	return e.Call(methodExecuteCommand, params, result)
}

// Notify sends a notification.
func (e *Editor) Notify(method string, params any) {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	e.writeJSON(msg)
}

// editorState is what Await predicates look at.
type editorState struct {
	notes    []wireMsg
	requests []wireMsg
	stray    []wireMsg
	eof      bool
}

// of returns the notifications (or server requests) with this method.
func of(ms []wireMsg, method string) []wireMsg {
	var out []wireMsg
	for _, m := range ms {
		if m.Method == method {
			out = append(out, m)
		}
	}
	return out
}

// Await waits until pred holds for the recorded traffic, failing the test
// after timeout with what was seen.
func (e *Editor) Await(pred func(s editorState) bool, timeout time.Duration) editorState {
	e.t.Helper()
	deadline := time.After(timeout)
	for {
		e.mu.Lock()
		s := editorState{
			notes: append([]wireMsg(nil), e.notes...), requests: append([]wireMsg(nil), e.requests...),
			stray: append([]wireMsg(nil), e.stray...), eof: e.eof,
		}
		changed := e.changed
		e.mu.Unlock()
		if pred(s) {
			return s
		}
		select {
		case <-changed:
		case <-deadline:
			var methods []string
			for _, n := range s.notes {
				methods = append(methods, n.Method+" "+string(n.Params))
			}
			e.t.Fatalf("condition not met within %v; notifications:\n%s", timeout, strings.Join(methods, "\n"))
			return s
		}
	}
}

// Snapshot returns the recorded traffic now.
func (e *Editor) Snapshot() editorState {
	return e.Await(func(editorState) bool { return true }, time.Second)
}

// Close closes the editor's end of the pipe.
func (e *Editor) Close() {
	_ = e.conn.Close()
	e.readers.Wait()
}

// env is one test's server, backend and editor.
type env struct {
	*Editor
	backend *testBackend
	server  *Server
	code    chan int
	cancel  context.CancelFunc
}

// runServer starts the real Server on one end of a net.Pipe and the fake
// editor on the other. The server's exit code arrives on env.code.
func runServer(t testing.TB, opts ...Option) *env {
	t.Helper()
	b := newTestBackend()
	srvEnd, edEnd := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	factory := func(ctx context.Context, o BackendOptions) (Backend, error) {
		b.setOptions(o)
		if b.factoryErr != nil {
			return nil, b.factoryErr
		}
		return b, nil
	}
	s := NewServer(factory, append([]Option{WithVersion("test")}, opts...)...)
	e := &env{Editor: newEditor(t, edEnd), backend: b, server: s, code: make(chan int, 1), cancel: cancel}
	var wg conc.WaitGroup
	wg.Go(func() { e.code <- s.Serve(ctx, srvEnd) })
	t.Cleanup(func() {
		cancel()
		e.Editor.Close()
		_ = srvEnd.Close()
		wg.Wait()
	})
	return e
}

// script changes the fake backend's behaviour under its lock.
func (e *env) script(f func(b *testBackend)) {
	e.backend.mu.Lock()
	defer e.backend.mu.Unlock()
	f(e.backend)
}

// slowCompact sends soba.compact to a backend whose compaction waits until
// the test releases it.
func (e *env) slowCompact() (<-chan wireMsg, int64) {
	e.script(func(b *testBackend) { b.slowCompact = true })
	return e.Go(methodExecuteCommand, map[string]any{"command": CommandCompact})
}

// ended checks that the server exited with code and closed the backend
// exactly once.
func (e *env) ended(code int) {
	e.t.Helper()
	if got := e.exitCode(wait); got != code {
		e.t.Errorf("exit code = %d, want %d", got, code)
	}
	if _, _, _, closed := e.backend.snapshot(); closed != 1 {
		e.t.Errorf("backend closed %d times, want 1", closed)
	}
}

// initialize runs initialize + initialized; workDone says whether the
// editor announces window.workDoneProgress.
func (e *env) initialize(workDone bool) map[string]any {
	e.t.Helper()
	var result map[string]any
	params := map[string]any{
		"processId":    nil,
		"rootUri":      "file:///tmp/soba-ws",
		"clientInfo":   map[string]any{"name": "fake-editor"},
		"capabilities": map[string]any{"window": map[string]any{"workDoneProgress": workDone}},
		"initializationOptions": map[string]any{
			"model": map[string]any{"name": "test"},
		},
	}
	if err := e.Call(methodInitialize, params, &result); err != nil {
		e.t.Fatalf("initialize: %v", err)
	}
	e.Notify(methodInitialized, map[string]any{})
	return result
}

// exitCode waits for Serve to return.
func (e *env) exitCode(timeout time.Duration) int {
	e.t.Helper()
	select {
	case c := <-e.code:
		return c
	case <-time.After(timeout):
		e.t.Fatalf("server did not exit within %v", timeout)
		return -1
	}
}
