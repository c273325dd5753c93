package lsp

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"

	"go.lsp.dev/jsonrpc2"

	"github.com/soba-agent/soba-lsp/internal/inbound"
)

// maxFrameBytes bounds one message from the editor (R-W7). The largest
// legitimate message is a prompt at the model's hard limit (a million-token
// window is about 4 MB of text, a little more once JSON-escaped) or a large
// document sent by didOpen/didChange; 16 MiB is several times the former.
// A frame over it is never read into memory: it is streamed past in 32 KB
// pieces (its id picked out on the way, inbound.Members), answered with
// -32600 naming both sizes, and the server reads on. jsonrpc2's own reader
// would allocate whatever Content-Length says (up to 1 GiB) before reading
// a byte of the body.
const maxFrameBytes = 16 << 20

// frameBufBytes is the reader's buffer, which also bounds one header line.
const frameBufBytes = 64 << 10

// boundedFrames reads Content-Length frames, as jsonrpc2's header stream
// does, without ever holding more than maxFrameBytes of a body.
type boundedFrames struct {
	in    *bufio.Reader
	limit int64
}

func newBoundedFrames(r io.Reader, limit int64) *boundedFrames {
	return &boundedFrames{in: bufio.NewReaderSize(r, frameBufBytes), limit: limit}
}

// header reads one header block and returns the body's length and the
// header's own. A missing, zero or unparsable Content-Length, or a header
// line longer than the buffer, is jsonrpc2.ErrInvalidHeader (nothing to
// resynchronise on); the input's end before any byte is io.EOF.
func (b *boundedFrames) header() (length int64, n int, err error) {
	have := false
	for {
		line, err := b.in.ReadSlice('\n')
		switch {
		case err == bufio.ErrBufferFull:
			return 0, 0, fmt.Errorf("%w: a header line longer than %d bytes", jsonrpc2.ErrInvalidHeader, frameBufBytes)
		case err == io.EOF && n == 0 && len(line) == 0:
			return 0, 0, io.EOF
		case err == io.EOF:
			return 0, 0, io.ErrUnexpectedEOF
		case err != nil:
			return 0, 0, err
		}
		n += len(line)
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, 0, jsonrpc2.ErrInvalidHeader
		}
		if bytes.EqualFold(bytes.TrimSpace(name), []byte("Content-Length")) {
			v, perr := strconv.ParseInt(string(bytes.TrimSpace(value)), 10, 64)
			if perr != nil || v <= 0 {
				return 0, 0, jsonrpc2.ErrInvalidHeader
			}
			length, have = v, true
		}
	}
	if !have {
		return 0, 0, jsonrpc2.ErrInvalidHeader
	}
	return length, n, nil
}

// body reads a body of length bytes (at most the limit) into a buffer of
// its own: the decoded message may keep it.
func (b *boundedFrames) body(length int64) ([]byte, error) {
	buf := make([]byte, length)
	if _, err := io.ReadFull(b.in, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// skip streams past a body over the limit, answering it: as soon as its
// top-level id has gone by (a request), else at its end (null id, as
// JSON-RPC answers a request whose id cannot be read). A notification is
// not answered (the protocol has no way to); skipped reports it.
func (s *tolerantStream) skip(ctx context.Context, length int64) error {
	tooLarge := &inbound.TooLargeError{Size: length, Limit: s.frames.limit}
	refusal := jsonrpc2.NewError(jsonrpc2.InvalidRequest, "invalid request: "+tooLarge.Error())
	answered := false
	var werr error
	answer := func(id jsonrpc2.ID) {
		answered = true
		_, werr = s.Stream.Write(ctx, jsonrpc2.NewResponse(id, nil, refusal))
	}
	m := &inbound.Members{}
	m.OnID = func(raw []byte) {
		if id, problem := readID(raw); problem == "" {
			answer(id)
		}
	}
	if _, err := io.CopyN(m, s.frames.in, length); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	if !answered {
		if m.Method != nil && m.ID == nil {
			if s.skipped != nil {
				s.skipped(string(m.Method), tooLarge)
			}
			return nil
		}
		answer(jsonrpc2.ID{})
	}
	return werr
}
