package lsptest

import (
	"bufio"
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

// Msg is any JSON-RPC message as the editor sees it.
type Msg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Error is a JSON-RPC error object.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return fmt.Sprintf("code %d: %s", e.Code, e.Message) }

// Editor is the fake editor.
type Editor struct {
	t    testing.TB
	conn net.Conn

	wmu    sync.Mutex // serialises frames
	nextID atomic.Int64

	// mu guards the fields below.
	mu       sync.Mutex
	pending  map[string]chan Msg // outstanding calls by id
	notes    []Msg               // notifications from the server
	requests []Msg               // requests from the server
	stray    []Msg               // responses to no call (e.g. parse errors, id null)
	changed  chan struct{}       // closed and replaced on every arrival
	answer   func(method string, params json.RawMessage) (any, *Error)
	eof      bool

	readers conc.WaitGroup
}

func NewEditor(t testing.TB, conn net.Conn) *Editor {
	e := &Editor{t: t, conn: conn, pending: map[string]chan Msg{}, changed: make(chan struct{})}
	e.answer = func(method string, _ json.RawMessage) (any, *Error) {
		if method == "window/showMessageRequest" {
			return nil, nil // dismissed
		}
		return nil, nil
	}
	e.readers.Go(e.readLoop)
	return e
}

// Answer sets how the editor answers server requests.
func (e *Editor) Answer(f func(method string, params json.RawMessage) (any, *Error)) {
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
		var m Msg
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

func (e *Editor) receive(m Msg) {
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

// Frame returns body framed with Content-Length.
func Frame(body []byte) []byte {
	return append([]byte(fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body))), body...)
}

func (e *Editor) writeJSON(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		e.t.Fatalf("editor: marshal: %v", err)
	}
	e.WriteRaw(Frame(b))
}

// Go sends a request and returns the channel its response arrives on, and its id.
func (e *Editor) Go(method string, params any) (<-chan Msg, int64) {
	id := e.nextID.Add(1)
	ch := make(chan Msg, 1)
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
func (e *Editor) Call(method string, params, result any) *Error {
	e.t.Helper()
	ch, _ := e.Go(method, params)
	return e.Wait(method, ch, result)
}

// Wait waits (5s) for the response on ch, a channel from Go; method names
// the request in failures.
func (e *Editor) Wait(method string, ch <-chan Msg, result any) *Error {
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
func (e *Editor) Command(command string, args any, result any) *Error {
	e.t.Helper()
	params := map[string]any{"command": command}
	if args != nil {
		params["arguments"] = []any{args}
	}
	return e.Call("workspace/executeCommand", params, result)
}

// Notify sends a notification.
func (e *Editor) Notify(method string, params any) {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	e.writeJSON(msg)
}

// State is what Await predicates look at.
type State struct {
	Notes    []Msg // notifications from the server
	Requests []Msg // requests from the server
	Stray    []Msg // responses to no call
	EOF      bool  // the server closed the connection
}

// Of returns the notifications (or server requests) with this method.
func Of(ms []Msg, method string) []Msg {
	var out []Msg
	for _, m := range ms {
		if m.Method == method {
			out = append(out, m)
		}
	}
	return out
}

// Await waits until pred holds for the recorded traffic, failing the test
// after timeout with what was seen.
func (e *Editor) Await(pred func(s State) bool, timeout time.Duration) State {
	e.t.Helper()
	deadline := time.After(timeout)
	for {
		e.mu.Lock()
		s := State{
			Notes: append([]Msg(nil), e.notes...), Requests: append([]Msg(nil), e.requests...),
			Stray: append([]Msg(nil), e.stray...), EOF: e.eof,
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
			for _, n := range s.Notes {
				methods = append(methods, n.Method+" "+string(n.Params))
			}
			e.t.Fatalf("condition not met within %v; notifications:\n%s", timeout, strings.Join(methods, "\n"))
			return s
		}
	}
}

// Snapshot returns the recorded traffic now.
func (e *Editor) Snapshot() State {
	return e.Await(func(State) bool { return true }, time.Second)
}

// Close closes the editor's end of the pipe.
func (e *Editor) Close() {
	_ = e.conn.Close()
	e.readers.Wait()
}

// Expect registers a response channel for a request id that the test writes
// itself with WriteRaw (e.g. pipelined frames).
func (e *Editor) Expect(id string) <-chan Msg {
	ch := make(chan Msg, 1)
	e.mu.Lock()
	e.pending[id] = ch
	e.mu.Unlock()
	return ch
}

// Hangup closes the editor's end of the pipe without waiting for the read
// loop, as an editor that dies does.
func (e *Editor) Hangup() { _ = e.conn.Close() }
