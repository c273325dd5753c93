package acp

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"

	"github.com/soba-agent/soba-lsp/internal/inbound"
	"github.com/soba-agent/soba-lsp/internal/text"
)

// maxLineBytes bounds one message from the client (R-W7). The SDK's own
// reader ends the connection on a line over 10 MiB (bufio.Scanner's
// ErrTooLong), so the bound must stay under that; 8 MiB is about twice a
// prompt at a million-token window, JSON-escaped, embedded resources
// included. A longer line is never held: it is streamed past (its id picked
// out on the way), answered with -32600 naming both sizes, and the
// connection reads on.
const maxLineBytes = 8 << 20

// boundedLines passes the client's newline-delimited messages through,
// holding at most limit bytes of a line it has not yet passed on; a longer
// line is dropped and answered on out.
type boundedLines struct {
	r     io.Reader
	out   io.Writer
	log   *slog.Logger
	limit int

	buf     []byte // what was read and not yet sorted
	line    []byte // the current line, while it may still be passed on
	ready   []byte // whole lines to hand to the reader
	skipLen int64  // >0 while a line over the limit streams past
	members *inbound.Members
	err     error
}

func (b *boundedLines) Read(p []byte) (int, error) {
	for len(b.ready) == 0 {
		if b.err != nil {
			if len(b.line) > 0 && b.skipLen == 0 { // the last line, unterminated
				b.ready, b.line = b.line, nil
				break
			}
			return 0, b.err
		}
		if cap(b.buf) == 0 {
			b.buf = make([]byte, 64<<10)
		}
		n, err := b.r.Read(b.buf[:cap(b.buf)])
		b.sort(b.buf[:n])
		b.err = err
	}
	n := copy(p, b.ready)
	b.ready = b.ready[n:]
	if len(b.ready) == 0 {
		b.ready = nil
	}
	return n, nil
}

// sort files the bytes of chunk: into the current line while it fits, past
// the scanner once it does not, and each whole line into ready.
func (b *boundedLines) sort(chunk []byte) {
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		piece := chunk
		if i >= 0 {
			piece = chunk[:i+1]
		}
		chunk = chunk[len(piece):]
		if b.skipLen == 0 && len(b.line)+len(piece) > b.limit+1 { // +1: the newline
			b.members = &inbound.Members{}
			b.members.OnID = func(raw []byte) { b.refuse(raw) }
			b.members.Write(b.line)
			b.skipLen = int64(len(b.line))
			b.line = nil
		}
		if b.skipLen > 0 {
			b.members.Write(piece)
			b.skipLen += int64(len(piece))
			if i >= 0 {
				b.endSkip()
			}
			continue
		}
		b.line = append(b.line, piece...)
		if i >= 0 {
			b.ready = append(b.ready, b.line...)
			b.line = b.line[:0]
		}
	}
}

// endSkip ends a line over the limit: a request whose id was not seen
// early is answered now (null id when none could be read); a notification
// cannot be answered and is logged.
func (b *boundedLines) endSkip() {
	m := b.members
	size := b.skipLen - 1 // without its newline
	b.skipLen, b.members = 0, nil
	if m.OnID == nil { // answered when its id went by
		return
	}
	if m.Method != nil && m.ID == nil {
		if b.log != nil {
			b.log.Warn("a notification was skipped", "method", text.Clip(string(m.Method), 80), "err", &inbound.TooLargeError{Size: size, Limit: int64(b.limit)})
		}
		return
	}
	b.refuseSized(nil, size)
}

func (b *boundedLines) refuse(rawID []byte) {
	// Its size is not known yet: the id went by before its end.
	b.refuseSized(rawID, 0)
}

func (b *boundedLines) refuseSized(rawID []byte, size int64) {
	if b.members != nil {
		b.members.OnID = nil
	}
	id := json.RawMessage("null")
	if len(rawID) > 0 && json.Valid(rawID) && (rawID[0] == '"' || rawID[0] == '-' || rawID[0] >= '0' && rawID[0] <= '9') {
		id = rawID // a string or a number, echoed as sent (at most 512 bytes)
	}
	msg := (&inbound.TooLargeError{Size: size, Limit: int64(b.limit)}).Error()
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": -32600, "message": "invalid request: " + msg}})
	_, _ = b.out.Write(append(line, '\n'))
}
