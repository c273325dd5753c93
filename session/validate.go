package session

import (
	"bytes"
	"encoding/binary"
	"strings"
	"unicode/utf8"
)

// quickCheck is verify's validating decode of the lines our writer writes:
// it walks a line once, checking the JSON syntax and the type of every
// field of the session, user, assistant and tool_result payloads, and
// returns only what verify's checks read (the type, the payload's presence,
// the tool call ids), without building the strings and structs DecodeLine
// would (a tool result's content is most of a session's bytes).
//
// It is one-sided: ok means DecodeLine decodes the line and the returned
// entry holds the same type, payload pointer and tool call ids; !ok means
// "not sure" (another writer's layout, an escape in an id, a null, a
// duplicate or unknown name, a number we would not write, another type),
// and the caller decodes the line with DecodeLine, which then finds any
// error and its words. So verify classifies every line as Load does.
func quickCheck(line []byte) (e Entry, ok bool) {
	q := quickParser{p: line}
	if !q.object(func(name []byte, seen *uint32) bool { return q.topMember(&e, name, seen) }) || q.i != len(line) || e.Type == "" {
		return Entry{}, false
	}
	return e, true
}

// quickDecode is DecodeLine for the lines our writer writes, on the same
// one-sided terms as quickCheck: ok means the entry is the one the JSON
// decoder would build, field for field; otherwise the caller decodes the
// line with the decoder. It finds the structure with the same scanner as
// quickCheck, so most of a line (a tool's output) is read with vector
// instructions and copied once.
func quickDecode(line []byte, lean bool) (e Entry, ok bool) {
	q := quickParser{p: line, full: true, lean: lean}
	if !q.object(func(name []byte, seen *uint32) bool { return q.topMember(&e, name, seen) }) || q.i != len(line) || e.Type == "" {
		return Entry{}, false
	}
	return e, true
}

type quickParser struct {
	p     []byte
	i     int
	depth int
	// full makes the parser fill in every field (quickDecode), not only
	// what verify reads (quickCheck).
	full bool
	// lean (with full) leaves out the content leanOmits describes.
	lean bool
}

// maxQuickDepth bounds the nesting of raw values (tool call arguments) that
// quickCheck walks; deeper ones go to the full decoder.
const maxQuickDepth = 64

// object parses an object whose names are plain strings, calling member
// for each name with q.i at its value; member parses the value and reports
// whether it was understood. A name seen twice is "not sure": the decoder's
// answer then depends on rules (the last wins, null zeroes) not worth
// copying here.
func (q *quickParser) object(member func(name []byte, seen *uint32) bool) bool {
	if !q.byte('{') {
		return false
	}
	if q.byte('}') {
		return true
	}
	var seen uint32
	for {
		name, ok := q.plainString()
		if !ok || !q.byte(':') || !member(name, &seen) {
			return false
		}
		if q.byte('}') {
			return true
		}
		if !q.byte(',') {
			return false
		}
	}
}

// once marks bit in seen and reports whether it was clear.
func once(seen *uint32, bit uint32) bool {
	if *seen&bit != 0 {
		return false
	}
	*seen |= bit
	return true
}

// payloadBits are the bits of top's seen set for the payloads it reads.
const payloadBits = 1<<5 | 1<<6 | 1<<7 | 1<<8

// topMember parses a member of an entry line. (Members are parsed by
// methods called from closures written at the call, which the compiler
// keeps on the stack: a closure returned by a method would be allocated.)
func (q *quickParser) topMember(e *Entry, name []byte, seen *uint32) bool {
	switch string(name) {
	case "id":
		return once(seen, 1<<0) && q.str(&e.ID)
	case "parentId":
		if !once(seen, 1<<1) {
			return false
		}
		if q.literal("null") {
			return true
		}
		var p string
		if !q.str(&p) {
			return false
		}
		if q.full {
			e.ParentID = &p
		}
		return true
	case "type":
		t, ok := q.plainString()
		if !ok || !once(seen, 1<<2) {
			return false
		}
		switch string(t) {
		case TypeSession, TypeUser, TypeAssistant, TypeToolResult:
			e.Type = internType(string(t))
			return true
		}
		return false // other types are few: the full decoder reads them
	case "timestamp":
		ts, ok := q.plainString()
		// The same strict RFC 3339 parser as time.Time's UnmarshalJSON.
		return ok && once(seen, 1<<3) && e.Timestamp.UnmarshalText(ts) == nil
	case "tokens":
		return once(seen, 1<<4) && q.int(&e.Tokens)
	case "session":
		if !once(seen, 1<<5) || *seen&payloadBits != 1<<5 {
			return false
		}
		e.Session = &SessionHeader{}
		return q.object(func(name []byte, seen *uint32) bool { return q.sessionMember(e.Session, name, seen) })
	case "user":
		if !once(seen, 1<<6) || *seen&payloadBits != 1<<6 {
			return false
		}
		e.User = &UserMessage{}
		return q.object(func(name []byte, seen *uint32) bool {
			return string(name) == "text" && once(seen, 1) && q.str(&e.User.Text)
		})
	case "assistant":
		if !once(seen, 1<<7) || *seen&payloadBits != 1<<7 {
			return false
		}
		e.Assistant = &Assistant{}
		return q.object(func(name []byte, seen *uint32) bool { return q.assistantMember(e.Assistant, name, seen) })
	case "toolResult":
		if !once(seen, 1<<8) || *seen&payloadBits != 1<<8 {
			return false
		}
		r := &ToolResult{}
		e.ToolResult = r
		if !q.lean {
			return q.object(func(name []byte, seen *uint32) bool { return q.toolResultMember(r, name, seen) })
		}
		// The content is checked where it stands and made a string only
		// when the rest of the result says a reader may want it
		// (leanOmits).
		var content [2]int
		var plain, ascii bool
		if !q.object(func(name []byte, seen *uint32) bool {
			if string(name) != "content" {
				return q.toolResultMember(r, name, seen)
			}
			var ok bool
			content[0] = q.i
			content[1], plain, ascii, ok = scanString(q.p, q.i)
			q.i = content[1]
			return ok && once(seen, 8)
		}) {
			return false
		}
		if content[1] == 0 {
			return true // no content member
		}
		if leanOmits(r) {
			r.ContentOmitted = content[1]-content[0] > 2 // more than ""
			return true
		}
		return q.materialize(q.p[content[0]+1:content[1]-1], plain, ascii, &r.Content)
	}
	return false
}

func (q *quickParser) sessionMember(h *SessionHeader, name []byte, seen *uint32) bool {
	switch string(name) {
	case "version":
		return once(seen, 1) && q.int(&h.Version)
	case "sessionId":
		return once(seen, 2) && q.str(&h.SessionID)
	case "workspace":
		return once(seen, 4) && q.str(&h.Workspace)
	case "importedFrom":
		return once(seen, 8) && q.str(&h.ImportedFrom)
	}
	return false
}

func (q *quickParser) assistantMember(a *Assistant, name []byte, seen *uint32) bool {
	switch string(name) {
	case "text":
		return once(seen, 1) && q.str(&a.Text)
	case "provider":
		return once(seen, 2) && q.str(&a.Provider)
	case "model":
		return once(seen, 4) && q.str(&a.Model)
	case "stopReason":
		return once(seen, 8) && q.str(&a.StopReason)
	case "error":
		return once(seen, 16) && q.str(&a.Error)
	case "thinking":
		return once(seen, 128) && q.str(&a.Thinking)
	case "toolCalls":
		if !once(seen, 32) {
			return false
		}
		a.ToolCalls = []ToolCall{} // an empty array decodes to an empty slice
		return q.array(func() bool {
			var c ToolCall
			ok := q.object(func(name []byte, seen *uint32) bool {
				switch string(name) {
				case "id":
					// verify reads it: plain in either mode
					id, ok := q.plainString()
					c.ID = string(id)
					return ok && once(seen, 1)
				case "name":
					return once(seen, 2) && q.str(&c.Name)
				case "arguments":
					start := q.i
					if !once(seen, 4) || !q.raw() {
						return false
					}
					if q.full {
						c.Arguments = bytes.Clone(q.p[start:q.i])
					}
					return true
				}
				return false
			})
			a.ToolCalls = append(a.ToolCalls, c)
			return ok
		})
	case "usage":
		if !once(seen, 64) {
			return false
		}
		u := &Usage{}
		a.Usage = u
		return q.object(func(name []byte, seen *uint32) bool {
			switch string(name) {
			case "inputTokens":
				return once(seen, 1) && q.int(&u.InputTokens)
			case "outputTokens":
				return once(seen, 2) && q.int(&u.OutputTokens)
			case "cachedTokens":
				return once(seen, 4) && q.int(&u.CachedTokens)
			}
			return false
		})
	}
	return false // native continuation state: the full decoder
}

func (q *quickParser) toolResultMember(r *ToolResult, name []byte, seen *uint32) bool {
	switch string(name) {
	case "toolCallId":
		// verify reads it: plain in either mode
		id, ok := q.plainString()
		r.ToolCallID = string(id)
		return ok && once(seen, 1)
	case "toolName":
		return once(seen, 2) && q.str(&r.ToolName)
	case "ok":
		return once(seen, 4) && q.bool(&r.OK)
	case "content":
		return once(seen, 8) && q.str(&r.Content)
	case "artifacts":
		if !once(seen, 16) {
			return false
		}
		a := &Artifacts{}
		r.Artifacts = a
		return q.object(func(name []byte, seen *uint32) bool {
			switch string(name) {
			case "filesRead":
				return once(seen, 1) && q.strings(&a.FilesRead)
			case "filesModified":
				return once(seen, 2) && q.strings(&a.FilesModified)
			case "command":
				return once(seen, 4) && q.str(&a.Command)
			case "exitCode":
				var n int
				if !once(seen, 8) || !q.int(&n) {
					return false
				}
				a.ExitCode = &n
				return true
			case "pipefail":
				return once(seen, 16) && q.bool(&a.Pipefail)
			case "skill":
				return once(seen, 32) && q.str(&a.Skill)
			}
			return false
		})
	}
	return false
}

// strings parses an array of strings into *dst (in full mode).
func (q *quickParser) strings(dst *[]string) bool {
	var out []string
	if q.full {
		out = []string{} // an empty array decodes to an empty slice
	}
	ok := q.array(func() bool {
		var s string
		if !q.str(&s) {
			return false
		}
		if q.full {
			out = append(out, s)
		}
		return true
	})
	*dst = out
	return ok
}

// bool parses true or false into *dst.
func (q *quickParser) bool(dst *bool) bool {
	switch {
	case q.literal("true"):
		*dst = true
	case q.literal("false"):
		*dst = false
	default:
		return false
	}
	return true
}

// str parses a string into *dst in full mode, or checks it.
func (q *quickParser) str(dst *string) bool {
	if !q.full {
		return q.anyString()
	}
	start := q.i
	end, plain, ascii, ok := scanString(q.p, q.i)
	if !ok {
		return false
	}
	if !q.materialize(q.p[start+1:end-1], plain, ascii, dst) {
		return false
	}
	q.i = end
	return true
}

// materialize sets *dst to the string whose inside (between the quotes)
// scanString read as raw, plain and ascii; false leaves the line to the
// decoder.
func (q *quickParser) materialize(raw []byte, plain, ascii bool, dst *string) bool {
	if plain {
		if !ascii && !asciiOrValid(raw) {
			return false // the decoder's U+FFFD rules
		}
		*dst = string(raw)
		return true
	}
	s, ok := unquote(raw)
	if !ok {
		return false
	}
	*dst = s
	return true
}

// asciiOrValid reports whether p is valid UTF-8, quickly for ASCII.
func asciiOrValid(p []byte) bool {
	i := 0
	for ; i+8 <= len(p); i += 8 {
		if binary.LittleEndian.Uint64(p[i:])&msb != 0 {
			return utf8.Valid(p[i:])
		}
	}
	for ; i < len(p); i++ {
		if p[i] >= 0x80 {
			return utf8.Valid(p[i:])
		}
	}
	return true
}

// unquote resolves the escapes of raw, the inside of a string scanString
// accepted (so every escape is well formed and no \u is a surrogate).
func unquote(raw []byte) (string, bool) {
	var out strings.Builder // its String does not copy
	out.Grow(len(raw))
	for len(raw) > 0 {
		i := bytes.IndexByte(raw, '\\')
		if i < 0 {
			i = len(raw)
		}
		if !asciiOrValid(raw[:i]) {
			return "", false
		}
		out.Write(raw[:i])
		if i == len(raw) {
			break
		}
		c := raw[i+1]
		raw = raw[i+2:]
		switch c {
		case '"', '\\', '/':
			out.WriteByte(c)
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'u':
			r := 0
			for _, h := range raw[:4] {
				switch {
				case h >= '0' && h <= '9':
					r = r<<4 | int(h-'0')
				case h >= 'a' && h <= 'f':
					r = r<<4 | int(h-'a'+10)
				default:
					r = r<<4 | int(h-'A'+10)
				}
			}
			out.WriteRune(rune(r))
			raw = raw[4:]
		default:
			return "", false
		}
	}
	return out.String(), true
}

// array parses an array, calling elem for each element.
func (q *quickParser) array(elem func() bool) bool {
	if !q.byte('[') {
		return false
	}
	if q.byte(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if q.byte(']') {
			return true
		}
		if !q.byte(',') {
			return false
		}
	}
}

// raw parses any JSON value without whitespace (json.RawMessage as our
// writer compacts it).
func (q *quickParser) raw() bool {
	if q.i >= len(q.p) {
		return false
	}
	switch c := q.p[q.i]; {
	case c == '"':
		return q.anyString()
	case c == '{':
		if q.depth++; q.depth > maxQuickDepth {
			return false
		}
		ok := q.rawObject()
		q.depth--
		return ok
	case c == '[':
		if q.depth++; q.depth > maxQuickDepth {
			return false
		}
		ok := q.array(q.raw)
		q.depth--
		return ok
	case c == 't':
		return q.literal("true")
	case c == 'f':
		return q.literal("false")
	case c == 'n':
		return q.literal("null")
	default:
		return q.number()
	}
}

// rawObject is an object of any names and raw values; duplicate names are
// kept as they are by json.RawMessage.
func (q *quickParser) rawObject() bool {
	if !q.byte('{') {
		return false
	}
	if q.byte('}') {
		return true
	}
	for {
		if !q.anyString() || !q.byte(':') || !q.raw() {
			return false
		}
		if q.byte('}') {
			return true
		}
		if !q.byte(',') {
			return false
		}
	}
}

func (q *quickParser) byte(c byte) bool {
	if q.i < len(q.p) && q.p[q.i] == c {
		q.i++
		return true
	}
	return false
}

func (q *quickParser) literal(s string) bool {
	if len(q.p)-q.i >= len(s) && string(q.p[q.i:q.i+len(s)]) == s {
		q.i += len(s)
		return true
	}
	return false
}

// int parses a non-negative integer as our writer writes it (at most 15
// digits, no leading zero, fraction or exponent), which fits any int field.
func (q *quickParser) int(dst *int) bool {
	n, rest, ok := plainInt(q.p[q.i:])
	if !ok {
		return false
	}
	*dst = n
	q.i = len(q.p) - len(rest)
	return true
}

// number parses a JSON number (RFC 8259 grammar).
func (q *quickParser) number() bool {
	p, i := q.p, q.i
	if i < len(p) && p[i] == '-' {
		i++
	}
	switch {
	case i < len(p) && p[i] == '0':
		i++
	case i < len(p) && p[i] >= '1' && p[i] <= '9':
		for i < len(p) && p[i] >= '0' && p[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(p) && p[i] == '.' {
		i++
		d := i
		for i < len(p) && p[i] >= '0' && p[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	if i < len(p) && (p[i] == 'e' || p[i] == 'E') {
		i++
		if i < len(p) && (p[i] == '+' || p[i] == '-') {
			i++
		}
		d := i
		for i < len(p) && p[i] >= '0' && p[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	q.i = i
	return true
}

// plainString parses a string without escapes and returns its bytes; a
// string that is not valid UTF-8 is left to the decoder, which reads each
// invalid byte as U+FFFD (found by FuzzQuickCheck: a tool call id "\x8d"
// was taken as it stood).
func (q *quickParser) plainString() ([]byte, bool) {
	end, plain, ascii, ok := scanString(q.p, q.i)
	if !ok || !plain || !ascii && !asciiOrValid(q.p[q.i+1:end-1]) {
		return nil, false
	}
	s := q.p[q.i+1 : end-1]
	q.i = end
	return s, true
}

// anyString parses a string whose value is not needed.
func (q *quickParser) anyString() bool {
	end, _, _, ok := scanString(q.p, q.i)
	if ok {
		q.i = end
	}
	return ok
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// scanString checks the string that starts at p[i] (its opening quote) and
// returns the index after its closing quote, whether it held no escape
// (plain) and whether it is moreover all printable ASCII (ascii: valid
// UTF-8 as it stands, so a decoder need not check it again). Bytes of 0x80
// and above pass unchecked: the decoder accepts invalid UTF-8 (it becomes
// U+FFFD). The bytes of tools' outputs are most of what verify reads: up to
// the first escape the quote and backslash are found with bytes.IndexByte
// (vector instructions), after it (text with escaped newlines has one every
// few dozen bytes) eight bytes are checked at a time.
func scanString(p []byte, i int) (end int, plain, ascii, ok bool) {
	if i >= len(p) || p[i] != '"' {
		return 0, false, false, false
	}
	i++
	// Most strings are short (member names, ids, tool names): a byte loop
	// ends them sooner than two calls of IndexByte and a word scan.
	ascii = true
	for k, n := i, min(len(p), i+shortString); k < n; k++ {
		c := p[k]
		if c == '"' {
			return k + 1, true, ascii, true
		}
		if c == '\\' || c < 0x20 {
			break // the long way below reads it
		}
		if c >= 0x80 {
			ascii = false
		}
	}
	j := bytes.IndexByte(p[i:], '"')
	if j < 0 {
		return 0, false, false, false
	}
	quote := i + j
	b := bytes.IndexByte(p[i:quote], '\\')
	if b < 0 {
		if printableASCII(p[i:quote]) {
			return quote + 1, true, true, true
		}
		if hasControl(p[i:quote]) {
			return 0, false, false, false
		}
		return quote + 1, true, false, true
	}
	if hasControl(p[i : i+b]) {
		return 0, false, false, false
	}
	end, ok = scanEscaped(p, i+b)
	return end, false, false, ok
}

// shortString is how many bytes scanString reads one by one before it
// looks for the closing quote with IndexByte.
const shortString = 24

// printableASCII reports whether every byte of p is in 0x20..0x7f: one
// pass for what hasControl and asciiOrValid each check, sixteen bytes at a
// time.
func printableASCII(p []byte) bool {
	i := 0
	for ; i+16 <= len(p); i += 16 {
		x, y := binary.LittleEndian.Uint64(p[i:]), binary.LittleEndian.Uint64(p[i+8:])
		// A byte below 0x20 borrows into its top bit; a byte of 0x80 or
		// more has it set. A borrow reaching a higher byte comes from a
		// lower byte that is flagged itself, so the test is exact.
		if ((x-lsb*0x20)|x|(y-lsb*0x20)|y)&msb != 0 {
			return false
		}
	}
	for ; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c >= 0x80 {
			return false
		}
	}
	return true
}

// scanEscaped continues scanString from p[i], a backslash.
func scanEscaped(p []byte, i int) (end int, ok bool) {
	for {
		for i+8 <= len(p) {
			x := binary.LittleEndian.Uint64(p[i:])
			// The classic "has a byte less than n" and "has a zero byte"
			// tests, exact for bytes below 0x80 (bytes above are masked
			// by &^x): a control byte, a quote or a backslash.
			ctl := (x - lsb*0x20) &^ x
			qx, bx := x^(lsb*'"'), x^(lsb*'\\')
			if (ctl|(qx-lsb)&^qx|(bx-lsb)&^bx)&msb != 0 {
				break
			}
			i += 8
		}
		if i >= len(p) {
			return 0, false
		}
		switch c := p[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return 0, false
		case c != '\\':
			i++
			continue
		}
		if i+1 >= len(p) {
			return 0, false
		}
		switch p[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+6 > len(p) {
				return 0, false
			}
			r := 0
			for _, h := range p[i+2 : i+6] {
				switch {
				case h >= '0' && h <= '9':
					r = r<<4 | int(h-'0')
				case h >= 'a' && h <= 'f':
					r = r<<4 | int(h-'a'+10)
				case h >= 'A' && h <= 'F':
					r = r<<4 | int(h-'A'+10)
				default:
					return 0, false
				}
			}
			if r >= 0xd800 && r <= 0xdfff {
				return 0, false // surrogates: the decoder's rules
			}
			i += 6
		default:
			return 0, false
		}
	}
}

// hasControl reports whether p holds a byte below 0x20, which a JSON string
// must escape.
func hasControl(p []byte) bool {
	i := 0
	for ; i+8 <= len(p); i += 8 {
		x := binary.LittleEndian.Uint64(p[i:])
		// The classic "has a byte less than n" test, exact for n <= 128.
		if (x-lsb*0x20)&^x&msb != 0 {
			return true
		}
	}
	for ; i < len(p); i++ {
		if p[i] < 0x20 {
			return true
		}
	}
	return false
}
