package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"go.lsp.dev/jsonrpc2"
	lsproto "go.lsp.dev/protocol"
)

// Error codes used in replies beyond the JSON-RPC ones of jsonrpc2.
const (
	// CodeRequestFailed is LSP's RequestFailed: the request was valid but
	// the operation failed.
	CodeRequestFailed jsonrpc2.Code = -32803
	// CodeRequestCancelled is LSP's RequestCancelled ($/cancelRequest).
	CodeRequestCancelled jsonrpc2.Code = -32800
)

// wireCodec marshals payloads: pre-encoded JSON passes through verbatim (our
// own result and notification types are encoded with encoding/json, so their
// field rules are the standard library's), everything else goes through the
// LSP package's union-aware codec so protocol unions such as ProgressToken
// encode as their concrete arm.
type wireCodec struct{}

func (wireCodec) Marshal(v any) ([]byte, error) {
	switch m := v.(type) {
	case jsonrpc2.RawMessage:
		if m == nil {
			return []byte("null"), nil
		}
		return m, nil
	case json.RawMessage:
		if m == nil {
			return []byte("null"), nil
		}
		return m, nil
	}
	return lsproto.Marshal(v)
}

func (wireCodec) Unmarshal(data []byte, v any) error {
	if p, ok := v.(*jsonrpc2.RawMessage); ok {
		*p = append(jsonrpc2.RawMessage(nil), data...)
		return nil
	}
	return lsproto.Unmarshal(data, v)
}

// encodeJSON encodes one of our own values with encoding/json. A nil slice
// becomes [] rather than null, since every list in PROTOCOL.md is an array.
func encodeJSON(v any) (jsonrpc2.RawMessage, error) {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice && rv.IsNil() {
		return jsonrpc2.RawMessage("[]"), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonrpc2.RawMessage(b), nil
}

// replyError turns a handler error into the JSON-RPC error the client sees:
// an ArgError is -32602, an error that already carries a JSON-RPC code keeps
// it, a cancelled request is -32800, anything else is -32803 with the message.
func replyError(ctx context.Context, command string, err error) error {
	var argErr *ArgError
	var rpcErr *jsonrpc2.Error
	switch {
	case errors.As(err, &argErr):
		return jsonrpc2.NewError(jsonrpc2.InvalidParams, argErr.Error())
	case errors.As(err, &rpcErr):
		return rpcErr
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		return jsonrpc2.NewError(CodeRequestCancelled, command+": cancelled")
	}
	return jsonrpc2.NewError(CodeRequestFailed, fmt.Sprintf("%s: %v", command, err))
}

// tolerantStream keeps serving after a frame whose body is not a valid
// JSON-RPC message. jsonrpc2 v1 ends the connection on such a frame; the
// framing is still intact (the header stream consumed the whole body), so
// this answers the frame with an error response saying what is wrong
// (checkMessage: JSON-RPC 2.0's codes, the request's id when it could be
// read, never a long value echoed) and reads on. A broken header (no resync
// possible) or the end of the input still ends the connection; onReadEnd is
// called with the reason then.
type tolerantStream struct {
	jsonrpc2.Stream

	onReadEnd func(err error)
	endOnce   sync.Once

	// frames, when set, is the bounded reader of the input (R-W7), used
	// instead of the Stream's own; skipped is told of a notification over
	// its limit, which cannot be answered.
	frames  *boundedFrames
	skipped func(method string, err error)
}

// readFrame is the next frame's body: from the bounded reader, skipping
// (and answering) every frame over its limit, else from the Stream.
func (s *tolerantStream) readFrame(ctx context.Context, fr frameReader) ([]byte, int64, error) {
	if s.frames == nil {
		return fr.ReadFrame(ctx)
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		length, n, err := s.frames.header()
		if err != nil {
			return nil, 0, err
		}
		if length > s.frames.limit {
			if err := s.skip(ctx, length); err != nil {
				return nil, 0, err
			}
			continue
		}
		body, err := s.frames.body(length)
		if err != nil {
			return nil, 0, err
		}
		return body, int64(n) + length, nil
	}
}

func (s *tolerantStream) Read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	fr, ok := s.Stream.(frameReader)
	ok = ok || s.frames != nil
	for {
		if !ok {
			msg, n, err := s.Stream.Read(ctx)
			if err != nil {
				s.end(err)
			}
			return msg, n, err
		}
		body, n, err := s.readFrame(ctx, fr)
		if err != nil {
			s.end(err)
			return nil, 0, err
		}
		if rpcErr, id := checkMessage(body); rpcErr != nil {
			if _, werr := s.Stream.Write(ctx, jsonrpc2.NewResponse(id, nil, rpcErr)); werr != nil {
				s.end(werr)
				return nil, 0, werr
			}
			continue
		}
		msg, err := jsonrpc2.DecodeMessage(body)
		if err != nil { // checkMessage let through what the decoder refuses
			reply := jsonrpc2.NewError(jsonrpc2.InvalidRequest, "invalid request: "+err.Error())
			if _, werr := s.Stream.Write(ctx, jsonrpc2.NewResponse(jsonrpc2.ID{}, nil, reply)); werr != nil {
				s.end(werr)
				return nil, 0, werr
			}
			continue
		}
		return msg, n, nil
	}
}

func (s *tolerantStream) end(err error) {
	s.endOnce.Do(func() {
		if s.onReadEnd != nil {
			s.onReadEnd(err)
		}
	})
}
