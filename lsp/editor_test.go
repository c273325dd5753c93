package lsp

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/soba-agent/soba-lsp/lsp/lsptest"
	"github.com/soba-agent/soba-lsp/lsp/protocol"
)

// env is one test's server, backend and editor.
type env struct {
	*lsptest.Editor
	t       testing.TB
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
	e := &env{Editor: lsptest.NewEditor(t, edEnd), t: t, backend: b, server: s, code: make(chan int, 1), cancel: cancel}
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
func (e *env) slowCompact() (<-chan lsptest.Msg, int64) {
	e.script(func(b *testBackend) { b.slowCompact = true })
	return e.Go(MethodExecuteCommand, map[string]any{"command": protocol.CommandCompact})
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
	if err := e.Call(MethodInitialize, params, &result); err != nil {
		e.t.Fatalf("initialize: %v", err)
	}
	e.Notify(MethodInitialized, map[string]any{})
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
