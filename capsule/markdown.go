package capsule

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Format is the front-matter format line this version writes and reads.
const Format = "soba-capsule/1"

// MaxSize is the largest .capsule.md Parse accepts, in bytes.
const MaxSize = 1 << 20

// Document is a .capsule.md file: its front matter and the portable state.
type Document struct {
	Meta  Meta
	State State
}

// Meta is the front matter of a .capsule.md file.
type Meta struct {
	// Format is "soba-capsule/1"; Render always writes the current Format.
	Format string
	// CheckpointID is the checkpoint the capsule was exported from (ck_…).
	CheckpointID string
	Title        string
	// Created is when the capsule was made, in UTC.
	Created time.Time
	// Session and Project name the source session id and workspace.
	Session string
	Project string
	Trigger string
	Quality string
	// Checksum is "sha256:<hex>" of the canonical state (see Checksum). Render
	// ignores this field and writes the state's own checksum; Parse returns
	// the value found in the file.
	Checksum string
}

// itemKind says how a section's content is written.
type itemKind int

const (
	kindGoal         itemKind = iota // one paragraph (or a fenced block)
	kindList                         // "- text" bullets
	kindFiles                        // "- `path`" bullets
	kindDecisions                    // "- decision — rationale" bullets
	kindVerification                 // "- `command` — outcome (exit N)" bullets
)

// section is one "## " section of a capsule, in file order.
type section struct {
	heading string // as written: "In progress"
	key     string // in the front matter's sections line and the canonical form
	kind    itemKind
	// list returns the field of a string-list section.
	list func(*State) *[]string
}

const numSections = 14

// sections are the capsule's sections in the one order Render writes them
// (PROTOCOL.md "Fixed details").
var sections = [numSections]section{
	{heading: "Goal", key: "goal", kind: kindGoal},
	{"Constraints", "constraints", kindList, func(s *State) *[]string { return &s.Constraints }},
	{"Done", "done", kindList, func(s *State) *[]string { return &s.Done }},
	{"In progress", "in-progress", kindList, func(s *State) *[]string { return &s.InProgress }},
	{"Pending", "pending", kindList, func(s *State) *[]string { return &s.Pending }},
	{heading: "Decisions", key: "decisions", kind: kindDecisions},
	{"Blockers", "blockers", kindList, func(s *State) *[]string { return &s.Blockers }},
	{"Next steps", "next-steps", kindList, func(s *State) *[]string { return &s.NextSteps }},
	{"Notes", "notes", kindList, func(s *State) *[]string { return &s.Notes }},
	{"Files read", "files-read", kindFiles, func(s *State) *[]string { return &s.FilesRead }},
	{"Files modified", "files-modified", kindFiles, func(s *State) *[]string { return &s.FilesModified }},
	{heading: "Verification", key: "verification", kind: kindVerification},
	{"Active skills", "active-skills", kindList, func(s *State) *[]string { return &s.ActiveSkills }},
	{"User messages", "user-messages", kindList, func(s *State) *[]string { return &s.UserMessages }},
}

// noneMarker is the body of an empty section.
const noneMarker = "_none_"

// Normalize returns doc as Parse(Render(doc)) gives it back: text cleaned of
// control characters and invalid UTF-8, empty lists nil, Created in UTC,
// Format set and Checksum computed.
func Normalize(doc Document) Document {
	doc, _ = normalize(doc, false)
	return doc
}

// normalize is Normalize, also returning the section hashes when asked.
func normalize(doc Document, withSections bool) (Document, [numSections]string) {
	m := doc.Meta
	m.Format = Format
	m.CheckpointID = normLine(m.CheckpointID)
	m.Title = normLine(m.Title)
	m.Session = normLine(m.Session)
	m.Project = normLine(m.Project)
	m.Trigger = normLine(m.Trigger)
	m.Quality = normLine(m.Quality)
	if !m.Created.IsZero() {
		m.Created = m.Created.UTC()
	}
	st := normState(doc.State)
	var hs [numSections]string
	m.Checksum, hs = canonicalHashes(&st, withSections)
	return Document{Meta: m, State: st}, hs
}

// normState cleans every string of st (see normText) and drops empty lists.
func normState(st State) State {
	st.Goal = normText(st.Goal)
	for i := range sections {
		s := &sections[i]
		switch s.kind {
		case kindDecisions:
			st.Decisions = normDecisions(st.Decisions)
		case kindVerification:
			st.Verification = normVerification(st.Verification)
		case kindList, kindFiles:
			p := s.list(&st)
			*p = normStrings(*p, s.kind == kindFiles || s.key == "active-skills")
		}
	}
	return st
}

func normStrings(in []string, single bool) []string {
	if len(in) == 0 {
		return nil
	}
	clean := true
	for _, v := range in {
		if !isClean(v, single) {
			clean = false
			break
		}
	}
	if clean {
		return in
	}
	out := make([]string, len(in))
	for i, v := range in {
		if single {
			out[i] = normPath(v)
		} else {
			out[i] = normText(v)
		}
	}
	return out
}

func normDecisions(in []Decision) []Decision {
	if len(in) == 0 {
		return nil
	}
	for i, d := range in {
		if !isClean(d.Decision, false) || !isClean(d.Rationale, false) {
			out := make([]Decision, len(in))
			copy(out, in[:i])
			for j := i; j < len(in); j++ {
				out[j] = Decision{Decision: normText(in[j].Decision), Rationale: normText(in[j].Rationale)}
			}
			return out
		}
	}
	return in
}

func normVerification(in []Verification) []Verification {
	if len(in) == 0 {
		return nil
	}
	for i, v := range in {
		if !isClean(v.Command, false) || !isClean(v.Outcome, false) || !isClean(v.Detail, false) || !v.ShowsExit() && v.ExitCode != -1 {
			out := make([]Verification, len(in))
			copy(out, in[:i])
			for j := i; j < len(in); j++ {
				w := in[j]
				w.Command, w.Outcome, w.Detail = normText(w.Command), normText(w.Outcome), normText(w.Detail)
				if !w.ShowsExit() {
					w.ExitCode = -1
				}
				out[j] = w
			}
			return out
		}
	}
	return in
}

// isClean reports whether s is already normal: valid UTF-8 without control
// characters (tab and newline allowed unless single).
func isClean(s string, single bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c < 0x20:
			if single || (c != '\t' && c != '\n') {
				return false
			}
		case c == 0x7f:
			return false
		case c >= 0x80:
			// Slow path for non-ASCII: C1 controls and invalid UTF-8.
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 || r >= 0x80 && r <= 0x9f {
				return false
			}
			i += n - 1
		}
	}
	return true
}

// normText is the portable form of free text: invalid UTF-8 becomes U+FFFD,
// CRLF and CR become LF, and control characters other than tab and newline
// are dropped, so any remaining text round-trips through a Markdown file.
func normText(s string) string {
	if isClean(s, false) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\r':
			return '\n'
		case r == '\t' || r == '\n':
			return r
		case unicode.IsControl(r):
			return -1
		}
		return r
	}, s)
}

// normPath is the portable form of a path or a skill name: data only, with
// every control character (tab and newline included) dropped.
func normPath(s string) string {
	if isClean(s, true) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// normLine is the portable form of a front-matter value: one line, control
// characters dropped (tab and newline become spaces), trimmed.
func normLine(s string) string {
	if isClean(s, true) && strings.TrimSpace(s) == s {
		return s
	}
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return ' '
		case unicode.IsControl(r):
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	return strings.TrimSpace(s)
}

// Render writes doc as a .capsule.md file (docs/capsule-format.md). The
// output depends only on the normalised document, and Parse gives back
// Normalize(doc).
func Render(doc Document) []byte {
	doc, hs := normalize(doc, true)
	m := &doc.Meta
	var b strings.Builder
	b.Grow(estimateSize(&doc.State) + 512)
	b.WriteString("---\n")
	kv := func(k, v string) {
		b.WriteString(k)
		b.WriteByte(':')
		if v != "" {
			b.WriteByte(' ')
			b.WriteString(v)
		}
		b.WriteByte('\n')
	}
	kv("format", m.Format)
	kv("checkpoint", m.CheckpointID)
	kv("title", m.Title)
	created := ""
	if !m.Created.IsZero() {
		created = m.Created.Format(time.RFC3339Nano)
	}
	kv("created", created)
	kv("session", m.Session)
	kv("project", m.Project)
	kv("trigger", m.Trigger)
	kv("quality", m.Quality)
	kv("checksum", m.Checksum)
	b.WriteString("sections: ")
	for i := range sections {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(sections[i].key)
		b.WriteByte('=')
		b.WriteString(hs[i])
	}
	b.WriteString("\n---\n")
	for i := range sections {
		b.WriteString("\n## ")
		b.WriteString(sections[i].heading)
		b.WriteString("\n\n")
		if !writeSection(&b, &doc.State, i) {
			b.WriteString(noneMarker)
			b.WriteByte('\n')
		}
	}
	return []byte(b.String())
}

// RenderModelText renders the capsule as the model sees it in its input
// (R-M1): the same sections and item forms as a .capsule.md, without front
// matter and without empty sections.
func RenderModelText(st State) string {
	st = normState(st)
	var b strings.Builder
	b.Grow(estimateSize(&st))
	for i := range sections {
		if sectionEmpty(&st, i) {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("## ")
		b.WriteString(sections[i].heading)
		b.WriteByte('\n')
		writeSection(&b, &st, i)
	}
	return b.String()
}

func estimateSize(st *State) int {
	n := len(st.Goal) + 16*numSections
	for i := range sections {
		switch sections[i].kind {
		case kindDecisions:
			for _, d := range st.Decisions {
				n += len(d.Decision) + len(d.Rationale) + 8
			}
		case kindVerification:
			for _, v := range st.Verification {
				n += len(v.Command) + len(v.Outcome) + 24
			}
		case kindList, kindFiles:
			for _, v := range *sections[i].list(st) {
				n += len(v) + 6
			}
		}
	}
	return n
}

func sectionEmpty(st *State, i int) bool {
	switch sections[i].kind {
	case kindGoal:
		return st.Goal == ""
	case kindDecisions:
		return len(st.Decisions) == 0
	case kindVerification:
		return len(st.Verification) == 0
	}
	return len(*sections[i].list(st)) == 0
}

// writeSection writes the body of section i and reports whether it had any
// content. An item that cannot be one bullet line is written as fenced
// blocks at the section's top level (docs/capsule-format.md "Items"), set
// off by blank lines: a fence inside a list item would lose lines of only
// white space, which CommonMark reads as blank.
func writeSection(b *strings.Builder, st *State, i int) bool {
	if sectionEmpty(st, i) {
		return false
	}
	s := &sections[i]
	if s.kind == kindGoal {
		if goalPlain(st.Goal) {
			b.WriteString(st.Goal)
			b.WriteByte('\n')
		} else {
			writeFence(b, "text", st.Goal)
		}
		return true
	}
	prevBlock := false
	item := func(j int, block bool) {
		if j > 0 && (block || prevBlock) {
			b.WriteByte('\n')
		}
		prevBlock = block
		if !block {
			b.WriteString("- ")
		}
	}
	switch s.kind {
	case kindDecisions:
		for j, d := range st.Decisions {
			if decisionPlain(d) {
				item(j, false)
				b.WriteString(d.Decision)
				if d.Rationale != "" {
					b.WriteString(decisionSep)
					b.WriteString(d.Rationale)
				}
				b.WriteByte('\n')
				continue
			}
			item(j, true)
			writeFence(b, "decision", d.Decision)
			writeFence(b, "rationale", d.Rationale)
		}
	case kindVerification:
		for j, v := range st.Verification {
			if verificationPlain(v) {
				item(j, false)
				writeCodeSpan(b, v.Command)
				b.WriteString(decisionSep)
				b.WriteString(v.Outcome)
				if v.ShowsExit() {
					b.WriteString(" (exit ")
					b.WriteString(strconv.Itoa(v.ExitCode))
					b.WriteString(")")
				}
				if v.Detail != "" {
					b.WriteString(detailJoin(v.Detail))
					b.WriteString(v.Detail)
				}
				b.WriteString("\n")
				continue
			}
			item(j, true)
			writeFence(b, "command", v.Command)
			writeFence(b, "outcome", v.Outcome)
			if v.ShowsExit() {
				writeFence(b, "exit", strconv.Itoa(v.ExitCode))
			}
			if v.Detail != "" {
				writeFence(b, "detail", v.Detail)
			}
		}
	case kindFiles:
		for j, p := range *s.list(st) {
			if p == "" || strings.IndexByte(p, '\n') >= 0 {
				item(j, true)
				writeFence(b, "text", p)
				continue
			}
			item(j, false)
			writeCodeSpan(b, p)
			b.WriteByte('\n')
		}
	default:
		for j, v := range *s.list(st) {
			if plainLine(v) {
				item(j, false)
				b.WriteString(v)
				b.WriteByte('\n')
				continue
			}
			item(j, true)
			writeFence(b, "text", v)
		}
	}
	return true
}

// decisionSep separates a decision from its rationale, and a verification
// command from its outcome.
const decisionSep = " — "

// writeFence writes v as a fenced code block labelled by its info string.
// The fence is longer than any backtick run in v, so no line of v closes it.
// Each line of v is written followed by a newline; the reader drops the last
// newline, so text with or without a trailing newline round-trips.
func writeFence(b *strings.Builder, label, v string) {
	n := max(3, longestRun(v, '`')+1)
	writeRepeat(b, '`', n)
	b.WriteString(label)
	b.WriteByte('\n')
	b.WriteString(v)
	b.WriteByte('\n')
	writeRepeat(b, '`', n)
	b.WriteByte('\n')
}

// writeCodeSpan writes v (one line) as a CommonMark code span: delimited by
// a backtick run longer than any inside it, padded with a space on each side
// when the reader would otherwise strip or misread its edges.
func writeCodeSpan(b *strings.Builder, v string) {
	n := longestRun(v, '`') + 1
	pad := v[0] == '`' || v[len(v)-1] == '`' ||
		(len(v) >= 2 && v[0] == ' ' && v[len(v)-1] == ' ' && strings.Trim(v, " ") != "")
	writeRepeat(b, '`', n)
	if pad {
		b.WriteByte(' ')
	}
	b.WriteString(v)
	if pad {
		b.WriteByte(' ')
	}
	writeRepeat(b, '`', n)
}

func writeRepeat(b *strings.Builder, c byte, n int) {
	for range n {
		b.WriteByte(c)
	}
}

func longestRun(s string, c byte) int {
	i := strings.IndexByte(s, c)
	if i < 0 {
		return 0
	}
	s = s[i:]
	best, cur := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			cur++
			best = max(best, cur)
		} else {
			cur = 0
		}
	}
	return best
}

// plainLine reports whether v can be written as the text of a "- " bullet
// (or a line of the Goal paragraph) and read back byte for byte: one
// non-empty line, no surrounding white space, and no start that Markdown
// would read as another block (heading, quote, list, fence, HTML, rule).
func plainLine(v string) bool {
	if v == "" || strings.IndexByte(v, '\n') >= 0 {
		return false
	}
	first, _ := utf8.DecodeRuneInString(v)
	last, _ := utf8.DecodeLastRuneInString(v)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return false
	}
	return !startsBlock(v)
}

// startsBlock reports whether the line v (no leading white space) would
// start a block other than a paragraph, or end a paragraph above it.
func startsBlock(v string) bool {
	switch c := v[0]; c {
	case '>', '<':
		return true
	case '#':
		n := 0
		for n < len(v) && v[n] == '#' {
			n++
		}
		return n <= 6 && (n == len(v) || v[n] == ' ' || v[n] == '\t')
	case '-', '+', '*':
		if len(v) == 1 || v[1] == ' ' || v[1] == '\t' {
			return true
		}
		return c != '+' && (thematicBreak(v) || c == '-' && setextLine(v, '-'))
	case '_':
		return thematicBreak(v)
	case '=':
		return setextLine(v, '=')
	case '`', '~':
		return strings.HasPrefix(v, strings.Repeat(string(c), 3))
	}
	if v[0] >= '0' && v[0] <= '9' {
		n := 0
		for n < len(v) && v[n] >= '0' && v[n] <= '9' {
			n++
		}
		return n <= 9 && n < len(v) && (v[n] == '.' || v[n] == ')') &&
			(n+1 == len(v) || v[n+1] == ' ' || v[n+1] == '\t')
	}
	return false
}

// thematicBreak reports whether v is a line of three or more '-', '*' or '_'
// with only spaces and tabs between.
func thematicBreak(v string) bool {
	c, n := v[0], 0
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case c:
			n++
		case ' ', '\t':
		default:
			return false
		}
	}
	return n >= 3
}

// setextLine reports whether v is a setext heading underline of c.
func setextLine(v string, c byte) bool {
	t := strings.TrimRight(v, " \t")
	return strings.Trim(t, string(c)) == ""
}

// goalPlain reports whether the goal can be written as a bare paragraph.
func goalPlain(g string) bool {
	if g == noneMarker || g == "*none*" {
		return false
	}
	for line := range strings.SplitSeq(g, "\n") {
		if !plainLine(line) {
			return false
		}
	}
	return true
}

func decisionPlain(d Decision) bool {
	if !plainLine(d.Decision) || strings.Contains(d.Decision, decisionSep) {
		return false
	}
	if d.Rationale == "" {
		return true
	}
	// A decision ending in " —" would move the separator when read back.
	return !strings.HasSuffix(d.Decision, " —") && inlinePlain(d.Rationale)
}

func verificationPlain(v Verification) bool {
	if v.Detail != "" && (!inlinePlain(v.Detail) || strings.HasSuffix(v.Outcome, ":")) {
		return false
	}
	return v.Command != "" && strings.IndexByte(v.Command, '\n') < 0 && outcomeWord(v.Outcome)
}

// inlinePlain reports whether v can follow other text on a bullet's line.
func inlinePlain(v string) bool {
	if v == "" || strings.IndexByte(v, '\n') >= 0 {
		return false
	}
	first, _ := utf8.DecodeRuneInString(v)
	last, _ := utf8.DecodeLastRuneInString(v)
	return !unicode.IsSpace(first) && !unicode.IsSpace(last)
}

// outcomeWord reports whether v is a single word without parentheses, as the
// short verification form needs.
func outcomeWord(v string) bool {
	if v == "" {
		return false
	}
	for _, r := range v {
		if unicode.IsSpace(r) || r == '(' || r == ')' {
			return false
		}
	}
	return true
}
