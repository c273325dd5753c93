package capsule

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"

	"github.com/soba-agent/soba-lsp/internal/lazyregexp"
	sobatext "github.com/soba-agent/soba-lsp/internal/text"
)

// Limits on hostile input, checked before the Markdown parser runs: its cost
// grows with the nesting depth of quotes and lists, which a capsule never
// needs (docs/capsule-format.md "Limits").
const (
	// maxLineMarkers bounds the quote and list markers that open one line.
	maxLineMarkers = 16
	// maxMarkerIndent bounds the indentation (in columns) of a line that
	// starts with a quote or list marker.
	maxMarkerIndent = 64
	// maxWarnings bounds the warnings of one Parse; the rest are counted.
	maxWarnings = 20
)

// blockParser reads only the block structure: every value is taken from the
// source bytes of its block, so inline markup never changes it. Without
// paragraph transformers a "[x]: y" line stays text, not a link definition.
var blockParser = parser.NewParser(parser.WithBlockParsers(parser.DefaultBlockParsers()...))

// ParseError is a malformed capsule: what is wrong and where.
type ParseError struct {
	// File names the capsule in the message when set (see ParseFile).
	File string
	// Line is the 1-based line of the problem, 0 when it has none.
	Line int
	// Section is the heading of the section with the problem, if any.
	Section string
	// Bullet is the 1-based bullet of the section, if any.
	Bullet int
	Msg    string
}

// Error reads like "handoff.capsule.md:12: section "Verification": bullet 2: …".
func (e *ParseError) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Section != "" {
		fmt.Fprintf(&b, "section %q: ", e.Section)
	}
	if e.Bullet > 0 {
		fmt.Fprintf(&b, "bullet %d: ", e.Bullet)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Parse reads a .capsule.md file. It returns the document and warnings about
// hand edits (changed, reordered, missing or unknown sections), or an error
// naming the problem and its line and no document when the file is
// malformed (R-P2). Parsing never executes anything and treats every path
// inside as data.
func Parse(data []byte) (Document, []string, error) {
	return ParseFile("", data)
}

// ParseFile is Parse with the file's name in error messages.
func ParseFile(name string, data []byte) (Document, []string, error) {
	p := &parse{file: name}
	doc, err := p.run(data)
	if err != nil {
		if pe, ok := err.(*ParseError); ok {
			pe.File = name
		}
		return Document{}, nil, err
	}
	return doc, p.finishWarnings(), nil
}

type parse struct {
	file     string
	src      []byte // the body after the front matter
	lineBase int    // lines before src
	lines    []int  // offsets of line starts in src
	warnings []string
	dropped  int
}

func (p *parse) warn(format string, args ...any) {
	if len(p.warnings) >= maxWarnings {
		p.dropped++
		return
	}
	p.warnings = append(p.warnings, fmt.Sprintf(format, args...))
}

func (p *parse) finishWarnings() []string {
	if p.dropped > 0 {
		p.warnings = append(p.warnings, fmt.Sprintf("… and %d more warnings", p.dropped))
	}
	return p.warnings
}

// lineOf returns the file line of offset off in src.
func (p *parse) lineOf(off int) int {
	if off < 0 {
		return 0
	}
	return p.lineBase + 1 + sort.SearchInts(p.lines, off+1)
}

func errf(line int, format string, args ...any) *ParseError {
	return &ParseError{Line: line, Msg: fmt.Sprintf(format, args...)}
}

func (p *parse) run(data []byte) (Document, error) {
	if len(data) > MaxSize {
		return Document{}, errf(0, "capsule is %d bytes, over the %d-byte limit", len(data), MaxSize)
	}
	if err := checkText(data); err != nil {
		return Document{}, err
	}
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	if bytes.IndexByte(data, '\r') >= 0 {
		data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
		data = bytes.ReplaceAll(data, []byte("\r"), []byte("\n"))
	}
	fm, err := p.frontMatter(data)
	if err != nil {
		return Document{}, err
	}
	if err := p.checkNesting(); err != nil {
		return Document{}, err
	}
	st, err := p.body()
	if err != nil {
		return Document{}, err
	}
	st = normState(st)
	p.checkEdits(fm, &st)
	return Document{Meta: fm.meta, State: st}, nil
}

// checkText rejects binary data: NUL bytes and invalid UTF-8.
func checkText(data []byte) error {
	line := 1
	for i := 0; i < len(data); {
		c := data[i]
		switch {
		case c == 0:
			return errf(line, "binary data: NUL byte (a capsule is UTF-8 text)")
		case c == '\n':
			line++
		case c >= 0x80:
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n == 1 {
				return errf(line, "binary data: invalid UTF-8 (a capsule is UTF-8 text)")
			}
			i += n
			continue
		}
		i++
	}
	return nil
}

// frontMatter is what the front matter held beyond Meta.
type frontMatter struct {
	meta     Meta
	sections map[string]string // key → short hash, nil when absent or malformed
}

var (
	keyLine      = lazyregexp.New(`^([a-z][a-z0-9_-]*)[ \t]*:(.*)$`)
	checkpointID = lazyregexp.New(`^ck_[A-Za-z0-9_-]{1,64}$`)
	checksumForm = lazyregexp.New(`^sha256:[0-9a-f]{64}$`)
	sectionsForm = lazyregexp.New(`^[a-z-]+=[0-9a-f]{1,64}$`)
)

// frontMatter reads the "---" block at the top of data and sets p.src to
// the body after it.
func (p *parse) frontMatter(data []byte) (frontMatter, error) {
	var fm frontMatter
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	if strings.TrimRight(string(first), " \t") != "---" {
		return fm, errf(1, "no front matter: a capsule starts with a \"---\" line (format: %s)", Format)
	}
	seen := map[string]int{}
	line := 1
	closed := false
	for len(rest) > 0 {
		var l []byte
		l, rest, _ = bytes.Cut(rest, []byte("\n"))
		line++
		s := strings.TrimRight(string(l), " \t")
		if s == "---" {
			closed = true
			break
		}
		if strings.TrimSpace(s) == "" {
			continue
		}
		m := keyLine.FindStringSubmatch(s)
		if m == nil {
			return fm, errf(line, "front matter: expected \"key: value\", found %q", clip(s))
		}
		k, v := m[1], normLine(m[2])
		if prev, ok := seen[k]; ok {
			return fm, errf(line, "front matter: key %q appears twice (first on line %d)", k, prev)
		}
		seen[k] = line
		switch k {
		case "format":
			fm.meta.Format = v
		case "checkpoint":
			if v != "" && !checkpointID.MatchString(v) {
				return fm, errf(line, "front matter: checkpoint %q is not a checkpoint id (ck_ and up to 64 letters, digits, _ or -)", clip(v))
			}
			fm.meta.CheckpointID = v
		case "title":
			fm.meta.Title = v
		case "created":
			if v != "" {
				t, err := time.Parse(time.RFC3339Nano, v)
				if err != nil {
					return fm, errf(line, "front matter: created %q is not an RFC 3339 time", clip(v))
				}
				fm.meta.Created = t.UTC()
			}
		case "session":
			fm.meta.Session = v
		case "project":
			fm.meta.Project = v
		case "trigger":
			fm.meta.Trigger = v
		case "quality":
			if v != "" && v != QualityFull && v != QualityDegraded {
				return fm, errf(line, "front matter: quality %q is neither %q nor %q", clip(v), QualityFull, QualityDegraded)
			}
			fm.meta.Quality = v
		case "checksum":
			fm.meta.Checksum = v
		case "sections":
			fm.sections = parseSectionHashes(v)
		default:
			p.warn("front matter line %d: unknown key %q ignored", line, k)
		}
	}
	if !closed {
		return fm, errf(line, "front matter: no closing \"---\" line")
	}
	switch f := fm.meta.Format; {
	case f == Format:
	case f == "":
		return fm, errf(0, "front matter: no \"format\" key (expected format: %s)", Format)
	case strings.HasPrefix(f, "soba-capsule/"):
		return fm, errf(seen["format"], "unknown format version %q: this SOBA reads %s", clip(f), Format)
	default:
		return fm, errf(seen["format"], "unknown format %q: not a SOBA capsule (expected %s)", clip(f), Format)
	}
	p.src = rest
	p.lineBase = line
	p.lines = p.lines[:0]
	for i, c := range rest {
		if c == '\n' {
			p.lines = append(p.lines, i+1)
		}
	}
	return fm, nil
}

func parseSectionHashes(v string) map[string]string {
	out := map[string]string{}
	for f := range strings.SplitSeq(v, ",") {
		f = strings.TrimSpace(f)
		if !sectionsForm.MatchString(f) {
			return nil
		}
		k, h, _ := strings.Cut(f, "=")
		out[k] = h
	}
	return out
}

// checkNesting bounds the nesting the Markdown parser will see (see the
// limits above), so hostile input costs bounded time. Lines inside a
// top-level fenced block are text, not structure, and are not counted: that
// is where Render puts any text that is not one plain line. The scan follows
// fences only while it can be sure the Markdown parser sees the same fences
// (fences at column 0, no HTML block at the top level); after a construct
// that could make them differ, every line is checked.
func (p *parse) checkNesting() error {
	line := p.lineBase
	var (
		fenceChar byte // the open fence's character, 0 outside a fence
		fenceLen  int
		strict    bool
	)
	for rest := p.src; len(rest) > 0; {
		var l []byte
		l, rest, _ = bytes.Cut(rest, []byte("\n"))
		line++
		col, start := indentOf(l)
		if fenceChar != 0 {
			if col <= 3 && fenceRun(l[start:], fenceChar) >= fenceLen &&
				len(bytes.Trim(l[start:], string(fenceChar)+" \t")) == 0 {
				fenceChar = 0
			}
			continue
		}
		if err := checkMarkers(l, line); err != nil {
			return err
		}
		if strict || start == len(l) {
			continue
		}
		c := l[start]
		switch {
		case col <= 3 && c == '<':
			strict = true
		case c == '`' || c == '~':
			n := fenceRun(l[start:], c)
			if n < 3 || c == '`' && bytes.IndexByte(l[start+n:], '`') >= 0 {
				continue
			}
			if col == 0 {
				fenceChar, fenceLen = c, n
			} else if col <= 3 {
				strict = true
			}
		}
	}
	return nil
}

// indentOf returns the indentation of l in columns (tabs to multiples of 4)
// and the offset of its first other byte.
func indentOf(l []byte) (col, start int) {
	for start < len(l) {
		switch l[start] {
		case ' ':
			col++
		case '\t':
			col += 4 - col%4
		default:
			return col, start
		}
		start++
	}
	return col, start
}

// fenceRun is the number of c at the start of l.
func fenceRun(l []byte, c byte) int {
	n := 0
	for n < len(l) && l[n] == c {
		n++
	}
	return n
}

// checkMarkers checks one line's quote and list markers against the limits.
func checkMarkers(l []byte, line int) error {
	col, markers := 0, 0
	for i := 0; i < len(l); {
		c := l[i]
		switch {
		case c == ' ':
			col++
			i++
			continue
		case c == '\t':
			col += 4 - col%4
			i++
			continue
		case c == '>':
			i++
		case (c == '-' || c == '+' || c == '*') && (i+1 == len(l) || l[i+1] == ' ' || l[i+1] == '\t'):
			i++
		case c >= '0' && c <= '9':
			j := i
			for j < len(l) && j-i < 10 && l[j] >= '0' && l[j] <= '9' {
				j++
			}
			if j < len(l) && (l[j] == '.' || l[j] == ')') && (j+1 == len(l) || l[j+1] == ' ' || l[j+1] == '\t') {
				i = j + 1
				break
			}
			return nil
		default:
			return nil
		}
		markers++
		if markers > maxLineMarkers {
			return errf(line, "quotes or lists nested more than %d deep on one line", maxLineMarkers)
		}
		if col > maxMarkerIndent {
			return errf(line, "quote or list marker indented more than %d columns", maxMarkerIndent)
		}
		col++
	}
	return nil
}

// sectionState is what the body walk found for one known section.
type sectionState struct {
	line  int // heading line, 0 when the section is missing
	nodes []ast.Node
}

// body walks the Markdown body: each "## " heading opens a section; its
// blocks up to the next "## " heading are its content.
func (p *parse) body() (State, error) {
	doc := blockParser.Parse(text.NewReader(p.src))
	var (
		found   [numSections]sectionState
		order   []int
		cur     = -1 // index into sections, -1 before the first, -2 in an unknown section
		unknown struct {
			heading string
			start   int
		}
		notes    []string
		preamble = -1
	)
	flushUnknown := func(end int) {
		if cur != -2 {
			return
		}
		body := strings.TrimSpace(string(p.src[unknown.start:end]))
		note := unknown.heading
		if body != "" {
			note += ": " + body
		}
		notes = append(notes, note)
	}
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		h, ok := n.(*ast.Heading)
		if !ok || h.Level != 2 {
			switch cur {
			case -1:
				if preamble < 0 {
					preamble = p.lineOf(nodePos(n))
				}
			case -2:
			default:
				found[cur].nodes = append(found[cur].nodes, n)
			}
			continue
		}
		flushUnknown(nodePos(n))
		title := strings.TrimSpace(p.raw(h))
		line := p.lineOf(nodePos(n))
		i := sectionIndex(title)
		if i < 0 {
			p.warn("line %d: unknown section %q kept under Notes", line, clip(title))
			cur = -2
			unknown.heading = title
			unknown.start = len(p.src)
			if next := n.NextSibling(); next != nil {
				unknown.start = nodePos(next)
			}
			continue
		}
		if found[i].line > 0 {
			return State{}, errf(line, "section %q appears twice (first on line %d)", sections[i].heading, found[i].line)
		}
		found[i].line = line
		order = append(order, i)
		cur = i
	}
	flushUnknown(len(p.src))
	if preamble > 0 {
		p.warn("line %d: text before the first section ignored", preamble)
	}
	if !sort.IntsAreSorted(order) {
		p.warn("sections are out of order (expected %s); loaded by heading", headingList(nil))
	}
	var missing []int
	var st State
	for i := range sections {
		if found[i].line == 0 {
			missing = append(missing, i)
			continue
		}
		if err := p.section(&st, i, found[i].nodes); err != nil {
			err.Section = sections[i].heading
			return State{}, err
		}
	}
	if len(missing) > 0 {
		p.warn("sections missing, loaded as empty: %s", headingList(missing))
	}
	st.Notes = append(st.Notes, notes...)
	return st, nil
}

func headingList(idx []int) string {
	var names []string
	if idx == nil {
		for i := range sections {
			names = append(names, sections[i].heading)
		}
	} else {
		for _, i := range idx {
			names = append(names, sections[i].heading)
		}
	}
	return strings.Join(names, ", ")
}

// sectionIndex maps a heading to its section: case-insensitive, runs of
// white space as one space, a trailing colon ignored.
func sectionIndex(title string) int {
	t := strings.ToLower(strings.Join(strings.Fields(title), " "))
	t = strings.TrimSpace(strings.TrimSuffix(t, ":"))
	for i := range sections {
		if strings.ToLower(sections[i].heading) == t {
			return i
		}
	}
	return -1
}

// nodePos is the source offset of a block: its own, or its first child's.
func nodePos(n ast.Node) int {
	for ; n != nil; n = n.FirstChild() {
		if pos := n.Pos(); pos >= 0 {
			return pos
		}
		if l := n.Lines(); l != nil && l.Len() > 0 {
			return l.At(0).Start
		}
	}
	return -1
}

// raw is the source text of a leaf block's lines: each line trimmed of
// surrounding white space, joined by newlines.
func (p *parse) raw(n ast.Node) string {
	l := n.Lines()
	if l.Len() == 1 {
		s := l.At(0)
		return strings.Trim(string(s.Value(p.src)), " \t\n")
	}
	var b strings.Builder
	for i := 0; i < l.Len(); i++ {
		if i > 0 {
			b.WriteByte('\n')
		}
		s := l.At(i)
		b.WriteString(strings.Trim(string(s.Value(p.src)), " \t\n"))
	}
	return b.String()
}

// fenceText is the content of a fenced block, without the newline that ends
// its last line.
func (p *parse) fenceText(n *ast.FencedCodeBlock) string {
	var b strings.Builder
	l := n.Lines()
	for i := 0; i < l.Len(); i++ {
		s := l.At(i)
		for range s.Padding {
			b.WriteByte(' ')
		}
		b.Write(s.Value(p.src))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func (p *parse) fenceLabel(n *ast.FencedCodeBlock) string {
	if n.Info == nil {
		return ""
	}
	return strings.ToLower(strings.TrimSpace(string(n.Info.Segment.Value(p.src))))
}

func isNone(s string) bool { return s == noneMarker || s == "*none*" }

func kindName(n ast.Node) string {
	switch n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		return "a paragraph"
	case *ast.List:
		return "a list"
	case *ast.Blockquote:
		return "a block quote"
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		return "a code block"
	case *ast.Heading:
		return "a heading"
	case *ast.ThematicBreak:
		return "a horizontal rule"
	case *ast.HTMLBlock:
		return "an HTML block"
	}
	return "a " + n.Kind().String() + " block"
}

// section reads the content of section i into st: bullets, and items
// written as fenced blocks between them.
func (p *parse) section(st *State, i int, nodes []ast.Node) *ParseError {
	s := &sections[i]
	if len(nodes) == 1 {
		if para, ok := nodes[0].(*ast.Paragraph); ok && isNone(p.raw(para)) {
			return nil
		}
	}
	if s.kind == kindGoal {
		return p.goal(st, nodes)
	}
	bullet := 0
	var open map[string]string // the fenced item being read
	openLine := 0
	flush := func() *ParseError {
		if open == nil {
			return nil
		}
		err := p.addParts(st, i, open)
		if err != nil {
			err.Bullet, err.Line = bullet, openLine
		}
		open = nil
		return err
	}
	for _, n := range nodes {
		switch n := n.(type) {
		case *ast.List:
			if err := flush(); err != nil {
				return err
			}
			for it := n.FirstChild(); it != nil; it = it.NextSibling() {
				bullet++
				if err := p.item(st, i, it); err != nil {
					err.Bullet = bullet
					if err.Line == 0 {
						err.Line = p.lineOf(nodePos(it))
					}
					return err
				}
			}
		case *ast.FencedCodeBlock:
			label, err := p.label(s.kind, n)
			if err != nil {
				err.Bullet = bullet + 1
				return err
			}
			// A block starts a new item unless it is a later part of the open one.
			if _, seen := open[label]; open == nil || seen || label == firstPart(s.kind) {
				if err := flush(); err != nil {
					return err
				}
				bullet++
				open = map[string]string{}
				openLine = p.lineOf(nodePos(n))
			}
			open[label] = p.fenceText(n)
		default:
			return errf(p.lineOf(nodePos(n)), "expected a list of \"- \" bullets or fenced blocks (or %s), found %s", noneMarker, kindName(n))
		}
	}
	return flush()
}

// firstPart is the label that opens an item written as fenced blocks.
func firstPart(k itemKind) string {
	switch k {
	case kindDecisions:
		return "decision"
	case kindVerification:
		return "command"
	}
	return "text"
}

// label returns the part a fenced block holds; no label means "text".
func (p *parse) label(k itemKind, n *ast.FencedCodeBlock) (string, *ParseError) {
	l := p.fenceLabel(n)
	if l == "" {
		l = "text"
	}
	if !labelAllowed(k, l) {
		return "", errf(p.lineOf(nodePos(n)), "fenced block labelled %q, expected %s", clip(l), labelsOf(k))
	}
	return l, nil
}

// addParts appends an item read from fenced blocks.
func (p *parse) addParts(st *State, i int, parts map[string]string) *ParseError {
	switch s := &sections[i]; s.kind {
	case kindDecisions:
		st.Decisions = append(st.Decisions, Decision{Decision: parts["decision"], Rationale: parts["rationale"]})
	case kindVerification:
		v := Verification{Command: parts["command"], Outcome: parts["outcome"], Detail: parts["detail"], ExitCode: -1}
		if e, ok := parts["exit"]; ok {
			n, err := strconv.Atoi(strings.TrimSpace(e))
			if err != nil {
				return errf(0, "exit block %q is not an integer", clip(e))
			}
			v.ExitCode = n
		}
		st.Verification = append(st.Verification, v)
	default:
		l := s.list(st)
		*l = append(*l, parts["text"])
	}
	return nil
}

func (p *parse) goal(st *State, nodes []ast.Node) *ParseError {
	var paras []string
	for _, n := range nodes {
		switch n := n.(type) {
		case *ast.Paragraph:
			paras = append(paras, p.raw(n))
		case *ast.FencedCodeBlock:
			if len(nodes) != 1 {
				return errf(p.lineOf(nodePos(n)), "expected one paragraph or one fenced block, found a code block among other blocks")
			}
			if l := p.fenceLabel(n); l != "" && l != "text" {
				return errf(p.lineOf(nodePos(n)), "fenced block labelled %q, expected \"text\"", clip(l))
			}
			st.Goal = p.fenceText(n)
			return nil
		default:
			return errf(p.lineOf(nodePos(n)), "expected a paragraph, found %s", kindName(n))
		}
	}
	st.Goal = strings.Join(paras, "\n\n")
	return nil
}

// item reads one bullet of section i: one line of text, or fenced blocks.
func (p *parse) item(st *State, i int, it ast.Node) *ParseError {
	s := &sections[i]
	var (
		plain  *string
		fences map[string]string
	)
	for c := it.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.TextBlock, *ast.Paragraph:
			if plain != nil || fences != nil {
				return errf(p.lineOf(nodePos(c)), "expected one line of text or only fenced blocks, found more text")
			}
			v := p.raw(c)
			plain = &v
		case *ast.FencedCodeBlock:
			if plain != nil {
				return errf(p.lineOf(nodePos(c)), "expected one line of text or only fenced blocks, found both")
			}
			label, err := p.label(s.kind, c)
			if err != nil {
				return err
			}
			if fences == nil {
				fences = map[string]string{}
			}
			if _, dup := fences[label]; dup {
				return errf(p.lineOf(nodePos(c)), "two fenced blocks labelled %q", label)
			}
			fences[label] = p.fenceText(c)
		default:
			return errf(p.lineOf(nodePos(c)), "expected one line of text or fenced blocks, found %s", kindName(c))
		}
	}
	switch {
	case plain == nil && fences == nil:
		return errf(0, "empty bullet")
	case fences != nil:
		return p.addParts(st, i, fences)
	}
	switch s.kind {
	case kindDecisions:
		var d Decision
		d.Decision, d.Rationale, _ = strings.Cut(*plain, decisionSep)
		st.Decisions = append(st.Decisions, d)
	case kindVerification:
		v, err := parseVerification(*plain)
		if err != nil {
			return errf(0, "%v", err)
		}
		st.Verification = append(st.Verification, v)
	case kindFiles:
		v := *plain
		if c, ok := wholeCodeSpan(v); ok {
			v = c
		}
		l := s.list(st)
		*l = append(*l, v)
	default:
		l := s.list(st)
		*l = append(*l, *plain)
	}
	return nil
}

func labelAllowed(k itemKind, label string) bool {
	switch k {
	case kindDecisions:
		return label == "decision" || label == "rationale"
	case kindVerification:
		return label == "command" || label == "outcome" || label == "exit" || label == "detail"
	}
	return label == "text"
}

func labelsOf(k itemKind) string {
	switch k {
	case kindDecisions:
		return `"decision" and "rationale"`
	case kindVerification:
		return `"command", "outcome", "exit" and "detail"`
	}
	return `"text"`
}

// verificationSeps are the dashes accepted between a command and its
// outcome: the code span ends the command, so any of them is unambiguous.
var verificationSeps = []string{" — ", " – ", " -- ", " - "}

// parseVerification reads "`command` — outcome", with " (exit N)" when
// the line shows the check's exit status and ": detail" (or " in … step")
// when it carries a detail; without an exit status ExitCode is -1.
func parseVerification(s string) (Verification, error) {
	const form = "expected \"`command` — outcome (exit N)\""
	cmd, rest, ok := leadingCodeSpan(s)
	if !ok || cmd == "" {
		return Verification{}, fmt.Errorf("%s, found %q: the command is not in backticks", form, clip(s))
	}
	sep := ""
	for _, d := range verificationSeps {
		if strings.HasPrefix(rest, d) {
			sep = d
			break
		}
	}
	if sep == "" {
		return Verification{}, fmt.Errorf("%s, found %q: no \" — \" after the command", form, clip(s))
	}
	rest = strings.TrimSpace(rest[len(sep):])
	v := Verification{Command: cmd, ExitCode: -1}
	word, after, _ := strings.Cut(rest, " ")
	if after != "" {
		after = " " + after
	}
	if w, ok := strings.CutSuffix(word, ":"); ok && after != "" {
		v.Outcome, v.Detail = w, strings.TrimSpace(after)
	} else {
		v.Outcome = word
		if a, ok := strings.CutPrefix(after, " (exit "); ok {
			num, tail, ok := strings.Cut(a, ")")
			code, err := strconv.Atoi(num)
			if !ok || err != nil {
				return Verification{}, fmt.Errorf("%s, found %q: the exit code is not an integer", form, clip(s))
			}
			v.ExitCode, after = code, tail
		}
		switch {
		case after == "":
		case strings.HasPrefix(after, ": "):
			v.Detail = strings.TrimSpace(after[2:])
		case strings.HasPrefix(after, " in "):
			v.Detail = strings.TrimSpace(after)
		case v.ExitCode == -1:
			outcome, _, _ := strings.Cut(rest, " (exit ")
			return Verification{}, fmt.Errorf("%s, found %q: the outcome %q is not one word", form, clip(s), clip(outcome))
		default:
			return Verification{}, fmt.Errorf("%s, found %q: %q after the exit code", form, clip(s), clip(after))
		}
	}
	if !outcomeWord(v.Outcome) {
		return Verification{}, fmt.Errorf("%s, found %q: the outcome %q is not one word", form, clip(s), clip(v.Outcome))
	}
	return v, nil
}

// leadingCodeSpan reads a CommonMark code span at the start of s and
// returns its content and the text after it.
func leadingCodeSpan(s string) (content, rest string, ok bool) {
	n := 0
	for n < len(s) && s[n] == '`' {
		n++
	}
	if n == 0 {
		return "", s, false
	}
	for i := n; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] == '`' {
			j++
		}
		if j-i == n {
			c := s[n:i]
			if len(c) >= 2 && c[0] == ' ' && c[len(c)-1] == ' ' && strings.Trim(c, " ") != "" {
				c = c[1 : len(c)-1]
			}
			return c, s[j:], true
		}
		i = j
	}
	return "", s, false
}

// wholeCodeSpan returns the content of s when s is exactly one code span.
func wholeCodeSpan(s string) (string, bool) {
	c, rest, ok := leadingCodeSpan(s)
	if !ok || rest != "" || c == "" {
		return "", false
	}
	return c, true
}

// checkEdits warns when the state no longer matches the checksum written at
// export, naming the sections whose content changed when the front matter
// carries section hashes.
func (p *parse) checkEdits(fm frontMatter, st *State) {
	sum := fm.meta.Checksum
	switch {
	case sum == "":
		p.warn("capsule has no checksum: it cannot be checked for edits since export")
		return
	case !checksumForm.MatchString(sum):
		p.warn("checksum %q is not sha256:<64 hex digits>: the capsule cannot be checked for edits", clip(sum))
		return
	case sum == Checksum(*st):
		return
	}
	if fm.sections == nil {
		p.warn("capsule was edited since export: its content no longer matches the checksum")
		return
	}
	hs := sectionHashes(st)
	var changed []int
	for i := range sections {
		if fm.sections[sections[i].key] != hs[i] {
			changed = append(changed, i)
		}
	}
	if len(changed) == 0 {
		p.warn("capsule was edited since export: its content no longer matches the checksum")
		return
	}
	word := "sections"
	if len(changed) == 1 {
		word = "section"
	}
	p.warn("capsule was edited since export: %s %s changed", word, headingList(changed))
}

// clip shortens s for an error message: 60 bytes and an ellipsis.
func clip(s string) string { return sobatext.Clip(s, 60+len("…")) }
