package session

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/soba-agent/soba-lsp/internal/jsondec"
)

// lineHeader is what resume needs from a line: the header fields only. The
// byte slices point into the line being scanned and are valid until the next
// read.
type lineHeader struct {
	id, parent, typ []byte
	ts              time.Time
	tokens          int
}

// The literal pieces of the layout our writer produces: encoding/json writes
// Entry's fields in struct order, so every line we write starts with them.
var (
	litID     = []byte(`{"id":"`)
	litParent = []byte(`,"parentId":`)
	litNull   = []byte(`null`)
	litType   = []byte(`,"type":"`)
	litTime   = []byte(`,"timestamp":"`)
	litTokens = []byte(`,"tokens":`)
)

// scanHeader reads the header fields from the start of p when it is in our
// writer's layout, without looking at the payload. ok is false when the prefix
// is not in that layout (a foreign writer, escapes in a header string, a
// number we would not write); the caller then decodes the whole line. It does
// not check that the line is complete: see fastHeader.
func scanHeader(p []byte) (h lineHeader, ok bool) {
	if !bytes.HasPrefix(p, litID) {
		return h, false
	}
	if h.id, p, ok = plainString(p[len(litID):]); !ok || len(h.id) == 0 {
		return h, false
	}
	if !bytes.HasPrefix(p, litParent) {
		return h, false
	}
	p = p[len(litParent):]
	switch {
	case bytes.HasPrefix(p, litNull):
		p = p[len(litNull):]
	case len(p) > 0 && p[0] == '"':
		if h.parent, p, ok = plainString(p[1:]); !ok {
			return h, false
		}
	default:
		return h, false
	}
	if !bytes.HasPrefix(p, litType) {
		return h, false
	}
	if h.typ, p, ok = plainString(p[len(litType):]); !ok || len(h.typ) == 0 {
		return h, false
	}
	if !bytes.HasPrefix(p, litTime) {
		return h, false
	}
	var ts []byte
	if ts, p, ok = plainString(p[len(litTime):]); !ok {
		return h, false
	}
	// UnmarshalText is the strict RFC 3339 parser that time.Time's
	// UnmarshalJSON uses, so both paths accept the same timestamps.
	if err := h.ts.UnmarshalText(ts); err != nil {
		return h, false
	}
	if bytes.HasPrefix(p, litTokens) {
		if h.tokens, p, ok = plainInt(p[len(litTokens):]); !ok {
			return h, false
		}
	}
	if len(p) == 0 || (p[0] != ',' && p[0] != '}') {
		return h, false
	}
	return h, true
}

// fastHeader is scanHeader plus the one check that makes a prefix trustworthy:
// a complete line of ours ends with the object's closing brace. A torn line
// that a later append healed ends with tornMark instead, so it never passes.
func fastHeader(prefix []byte, last byte) (lineHeader, bool) {
	if last != '}' {
		return lineHeader{}, false
	}
	return scanHeader(prefix)
}

// plainString returns the string before the closing quote when it holds only
// printable ASCII without escapes, the only strings our header fields carry;
// anything else goes to the full decoder, which knows escapes and UTF-8.
func plainString(p []byte) (s, rest []byte, ok bool) {
	for i, c := range p {
		switch {
		case c == '"':
			return p[:i], p[i+1:], true
		case c < 0x20 || c > 0x7e || c == '\\':
			return nil, nil, false
		}
	}
	return nil, nil, false
}

// plainInt reads a non-negative JSON integer as our writer writes it (no sign,
// fraction, exponent or leading zero, at most 15 digits).
func plainInt(p []byte) (n int, rest []byte, ok bool) {
	i := 0
	for i < len(p) && i < 16 && p[i] >= '0' && p[i] <= '9' {
		n = n*10 + int(p[i]-'0')
		i++
	}
	if i == 0 || i > 15 || (p[0] == '0' && i > 1) {
		return 0, nil, false
	}
	if i < len(p) && (p[i] == '.' || p[i] == 'e' || p[i] == 'E') {
		return 0, nil, false
	}
	return n, p[i:], true
}

// jsonHeader is the header decoded by encoding/json, for lines not in our
// layout.
type jsonHeader struct {
	ID        string    `json:"id"`
	ParentID  *string   `json:"parentId"`
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Tokens    int       `json:"tokens"`
}

// slowHeader decodes a whole line with encoding/json, which also checks that
// the line is one complete JSON object.
func slowHeader(line []byte) (lineHeader, error) {
	var j jsonHeader
	if err := jsondec.Unmarshal(line, &j); err != nil {
		return lineHeader{}, err
	}
	if j.ID == "" {
		return lineHeader{}, errors.New(`entry has no "id"`)
	}
	if j.Type == "" {
		return lineHeader{}, errors.New(`entry has no "type"`)
	}
	if j.Tokens < 0 {
		return lineHeader{}, fmt.Errorf(`entry has negative "tokens" %d`, j.Tokens)
	}
	h := lineHeader{id: []byte(j.ID), typ: []byte(j.Type), ts: j.Timestamp, tokens: j.Tokens}
	if j.ParentID != nil {
		h.parent = []byte(*j.ParentID)
	}
	return h, nil
}

// Line scanning.

const (
	// scanBufSize is the read size of resume: large reads keep the syscall
	// count low, and the buffer is the only per-file memory besides the index.
	scanBufSize = 256 << 10
	// prefixKeep is how much of a line longer than the buffer is kept for the
	// header scanner; the header of our layout is well under 200 bytes.
	prefixKeep = 512
)

// rawLine is one newline-terminated line found by scanLines. When whole is
// true, data is the entire line (without the newline); otherwise the line was
// longer than the buffer and data is its first prefixKeep bytes.
type rawLine struct {
	off   int64
	n     int // length without the newline
	data  []byte
	whole bool
	last  byte // the line's last byte (0 for an empty line)
}

// scanLines calls visit for every newline-terminated line of r in order, and
// returns the offset and length of the bytes after the last newline (a torn
// tail; length 0 when the input ends with a newline). data passed to visit is
// valid only during the call.
func scanLines(r io.Reader, visit func(rawLine) error) (tornOff int64, tornLen int, err error) {
	buf := make([]byte, scanBufSize)
	var base int64 // file offset of buf[0]
	start, end := 0, 0
	eof := false

	// A line longer than the buffer is consumed in pieces: its start, first
	// bytes and length are tracked until its newline shows up.
	long := false
	var longOff int64
	var longLen int
	var longLast byte
	longPrefix := make([]byte, 0, prefixKeep)

	for {
		i := bytes.IndexByte(buf[start:end], '\n')
		switch {
		case i >= 0 && !long:
			ln := rawLine{off: base + int64(start), n: i, data: buf[start : start+i], whole: true}
			if i > 0 {
				ln.last = buf[start+i-1]
			}
			if err := visit(ln); err != nil {
				return 0, 0, err
			}
			start += i + 1
			continue
		case i >= 0 && long:
			seg := buf[start : start+i]
			if len(seg) > 0 {
				longLast = seg[len(seg)-1]
			}
			longPrefix = appendPrefix(longPrefix, seg)
			longLen += len(seg)
			if err := visit(rawLine{off: longOff, n: longLen, data: longPrefix, last: longLast}); err != nil {
				return 0, 0, err
			}
			long = false
			start += i + 1
			continue
		case long:
			seg := buf[start:end]
			if len(seg) > 0 {
				longLast = seg[len(seg)-1]
			}
			longPrefix = appendPrefix(longPrefix, seg)
			longLen += len(seg)
			base += int64(end)
			start, end = 0, 0
		}
		if eof {
			break
		}
		if start > 0 {
			copy(buf, buf[start:end])
			base += int64(start)
			end -= start
			start = 0
		}
		if end == len(buf) {
			long = true
			longOff, longLen, longLast = base, end, buf[end-1]
			longPrefix = appendPrefix(longPrefix[:0], buf[:end])
			base += int64(end)
			start, end = 0, 0
		}
		n, rerr := r.Read(buf[end:])
		end += n
		switch {
		case rerr == io.EOF:
			eof = true
		case rerr != nil:
			return 0, 0, rerr
		}
	}
	if long {
		return longOff, longLen + (end - start), nil
	}
	return base + int64(start), end - start, nil
}

func appendPrefix(p, seg []byte) []byte {
	if room := prefixKeep - len(p); room > 0 {
		if len(seg) > room {
			seg = seg[:room]
		}
		p = append(p, seg...)
	}
	return p
}
