// Package importer converts other coding agents' transcripts into SOBA
// sessions: pi sessions (format v1, linear, and v2/v3 trees), Claude Code
// project JSONL, Codex CLI rollout files and opencode sessions (an
// `opencode export` document, or the session's files in opencode's storage
// directory through ConvertFile). The format is detected from the content. Tool calls are renamed to SOBA's tools where they match
// (PROTOCOL.md "Agent tools") and their results carry the artifacts the
// compaction engine reads (R-C2); a foreign compaction summary becomes a
// capsule entry. The source is only read.
//
// Convert (or ConvertFile, for a path) builds the entries in memory; Write
// stores them through the session store. See docs/cli.md for what each format maps to.
package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/sourcegraph/conc/pool"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/compaction/tokens"
	"github.com/soba-agent/soba-lsp/internal/id"
	"github.com/soba-agent/soba-lsp/internal/jsondec"
	"github.com/soba-agent/soba-lsp/session"
)

// Format names a foreign transcript format.
type Format string

// The formats Convert reads.
const (
	FormatPi       Format = "pi"
	FormatClaude   Format = "claude-code"
	FormatCodex    Format = "codex"
	FormatOpencode Format = "opencode"
)

// Formats lists the formats Convert reads, for messages.
var Formats = []Format{FormatPi, FormatClaude, FormatCodex, FormatOpencode}

// Problem is a source line that was skipped (not JSON, not an entry of the
// format, a tool result without its call), or a note about the conversion.
type Problem struct {
	// File is the source file the problem is in, when the source is more
	// than one file (opencode's storage directory); "" for the file
	// converted.
	File string
	// Line is the 1-based line of the source; 0 for a note about the whole
	// file.
	Line    int
	Message string
}

func (p Problem) String() string {
	switch {
	case p.File != "" && p.Line > 0:
		return fmt.Sprintf("%s: line %d: %s", p.File, p.Line, p.Message)
	case p.File != "":
		return p.File + ": " + p.Message
	case p.Line > 0:
		return fmt.Sprintf("line %d: %s", p.Line, p.Message)
	}
	return p.Message
}

// Stats count what a conversion read and wrote.
type Stats struct {
	// Lines is the number of non-empty source lines.
	Lines int
	// Files is the number of source files read, when the source is more
	// than one (opencode's storage directory).
	Files int
	// UserMessages counts the user's own messages written as user entries.
	UserMessages int
	// UserCommands counts shell commands the user ran in pi (`!cmd`,
	// bashExecution), written as user entries as pi sends them to its model.
	UserCommands int
	Assistants   int
	ToolCalls    int
	// MappedCalls counts the tool calls renamed to a SOBA tool.
	MappedCalls int
	ToolResults int
	Capsules    int
	// Skipped counts source entries not written, by kind (for example
	// "thinking_level_change", "sidechain", "event_msg").
	Skipped map[string]int
}

// Result is a converted transcript, ready for Write.
type Result struct {
	Format Format
	// SourceID is the source's own session id, when it has one.
	SourceID string
	// Cwd is the source's working directory; paths under it were made
	// relative, as SOBA's tools take workspace-relative paths.
	Cwd string
	// Title is the source's own title for the session (Claude Code's
	// summary entries), when it has one.
	Title string
	// Entries are the session's entries in file order, after the header.
	// An entry with a nil ParentID hangs from the session header.
	Entries []session.Entry
	// Leaf is the id of the entry the session continues from ("" for an
	// empty transcript).
	Leaf     string
	Problems []Problem
	Stats    Stats
}

// Options tune Convert.
type Options struct {
	// Format is the source format; "" detects it from the content.
	Format Format
	// Estimate gives Entry.Tokens; nil means tokens.EntryTokens, the
	// estimate the server writes.
	Estimate func(*session.Entry) int
	// Counter measures imported capsules; nil means tokens.Default().
	Counter compaction.Counter
}

// ErrUnknownFormat is returned (wrapped) when the content matches no format.
var ErrUnknownFormat = errors.New("not a transcript format this version imports (pi, Claude Code, Codex, opencode)")

// Convert converts the foreign transcript data. Malformed lines are listed in
// Result.Problems and skipped; an error means nothing usable was found.
func Convert(data []byte, opt Options) (*Result, error) {
	f := opt.Format
	if f == "" {
		var err error
		if f, err = Detect(data); err != nil {
			return nil, err
		}
	}
	b := newBuilder(f, opt)
	var err error
	switch f {
	case FormatPi:
		err = convertPi(b, data)
	case FormatClaude:
		err = convertClaude(b, data)
	case FormatCodex:
		err = convertCodex(b, data)
	case FormatOpencode:
		err = convertOpencodeData(b, data)
	default:
		return nil, fmt.Errorf("unknown format %q (known: pi, claude-code, codex, opencode)", f)
	}
	if err != nil {
		return nil, err
	}
	b.finishTokens()
	return b.res, nil
}

// Detect names the format of data from its first entries: an opencode
// JSON document ({info, messages} from `opencode export`, or a storage
// session file), pi's `session` header or `message` entries with
// `message.role`, Codex's {timestamp, type, payload} lines, or Claude Code's
// `uuid`/`parentUuid` entries.
func Detect(data []byte) (Format, error) {
	if opencodeKind(data) != ocNone {
		return FormatOpencode, nil
	}
	seen := 0
	var verdict Format
	eachLine(data, func(_ int, line []byte) bool {
		var probe struct {
			Type       string          `json:"type"`
			Payload    json.RawMessage `json:"payload"`
			Message    json.RawMessage `json:"message"`
			UUID       *string         `json:"uuid"`
			ParentUUID json.RawMessage `json:"parentUuid"`
			LeafUUID   *string         `json:"leafUuid"`
			Cwd        *string         `json:"cwd"`
			SessionID  *string         `json:"sessionId"`
		}
		if jsondec.Unmarshal(line, &probe) != nil {
			return true // a damaged line says nothing; look further
		}
		seen++
		switch {
		case probe.Payload != nil && codexLineTypes[probe.Type]:
			verdict = FormatCodex
		case probe.UUID != nil || probe.ParentUUID != nil || probe.LeafUUID != nil ||
			probe.Type == "file-history-snapshot" || (probe.SessionID != nil && probe.Message != nil):
			verdict = FormatClaude
		case probe.Type == "session" && probe.Cwd != nil, probe.Type == "message" && probe.Message != nil,
			probe.Type == "compaction", probe.Type == "model_change", probe.Type == "thinking_level_change":
			verdict = FormatPi
		}
		return verdict == "" && seen < 50
	})
	if verdict == "" {
		return "", fmt.Errorf("%w: the first entries look like none of pi (a \"session\" header, \"message\" entries), Claude Code (\"uuid\"/\"parentUuid\" entries), Codex (\"session_meta\"/\"response_item\" lines) or opencode (an `opencode export` document {\"info\", \"messages\"}, or a storage session file)", ErrUnknownFormat)
	}
	return verdict, nil
}

// eachLine calls f with every non-blank line of data and its 1-based number,
// a trailing "\r" removed, until f returns false.
func eachLine(data []byte, f func(no int, line []byte) bool) {
	no := 0
	for len(data) > 0 {
		no++
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !f(no, line) {
			return
		}
	}
}

// decodedLine is one non-blank line of a source file decoded into T.
type decodedLine[T any] struct {
	no  int
	v   T
	err error
}

// decodeLines decodes every non-blank line of data into T, in parallel
// (JSON decoding is most of an import's cost), keeping file order; the
// conversion that follows runs in order over the results.
func decodeLines[T any](data []byte) []decodedLine[T] {
	var out []decodedLine[T]
	var raw [][]byte
	eachLine(data, func(no int, line []byte) bool {
		out = append(out, decodedLine[T]{no: no})
		raw = append(raw, line)
		return true
	})
	workers := runtime.GOMAXPROCS(0)
	per := max(1, (len(out)+workers-1)/workers)
	p := pool.New().WithMaxGoroutines(workers)
	for start := 0; start < len(out); start += per {
		end := min(start+per, len(out))
		p.Go(func() {
			for i := start; i < end; i++ {
				out[i].err = jsondec.Unmarshal(raw[i], &out[i].v)
			}
		})
	}
	p.Wait()
	return out
}

// builder accumulates the converted entries.
type builder struct {
	res     *Result
	est     func(*session.Entry) int
	counter compaction.Counter
	index   map[string]int // new id → position in res.Entries
	// ord is each written entry's source ordinal (the position of the source
	// entry it came from), to map a foreign "first kept entry" onto a path.
	ord       []int
	estimated int // res.Entries[:estimated] have their Tokens
	// calls are the tool calls awaiting a result, by source call id.
	calls map[string]*mappedCall

	// A streamed import (ImportFile) writes res.Entries to sink a window
	// at a time: flushed entries were written and dropped, and positions in
	// index count them; streamErr is the first failure of the stream.
	sink      *streamWriter
	flushed   int
	streamErr error
}

func newBuilder(f Format, opt Options) *builder {
	b := &builder{
		res:     &Result{Format: f, Stats: Stats{Skipped: map[string]int{}}},
		est:     opt.Estimate,
		counter: opt.Counter,
		index:   map[string]int{},
		calls:   map[string]*mappedCall{},
	}
	if b.est == nil {
		b.est = tokens.EntryTokens
	}
	if b.counter == nil {
		b.counter = tokens.Default()
	}
	return b
}

func (b *builder) problem(line int, format string, args ...any) {
	b.res.Problems = append(b.res.Problems, Problem{Line: line, Message: fmt.Sprintf(format, args...)})
}

func (b *builder) skip(kind string) { b.res.Stats.Skipped[kind]++ }

// newID returns a fresh entry id, the store's own id shape.
func (b *builder) newID() string {
	return id.Entry(func(e string) bool { _, dup := b.index[e]; return dup })
}

// newCheckpointID returns a capsule checkpoint id in the agent's shape.
func (b *builder) newCheckpointID() string { return id.Checkpoint() }

// add appends e hanging from parent ("" for the session header) and returns
// its new id. ord is the source ordinal it came from.
func (b *builder) add(e session.Entry, parent string, ord int) string {
	e.ID = b.newID()
	if parent != "" {
		p := parent
		e.ParentID = &p
	}
	b.index[e.ID] = b.flushed + len(b.res.Entries)
	b.res.Entries = append(b.res.Entries, e)
	b.ord = append(b.ord, ord)
	if b.sink != nil && len(b.res.Entries) >= streamWindow && b.streamErr == nil {
		// The new id is returned before its entry is written: later entries
		// name it only as their parent, which the store checks then.
		defer func() { b.streamErr = b.flush() }()
	}
	switch e.Type {
	case session.TypeUser:
		// counted by the caller: user messages and user commands differ
	case session.TypeAssistant:
		b.res.Stats.Assistants++ // its tool calls are counted by addCall
	case session.TypeToolResult:
		b.res.Stats.ToolResults++
	case session.TypeCapsule:
		b.res.Stats.Capsules++
	}
	return e.ID
}

// entry returns the written entry with this id, for merging into it.
func (b *builder) entry(id string) *session.Entry {
	i, ok := b.index[id]
	if !ok || i < b.flushed {
		return nil // a streamed entry already written cannot change
	}
	i -= b.flushed
	if i < b.estimated {
		b.estimated = i // its content changes: estimate it again
	}
	return &b.res.Entries[i]
}

// parallelAbove is the number of entries from which finishTokens spreads
// the estimates over the cores: tokenizing is most of an import's work.
const parallelAbove = 256

// finishTokens sets Entry.Tokens of every entry not estimated yet. Large
// batches are estimated in parallel chunks (the estimate must be safe for
// concurrent use, as tokens.Counter is); each entry is written by one worker.
func (b *builder) finishTokens() {
	todo := b.res.Entries[b.estimated:]
	b.estimated = len(b.res.Entries)
	workers := runtime.GOMAXPROCS(0)
	if len(todo) < parallelAbove || workers < 2 {
		for i := range todo {
			todo[i].Tokens = b.est(&todo[i])
		}
		return
	}
	p := pool.New().WithMaxGoroutines(workers)
	chunk := (len(todo) + 4*workers - 1) / (4 * workers)
	for lo := 0; lo < len(todo); lo += chunk {
		part := todo[lo:min(lo+chunk, len(todo))]
		p.Go(func() {
			for i := range part {
				part[i].Tokens = b.est(&part[i])
			}
		})
	}
	p.Wait() // a panic in an estimate is re-raised here, on the caller
}

// pathTo returns the path root → id of written entries (the session header
// excluded).
func (b *builder) pathTo(id string) compaction.Entries {
	if b.sink != nil {
		p, err := b.pathToStream(id)
		if err != nil && b.streamErr == nil {
			b.streamErr = err
		}
		return p
	}
	var rev []int
	for id != "" {
		i, ok := b.index[id]
		if !ok {
			break
		}
		rev = append(rev, i)
		id = b.res.Entries[i].Parent()
	}
	out := make(compaction.Entries, len(rev))
	for j, i := range rev {
		out[len(rev)-1-j] = b.res.Entries[i]
	}
	return out
}

// foreignCompaction is another agent's compaction: its summary and where
// its kept tail began.
type foreignCompaction struct {
	summary string
	// keepFrom is the source ordinal of the first kept entry; -1 when the
	// compaction kept nothing of the history before it.
	keepFrom     int
	tokensBefore int
	trigger      string
	title        string
	// native is the foreign compaction's provider-side continuation, if it
	// recorded one.
	native *capsule.Native
	// ts is when the source recorded the compaction: the capsule keeps it,
	// not the time of the import.
	ts time.Time
}

// addCapsule turns a foreign compaction into a capsule entry hanging from
// parent. The engine builds it as it builds its own capsules (BuildCapsule):
// the foreign summary is the model summary, merged with the exact artifacts
// of the entries it replaced and rolled into the previous capsule (R-M4), so
// nothing the session recorded is lost at the import.
func (b *builder) addCapsule(parent string, ord int, fc foreignCompaction) string {
	b.finishTokens()
	path := b.pathTo(parent)
	base, err := compaction.FindBase(path)
	if err != nil {
		base = compaction.Base{CapsuleIndex: -1}
	}
	first := len(path)
	if fc.keepFrom >= 0 {
		for i := base.Start; i < len(path); i++ {
			if b.ord[b.index[path[i].ID]] >= fc.keepFrom {
				first = i
				break
			}
		}
	}
	cut := compaction.Cut{FirstKept: first}
	for i := base.Start; i < len(path); i++ {
		if i == base.CapsuleIndex || !modelEntry(path[i].Type) {
			continue
		}
		if i >= first {
			cut.KeptTokens += path[i].Tokens
		} else {
			cut.CompactTokens += path[i].Tokens
		}
	}
	if first < len(path) {
		cut.FirstKeptID = path[first].ID
	}
	plan := compaction.Plan{
		PlanRequest:  compaction.PlanRequest{CheckpointID: b.newCheckpointID(), Trigger: fc.trigger},
		Base:         base,
		Cut:          cut,
		TokensBefore: fc.tokensBefore,
		PathLen:      len(path),
	}
	summary := summaryState(fc.summary)
	cp, err := compaction.BuildCapsule(path, b.counter, plan, &summary, false)
	if err != nil { // Entries never fail to load; keep the summary alone
		cp = compaction.Capsule{Entry: session.Capsule{CheckpointID: plan.CheckpointID, Trigger: fc.trigger,
			FirstKeptEntryID: cut.FirstKeptID, Quality: capsule.QualityFull, State: summary}}
	}
	c := cp.Entry
	c.TokensBefore = fc.tokensBefore
	c.Title = fc.title
	c.Native = fc.native
	return b.add(session.Entry{Type: session.TypeCapsule, Timestamp: fc.ts, Capsule: &c}, parent, ord)
}

func modelEntry(t string) bool {
	return t == session.TypeUser || t == session.TypeAssistant || t == session.TypeToolResult
}

// rel makes p relative to the source's working directory when it lies under
// it; other paths stay as they are.
func (b *builder) rel(p string) string {
	cwd := b.res.Cwd
	if p == "" || cwd == "" || !filepath.IsAbs(p) {
		return p
	}
	r, err := filepath.Rel(filepath.Clean(cwd), filepath.Clean(p))
	if err != nil || r == ".." || strings.HasPrefix(r, "../") {
		return p
	}
	return r
}

// parseTime reads an RFC 3339 timestamp; a missing or bad one is zero (the
// store then stamps the import time).
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// addUser writes a user entry.
func (b *builder) addUser(text string, ts time.Time, parent string, ord int, command bool) string {
	if command {
		b.res.Stats.UserCommands++
	} else {
		b.res.Stats.UserMessages++
	}
	return b.add(session.Entry{Type: session.TypeUser, Timestamp: ts, User: &session.UserMessage{Text: text}}, parent, ord)
}

// addCall records a mapped tool call for its result and returns the SOBA
// tool call.
func (b *builder) addCall(id string, c *mappedCall) session.ToolCall {
	b.res.Stats.ToolCalls++
	if c.mapped {
		b.res.Stats.MappedCalls++
	}
	b.calls[id] = c
	return session.ToolCall{ID: id, Name: c.name, Arguments: c.args}
}

// addResult writes the result of call id. exit is the command's exit code
// when the source tells it (nil: unknown or interrupted). A result whose
// call was never seen is a problem and is skipped.
func (b *builder) addResult(line int, id, sourceName string, ok bool, content string, exit *int, ts time.Time, parent string, ord int) string {
	c, found := b.calls[id]
	if !found {
		b.problem(line, "tool result for call %q without its call: skipped", id)
		b.skip("orphan tool result")
		return ""
	}
	delete(b.calls, id)
	r := &session.ToolResult{ToolCallID: id, ToolName: c.name, OK: ok, Content: content}
	if ok || !compaction.IsDenial(content) || len(c.subRead)+len(c.subModified) > 0 {
		// A call the user refused ran nothing: no files, no command run
		// (R-C6). A Task stopped after its subagent worked did run: its
		// subagent's files stay.
		r.Artifacts = c.artifacts(ok, exit)
	}
	if r.ToolName == "" {
		r.ToolName = sourceName
	}
	return b.add(session.Entry{Type: session.TypeToolResult, Timestamp: ts, ToolResult: r}, parent, ord)
}

// summaryState reads a foreign summary as a capsule's narrative: by its
// headings when it has the capsule's (compaction.ParseSummary), else every
// paragraph as a note.
func summaryState(md string) capsule.State {
	if st, err := compaction.ParseSummary(md); err == nil {
		return st
	}
	var st capsule.State
	for _, para := range strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n\n") {
		if p := strings.Join(strings.Fields(para), " "); p != "" {
			st.Notes = append(st.Notes, p)
		}
	}
	return st
}
