package lsp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"

	"go.lsp.dev/jsonrpc2"

	"github.com/soba-agent/soba-lsp/internal/text"
)

// Bounds of what a message may carry in the fields an error echoes.
const (
	maxMethodBytes = 256 // no LSP method comes near it
	maxIDBytes     = 256 // a string id longer than this is refused, not echoed
	maxEchoBytes   = 80  // how much of a bad value an error quotes
)

// frameReader is the header stream's frame-level read (go.lsp.dev/jsonrpc2's
// headerStream has it): the raw body of the next frame, before decoding.
type frameReader interface {
	ReadFrame(ctx context.Context) ([]byte, int64, error)
}

// checkMessage decides whether body is a message the server handles. It
// returns nil for a valid one; otherwise the JSON-RPC 2.0 error to answer
// (-32700 for a body that is not JSON, -32600 for JSON that is not a valid
// request) with a message that says what is wrong, and the id to answer it
// with (the request's own when it could be read, else null). No error quotes
// more than maxEchoBytes of what was sent.
func checkMessage(body []byte) (*jsonrpc2.Error, jsonrpc2.ID) {
	msg, decodeErr := jsonrpc2.DecodeMessage(body)
	if decodeErr == nil {
		switch m := msg.(type) {
		case *jsonrpc2.Response:
			return nil, jsonrpc2.ID{}
		case *jsonrpc2.Call:
			if !idFits(m.ID()) {
				str, _ := m.ID().StringValue()
				return jsonrpc2.NewError(jsonrpc2.InvalidRequest, fmt.Sprintf(`invalid request: "id" is a string of %d bytes; at most %d are accepted`, len(str), maxIDBytes)), jsonrpc2.ID{}
			}
			if len(m.Method()) > maxMethodBytes {
				return tooLongMethod(len(m.Method())), m.ID()
			}
			return nil, jsonrpc2.ID{}
		case *jsonrpc2.Notification:
			if len(m.Method()) > maxMethodBytes {
				return tooLongMethod(len(m.Method())), jsonrpc2.ID{}
			}
			if !bytes.Contains(body, []byte(`"id"`)) {
				return nil, jsonrpc2.ID{}
			}
		}
	}
	// The slow path, for bad messages and the rare notification that
	// names an id: say what is wrong.
	invalid := func(id jsonrpc2.ID, format string, args ...any) (*jsonrpc2.Error, jsonrpc2.ID) {
		return jsonrpc2.NewError(jsonrpc2.InvalidRequest, "invalid request: "+fmt.Sprintf(format, args...)), id
	}
	if !json.Valid(body) {
		var v any
		err := json.Unmarshal(body, &v)
		return jsonrpc2.NewError(jsonrpc2.ParseError, "parse error: the message is not valid JSON: "+text.Clip(fmt.Sprint(err), 200)), jsonrpc2.ID{}
	}
	switch kind := jsonKind(body); kind {
	case "an object":
	case "an array":
		return invalid(jsonrpc2.ID{}, "batches are not used by LSP; send one message per frame")
	default:
		return invalid(jsonrpc2.ID{}, "a message must be a JSON object, got %s", kind)
	}
	var m struct {
		JSONRPC json.RawMessage `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  json.RawMessage `json:"method"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	_ = json.Unmarshal(body, &m)
	id, idProblem := readID(m.ID)
	if string(m.JSONRPC) != `"2.0"` {
		if m.JSONRPC == nil {
			return invalid(id, `the "jsonrpc" member is missing; it must be "2.0"`)
		}
		return invalid(id, `"jsonrpc" must be "2.0", got %s`, echo(m.JSONRPC))
	}
	if m.Method == nil {
		return invalid(id, `a response must carry "result" or "error" and an id, a request a "method"`)
	}
	if m.Result != nil || m.Error != nil {
		return invalid(id, `a message cannot carry both "method" and "result"/"error"`)
	}
	var method string
	if err := json.Unmarshal(m.Method, &method); err != nil {
		return invalid(id, `"method" must be a string, got %s`, echo(m.Method))
	}
	if len(method) > maxMethodBytes {
		return tooLongMethod(len(method)), id
	}
	if idProblem != "" {
		return invalid(jsonrpc2.ID{}, "%s", idProblem)
	}
	if decodeErr == nil {
		return nil, jsonrpc2.ID{} // a notification whose params name an id
	}
	return invalid(id, "%v", decodeErr)
}

func tooLongMethod(n int) *jsonrpc2.Error {
	return jsonrpc2.NewError(jsonrpc2.InvalidRequest, fmt.Sprintf(`invalid request: "method" is %d bytes long; no method is longer than %d`, n, maxMethodBytes))
}

// readID reads a request's id: an integer or a string of at most maxIDBytes.
// It returns the zero ID (null on the wire) and what is wrong otherwise; an
// absent id is a notification and fine.
func readID(raw json.RawMessage) (jsonrpc2.ID, string) {
	if raw == nil {
		return jsonrpc2.ID{}, ""
	}
	if string(raw) == "null" {
		return jsonrpc2.ID{}, `"id" is null; a request's id must be an integer or a string (leave it out for a notification)`
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err == nil {
		return jsonrpc2.NewNumberID(n), ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if len(s) > maxIDBytes {
			return jsonrpc2.ID{}, fmt.Sprintf(`"id" is a string of %d bytes; at most %d are accepted`, len(s), maxIDBytes)
		}
		return jsonrpc2.NewStringID(s), ""
	}
	return jsonrpc2.ID{}, fmt.Sprintf(`"id" must be an integer or a string, got %s`, echo(raw))
}

func idFits(id jsonrpc2.ID) bool {
	s, isString := id.StringValue()
	return !isString || len(s) <= maxIDBytes
}

// echo quotes at most maxEchoBytes of a raw JSON value.
func echo(raw json.RawMessage) string {
	if len(raw) <= maxEchoBytes {
		return string(raw)
	}
	return fmt.Sprintf("%s… (%d bytes)", text.Clip(string(raw), maxEchoBytes), len(raw))
}

// isCleanEnd reports whether a read error is the input's ordinary end (the
// editor closed the pipe, or the server closed the connection) rather than
// a broken frame.
func isCleanEnd(err error) bool {
	return err == nil || errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) ||
		errors.Is(err, context.Canceled) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrClosedPipe)
}

// inputTail keeps the last bytes read from the editor, so that a framing
// error that ends the server is logged with the bytes it choked on.
type inputTail struct {
	io.ReadWriteCloser

	mu   sync.Mutex
	tail []byte
}

const inputTailBytes = 120

func (t *inputTail) Read(p []byte) (int, error) {
	n, err := t.ReadWriteCloser.Read(p)
	if n > 0 {
		t.mu.Lock()
		t.tail = append(t.tail, p[:min(n, inputTailBytes)]...)
		if over := len(t.tail) - inputTailBytes; over > 0 {
			t.tail = append(t.tail[:0], t.tail[over:]...)
		}
		t.mu.Unlock()
	}
	return n, err
}

// last is the tail of the input, at most inputTailBytes.
func (t *inputTail) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.tail)
}
