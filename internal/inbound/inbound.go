// Package inbound bounds what a client can make the server hold (R-W7): a
// JSON-RPC message over a front end's limit is never read into memory, only
// streamed past, and Members finds its top-level "id" and "method" on the way
// so that the refusal can answer the request it refuses.
package inbound

import "fmt"

// maxMember bounds the raw value of "id" or "method" kept while scanning;
// both front ends refuse longer ones anyway (256 bytes).
const maxMember = 512

// Members scans a JSON object as it streams past, keeping the raw values of
// its top-level "id" and "method" members (each up to maxMember bytes) and
// nothing else, so that a message of any size is scanned in constant memory.
// It does not validate the JSON: on a malformed message the members may be
// missing, never made up beyond what the bytes say.
type Members struct {
	// ID and Method are the raw JSON values (a number, a quoted string, …)
	// once their member has been read whole; nil until then, and nil for a
	// value longer than maxMember.
	ID, Method []byte
	// OnID, when set, is called once as soon as the "id" member is whole,
	// which lets a refusal answer before the rest streams past.
	OnID func(raw []byte)

	depth      int
	inString   bool
	escaped    bool
	phase      phase
	key        []byte
	keyOver    bool
	keepValue  *[]byte
	value      []byte
	valueOver  bool
	valueStart bool
}

type phase uint8

const (
	beforeObject phase = iota
	wantKey
	inKey
	wantColon
	inValue
	afterObject
)

// Write feeds the next bytes of the message; it never fails.
func (m *Members) Write(p []byte) (int, error) {
	for _, c := range p {
		m.feed(c)
	}
	return len(p), nil
}

func (m *Members) feed(c byte) {
	switch m.phase {
	case beforeObject:
		switch c {
		case '{':
			m.depth, m.phase = 1, wantKey
		case ' ', '\t', '\r', '\n':
		default: // not an object: nothing to find
			m.phase = afterObject
		}
		return
	case afterObject:
		return
	case wantKey:
		if c == '"' {
			m.phase, m.key, m.keyOver, m.inString = inKey, m.key[:0], false, true
		} else if c == '}' {
			m.phase = afterObject
		}
		return
	case inKey:
		switch {
		case m.escaped:
			m.escaped = false
		case c == '\\':
			m.escaped = true
		case c == '"':
			m.inString, m.phase = false, wantColon
			return
		}
		if len(m.key) < 16 {
			m.key = append(m.key, c)
		} else {
			m.keyOver = true
		}
		return
	case wantColon:
		if c == ':' {
			m.phase, m.keepValue, m.value, m.valueOver = inValue, nil, m.value[:0], false
			if !m.keyOver {
				switch string(m.key) {
				case "id":
					m.keepValue = &m.ID
				case "method":
					m.keepValue = &m.Method
				}
			}
		}
		return
	}
	// inValue: the value of a top-level member, at depth ≥ 1.
	if m.inString {
		switch {
		case m.escaped:
			m.escaped = false
		case c == '\\':
			m.escaped = true
		case c == '"':
			m.inString = false
		}
		m.keep(c)
		return
	}
	switch c {
	case '"':
		m.inString = true
	case '{', '[':
		m.depth++
	case '}', ']':
		m.depth--
		if m.depth == 0 { // the object's end ends its last value
			m.endValue()
			m.phase = afterObject
			return
		}
	case ',':
		if m.depth == 1 {
			m.endValue()
			m.phase = wantKey
			return
		}
	case ' ', '\t', '\r', '\n':
		if m.depth == 1 {
			return
		}
	}
	m.keep(c)
}

func (m *Members) keep(c byte) {
	if m.keepValue == nil {
		return
	}
	if len(m.value) >= maxMember {
		m.valueOver = true
		return
	}
	m.value = append(m.value, c)
}

func (m *Members) endValue() {
	if m.keepValue == nil {
		return
	}
	if !m.valueOver && len(m.value) > 0 {
		*m.keepValue = append([]byte(nil), m.value...)
		if m.keepValue == &m.ID && m.OnID != nil {
			m.OnID(m.ID)
			m.OnID = nil
		}
	}
	m.keepValue = nil
}

// TooLargeError is the refusal of a message over a front end's limit; Size
// is 0 when the refusal is sent before the message's end.
type TooLargeError struct {
	Size, Limit int64
}

func (e *TooLargeError) Error() string {
	if e.Size <= 0 { // refused before its end: its size is not known
		return fmt.Sprintf("the message is over the limit of %d bytes for one message (R-W7); it was skipped unread", e.Limit)
	}
	return fmt.Sprintf("the message is %d bytes, over the limit of %d bytes for one message (R-W7); it was skipped unread", e.Size, e.Limit)
}
