package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"

	sdk "github.com/coder/acp-go-sdk"
)

// The Go SDK (v0.13.0) predates parts of the stable schema 1.21 this server
// speaks: `session/delete` and its capability, the client's
// `session.configOptions.boolean` and the unstable `session.compaction`
// capabilities. So the server reads the client's lines on the way in and
// answers `initialize` and `session/delete` itself, writing whole lines
// through the writer the SDK shares; every other line goes to the SDK as it
// came.

// interceptor passes the client's lines through to the SDK, except the ones
// handle consumes (it answers them itself).
type interceptor struct {
	br     *bufio.Reader
	handle func(line []byte) bool
	// pending are bytes read and not yet returned; long is set while a line
	// longer than the buffer passes through uninspected.
	pending []byte
	long    bool
	err     error
}

// maxInterceptLine bounds the line inspected; a longer one passes to the SDK
// as it is (the SDK answers it or drops it).
const maxInterceptLine = 1 << 20

func newInterceptor(r io.Reader, handle func([]byte) bool) *interceptor {
	return &interceptor{br: bufio.NewReaderSize(r, maxInterceptLine), handle: handle}
}

func (r *interceptor) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		chunk, err := r.br.ReadSlice('\n')
		line := append([]byte(nil), chunk...)
		switch {
		case err == bufio.ErrBufferFull:
			r.long = true
			r.pending = line
			continue
		case err != nil:
			r.err = err
		}
		if r.long {
			// The end of a long line: passed through like its start.
			r.long = false
			r.pending = line
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 && r.handle(line) {
			continue
		}
		r.pending = line
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

// rpcMessage is the part of a JSON-RPC message the interceptor reads.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// intercept answers the requests the SDK does not know (see above); it runs
// on the SDK's reading goroutine, so an answer is written before any later
// line of the client is handled.
func (s *Server) intercept(line []byte) bool {
	var m rpcMessage
	if json.Unmarshal(line, &m) != nil {
		return false
	}
	if m.Method == sdk.AgentMethodSessionCancel {
		// Counted before the SDK sees it: the SDK cancels the prompt's
		// context for session/cancel as for $/cancel_request, and Prompt
		// answers the two differently.
		var p struct {
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal(m.Params, &p) == nil {
			s.mu.Lock()
			s.cancels[p.SessionID]++
			s.mu.Unlock()
		}
		return false
	}
	if len(m.ID) == 0 || bytes.Equal(m.ID, []byte("null")) {
		return false
	}
	switch m.Method {
	case "initialize":
		return s.initialize(m)
	case methodSessionDelete:
		s.reply(m.ID, s.deleteSession(context.Background(), m.Params))
		return true
	}
	return false
}

// reply writes the answer to the request id: a result, or an error when
// result is a *RequestError.
func (s *Server) reply(id json.RawMessage, result any) {
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	if e, ok := result.(error); ok {
		msg["error"] = requestError(e)
	} else {
		msg["result"] = result
	}
	b, err := json.Marshal(msg)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32603, "message": err.Error()}})
	}
	_, _ = s.out.Write(append(b, '\n'))
}
