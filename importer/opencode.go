package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sourcegraph/conc/pool"

	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/internal/jsondec"
	"github.com/soba-agent/soba-lsp/session"
)

// opencode (github.com/sst/opencode) keeps a session in its storage directory
// (~/.local/share/opencode/storage) as one JSON file per object:
// session/<projectID>/<sessionID>.json (id, title, directory, parentID,
// revert, time), message/<sessionID>/<messageID>.json (role user or
// assistant; an assistant's parentID names the user message it answers;
// modelID, providerID, tokens, finish, error, summary, mode/agent) and
// part/<messageID>/<partID>.json (text, reasoning, tool, step-start,
// step-finish, file, patch, compaction, subtask, agent, retry, snapshot).
// `opencode export <sessionID>` prints the same objects as one JSON document,
// {info: session, messages: [{info, parts}]}. Ids sort by creation time.
//
// One assistant message holds several model responses, each a step between
// step-start and step-finish (which carries the step's tokens). Each step
// becomes one assistant entry followed by the results of its tool parts: a
// tool part holds the call (tool, callID, state.input) and its outcome
// (state.status completed or error, output, error, metadata; bash's
// metadata.exit is the exit code). A compaction is a user message with a
// compaction part {auto, overflow, tail_start_id} answered by an assistant
// message with summary: true (mode and agent "compaction") whose text is the
// summary. A session's revert {messageID, partID} hides what follows it
// until the next prompt deletes it; the import leaves it out too.

// ocKind is what an opencode JSON document is.
type ocKind int

const (
	ocNone           ocKind = iota
	ocExport                // `opencode export` output
	ocStorageSession        // a storage session file, whose messages are in the tree around it
)

type ocSession struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	Directory string `json:"directory"`
	ParentID  string `json:"parentID"`
	Revert    *struct {
		MessageID string `json:"messageID"`
		PartID    string `json:"partID"`
	} `json:"revert"`
}

type ocMessage struct {
	ID       string `json:"id"`
	Role     string `json:"role"`
	ParentID string `json:"parentID"`
	Time     struct {
		Created float64 `json:"created"`
	} `json:"time"`
	ModelID    string `json:"modelID"`
	ProviderID string `json:"providerID"`
	Mode       string `json:"mode"`
	Agent      string `json:"agent"`
	// Summary is true on a compaction's summary; a user message's summary
	// is an object (the UI's title and diffs of that turn).
	Summary json.RawMessage `json:"summary"`
	Finish  string          `json:"finish"`
	Error   json.RawMessage `json:"error"`
	Tokens  *ocTokens       `json:"tokens"`
	Path    *struct {
		Cwd string `json:"cwd"`
	} `json:"path"`
}

// ocTokens are numbers opencode writes from JavaScript; float64 reads any of
// them.
type ocTokens struct {
	Input     float64 `json:"input"`
	Output    float64 `json:"output"`
	Reasoning float64 `json:"reasoning"`
	Cache     struct {
		Read  float64 `json:"read"`
		Write float64 `json:"write"`
	} `json:"cache"`
}

type ocPart struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Text      string `json:"text"`
	Synthetic bool   `json:"synthetic"`
	Ignored   bool   `json:"ignored"`
	// file
	Mime     string `json:"mime"`
	Filename string `json:"filename"`
	// tool
	CallID string       `json:"callID"`
	Tool   string       `json:"tool"`
	State  *ocToolState `json:"state"`
	// compaction
	Auto        bool   `json:"auto"`
	Overflow    bool   `json:"overflow"`
	TailStartID string `json:"tail_start_id"`
	// step-finish
	Reason string    `json:"reason"`
	Tokens *ocTokens `json:"tokens"`
}

type ocToolState struct {
	Status   string          `json:"status"`
	Input    json.RawMessage `json:"input"`
	Output   string          `json:"output"`
	Error    string          `json:"error"`
	Metadata json.RawMessage `json:"metadata"`
	Time     struct {
		End float64 `json:"end"`
	} `json:"time"`
}

// ocLoc is where an object was read: a storage file, or a byte offset in an
// export document.
type ocLoc struct {
	file string
	off  int // -1 for a storage file
}

type ocIssue struct {
	loc ocLoc
	msg string
}

type ocPartAt struct {
	loc ocLoc
	p   ocPart
}

// ocMsg is one source message with its parts and what went wrong reading
// them.
type ocMsg struct {
	loc    ocLoc
	info   ocMessage
	parts  []ocPartAt
	issues []ocIssue
	// bad is set when the message itself could not be read; lost counts its
	// parts skipped with it.
	bad  bool
	lost int
}

// ocSource is a whole opencode session as read.
type ocSource struct {
	session ocSession
	msgs    []*ocMsg
	issues  []ocIssue // about the session or the document as a whole
	doc     []byte    // the export document, for line numbers
	// lineStarts are the offsets where doc's lines start, computed on the
	// first report: one pass, then a binary search per problem.
	lineStarts []int
}

// exportPrefix is the line `opencode export` writes to stderr before the
// document, found in files saved with 2>&1.
const exportPrefix = "Exporting session:"

// ocDocStart returns the offset of the JSON document in data: after a byte
// order mark, white space and a leading "Exporting session: …" line.
func ocDocStart(data []byte) int {
	i := 0
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		i = 3
	}
	for i < len(data) && isJSONSpace(data[i]) {
		i++
	}
	if bytes.HasPrefix(data[i:], []byte(exportPrefix)) {
		// Older versions wrote it without a newline: the document starts
		// at the first '{'.
		if j := bytes.IndexByte(data[i:], '{'); j >= 0 {
			i += j
		}
	}
	return i
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// opencodeKind tells an opencode export document or storage session file
// from its first members, without reading the whole document.
func opencodeKind(data []byte) ocKind {
	start := ocDocStart(data)
	if start >= len(data) || data[start] != '{' {
		return ocNone
	}
	w := newJSONWalk(data[start:])
	if w.delim('{') != nil {
		return ocNone
	}
	var id, directory, projectID bool
	infoIsSession := false
	for w.more() {
		name, err := w.key()
		if err != nil {
			return ocNone
		}
		if name == "messages" {
			// The session info comes first in an export; a document with
			// messages but without it is still one, if its first message is.
			if infoIsSession {
				return ocExport
			}
			return w.firstElementIsMessage()
		}
		val, _, err := w.value()
		if err != nil {
			return ocNone
		}
		switch name {
		case "info":
			infoIsSession = looksLikeOcSession(val)
		case "id":
			id = strings.HasPrefix(jsonString(val), "ses_")
		case "directory":
			_, directory = stringValue(val)
		case "projectID":
			_, projectID = stringValue(val)
		case "type", "uuid", "parentUuid", "payload":
			return ocNone // a line of another format
		}
	}
	if id && (directory || projectID) {
		return ocStorageSession
	}
	return ocNone
}

func looksLikeOcSession(raw []byte) bool {
	var s struct {
		ID        string  `json:"id"`
		Directory *string `json:"directory"`
	}
	return jsondec.Unmarshal(raw, &s) == nil && (strings.HasPrefix(s.ID, "ses_") || s.Directory != nil)
}

// firstElementIsMessage reads the first element of the array that comes
// next: an export's message is {info, parts}.
func (w *jsonWalk) firstElementIsMessage() ocKind {
	if w.delim('[') != nil || !w.more() {
		return ocNone
	}
	val, _, err := w.value()
	if err != nil {
		return ocNone
	}
	var m struct {
		Info  json.RawMessage `json:"info"`
		Parts json.RawMessage `json:"parts"`
	}
	if jsondec.Unmarshal(val, &m) == nil && m.Info != nil && m.Parts != nil {
		return ocExport
	}
	return ocNone
}

// jsonWalk steps through a JSON document value by value, knowing each
// value's offset, so that a damaged message is reported where it is and the
// messages before it are kept.
type jsonWalk struct {
	data []byte
	dec  *json.Decoder
}

func newJSONWalk(data []byte) *jsonWalk {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return &jsonWalk{data: data, dec: dec}
}

// next is the offset of the next value: past white space and separators.
func (w *jsonWalk) next() int {
	i := int(w.dec.InputOffset())
	for i < len(w.data) && (isJSONSpace(w.data[i]) || w.data[i] == ',' || w.data[i] == ':') {
		i++
	}
	return i
}

func (w *jsonWalk) delim(want json.Delim) error {
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	if tok != want {
		return fmt.Errorf("offset %d: %v where %v was expected", w.dec.InputOffset(), tok, want)
	}
	return nil
}

func (w *jsonWalk) more() bool { return w.dec.More() }

func (w *jsonWalk) key() (string, error) {
	tok, err := w.dec.Token()
	if err != nil {
		return "", err
	}
	s, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("offset %d: %v where a member name was expected", w.dec.InputOffset(), tok)
	}
	return s, nil
}

// value returns the next value's bytes and offset.
func (w *jsonWalk) value() ([]byte, int, error) {
	off := w.next()
	var raw json.RawMessage
	if err := w.dec.Decode(&raw); err != nil {
		return nil, off, err
	}
	return w.data[off:w.dec.InputOffset()], off, nil
}

// readOpencodeExport reads an `opencode export` document. A message that is
// not JSON ends the reading there (a truncated export): the messages before
// it are kept.
func readOpencodeExport(data []byte) (*ocSource, error) {
	start := ocDocStart(data)
	src := &ocSource{doc: data}
	if start > 0 && bytes.HasPrefix(bytes.TrimLeft(data, "\xef\xbb\xbf \t\r\n"), []byte(exportPrefix)) {
		src.issues = append(src.issues, ocIssue{ocLoc{off: 0}, "text before the JSON document (opencode export's message on stderr): skipped"})
	}
	w := newJSONWalk(data[start:])
	if err := w.delim('{'); err != nil {
		return nil, fmt.Errorf("not an opencode export document: %v", err)
	}
	var raws []ocRaw
	sawInfo, sawMessages := false, false
	for w.more() {
		name, err := w.key()
		if err != nil {
			src.issues = append(src.issues, ocIssue{ocLoc{off: start + w.next()}, fmt.Sprintf("not JSON: %v: the rest of the document is skipped", err)})
			break
		}
		if name != "messages" {
			val, off, err := w.value()
			if err != nil {
				src.issues = append(src.issues, ocIssue{ocLoc{off: start + off}, fmt.Sprintf("%q is not JSON: %v: the rest of the document is skipped", name, err)})
				break
			}
			if name == "info" {
				sawInfo = true
				if err := jsondec.Unmarshal(val, &src.session); err != nil {
					src.issues = append(src.issues, ocIssue{ocLoc{off: start + off}, fmt.Sprintf("session info is not a session: %v", err)})
				}
			}
			continue
		}
		sawMessages = true
		if err := w.delim('['); err != nil {
			src.issues = append(src.issues, ocIssue{ocLoc{off: start + w.next()}, fmt.Sprintf("messages is not an array: %v", err)})
			break
		}
		truncated := false
		for w.more() {
			val, off, err := w.value()
			if err != nil {
				src.issues = append(src.issues, ocIssue{ocLoc{off: start + off}, fmt.Sprintf("message %d is not JSON: %v: it and the rest of the document are skipped", len(raws)+1, err)})
				truncated = true
				break
			}
			raws = append(raws, ocRaw{off: start + off, data: val})
		}
		if truncated || w.delim(']') != nil {
			break
		}
	}
	if !sawInfo && !sawMessages {
		return nil, fmt.Errorf("not an opencode export document: no \"info\" or \"messages\"")
	}
	src.msgs = make([]*ocMsg, len(raws))
	parallel(len(raws), func(i int) { src.msgs[i] = decodeExportMessage(raws[i]) })
	return src, nil
}

type ocRaw struct {
	off  int
	data []byte
}

// decodeExportMessage decodes one {info, parts} element.
func decodeExportMessage(r ocRaw) *ocMsg {
	m := &ocMsg{loc: ocLoc{off: r.off}}
	w := newJSONWalk(r.data)
	if err := w.delim('{'); err != nil {
		m.bad = true
		m.issues = append(m.issues, ocIssue{m.loc, fmt.Sprintf("message is not an object {info, parts}: %v: skipped", err)})
		return m
	}
	sawInfo := false
	for w.more() {
		name, err := w.key()
		if err != nil {
			break // the walk of the whole document accepted it: cannot happen
		}
		if name != "parts" {
			val, _, err := w.value()
			if err != nil {
				break
			}
			if name == "info" {
				sawInfo = true
				if err := jsondec.Unmarshal(val, &m.info); err != nil {
					m.bad = true
					m.issues = append(m.issues, ocIssue{m.loc, fmt.Sprintf("message info is not a message: %v: skipped", err)})
				}
			}
			continue
		}
		if err := w.delim('['); err != nil {
			m.issues = append(m.issues, ocIssue{m.loc, fmt.Sprintf("message parts are not an array: %v: skipped", err)})
			continue
		}
		for w.more() {
			val, off, err := w.value()
			if err != nil {
				break
			}
			loc := ocLoc{off: r.off + off}
			var p ocPart
			if err := jsondec.Unmarshal(val, &p); err != nil {
				m.issues = append(m.issues, ocIssue{loc, fmt.Sprintf("not a part: %v: skipped", err)})
				continue
			}
			m.parts = append(m.parts, ocPartAt{loc, p})
		}
		_ = w.delim(']')
	}
	if !sawInfo && !m.bad {
		m.bad = true
		m.issues = append(m.issues, ocIssue{m.loc, "message has no info: skipped"})
	}
	if m.bad {
		m.lost, m.parts = len(m.parts), nil
	}
	return m
}

// parallel runs f(0..n-1) over the cores: decoding is most of an import's
// cost.
func parallel(n int, f func(i int)) {
	workers := runtime.GOMAXPROCS(0)
	per := max(1, (n+workers-1)/workers)
	p := pool.New().WithMaxGoroutines(workers)
	for lo := 0; lo < n; lo += per {
		hi := min(lo+per, n)
		p.Go(func() {
			for i := lo; i < hi; i++ {
				f(i)
			}
		})
	}
	p.Wait()
}

// readOpencodeStorage reads the session whose storage file is sessionFile
// (its content is data) from the storage tree around it.
func readOpencodeStorage(sessionFile string, data []byte) (*ocSource, int, error) {
	dir := filepath.Dir(sessionFile)
	if filepath.Base(filepath.Dir(dir)) != "session" {
		return nil, 0, fmt.Errorf("%s: an opencode session file lies at …/storage/session/<projectID>/<sessionID>.json, next to the storage's message/ and part/ directories", sessionFile)
	}
	root := filepath.Dir(filepath.Dir(dir))
	src := &ocSource{}
	if err := jsondec.Unmarshal(data, &src.session); err != nil {
		src.issues = append(src.issues, ocIssue{ocLoc{file: sessionFile, off: -1}, fmt.Sprintf("not a session: %v: its id is taken from the file name", err)})
	}
	if src.session.ID == "" {
		src.session.ID = strings.TrimSuffix(filepath.Base(sessionFile), ".json")
	}
	msgDir := filepath.Join(root, "message", src.session.ID)
	names, err := jsonFiles(msgDir)
	if err != nil {
		return nil, 0, fmt.Errorf("the messages of opencode session %s: %w", src.session.ID, err)
	}
	src.msgs = make([]*ocMsg, len(names))
	files := make([]int, len(names))
	parallel(len(names), func(i int) {
		src.msgs[i], files[i] = readStorageMessage(root, filepath.Join(msgDir, names[i]))
	})
	n := 1
	for _, f := range files {
		n += f
	}
	return src, n, nil
}

// jsonFiles lists the .json files of dir in name order.
func jsonFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// readStorageMessage reads a message file and its parts; it returns the
// number of files read.
func readStorageMessage(root, file string) (*ocMsg, int) {
	m := &ocMsg{loc: ocLoc{file: file, off: -1}}
	id := strings.TrimSuffix(filepath.Base(file), ".json")
	data, err := readSource(file, MaxLineBytes)
	if err == nil {
		err = jsondec.Unmarshal(data, &m.info)
	}
	if err != nil {
		m.bad = true
		m.issues = append(m.issues, ocIssue{m.loc, fmt.Sprintf("not a message: %v: skipped with its parts", err)})
	}
	if m.info.ID == "" {
		m.info.ID = id
	}
	partDir := filepath.Join(root, "part", m.info.ID)
	names, err := jsonFiles(partDir)
	if err != nil && !os.IsNotExist(err) {
		m.issues = append(m.issues, ocIssue{ocLoc{file: partDir, off: -1}, fmt.Sprintf("parts not readable: %v", err)})
	}
	if m.bad {
		m.lost = len(names)
		return m, 1
	}
	for _, name := range names {
		path := filepath.Join(partDir, name)
		loc := ocLoc{file: path, off: -1}
		var p ocPart
		data, err := readSource(path, MaxLineBytes)
		if err == nil {
			err = jsondec.Unmarshal(data, &p)
		}
		if err != nil {
			m.issues = append(m.issues, ocIssue{loc, fmt.Sprintf("not a part: %v: skipped", err)})
			continue
		}
		if p.ID == "" {
			p.ID = strings.TrimSuffix(name, ".json")
		}
		m.parts = append(m.parts, ocPartAt{loc, p})
	}
	return m, 1 + len(names)
}

// ConvertFile converts the transcript at path: an opencode storage session
// file (…/storage/session/<projectID>/<sessionID>.json) with its messages
// and parts from the storage tree around it, any other file through Convert.
func ConvertFile(path string, opt Options) (*Result, error) {
	data, err := readSource(path, MaxSourceBytes)
	if err != nil {
		return nil, err
	}
	if (opt.Format == "" || opt.Format == FormatOpencode) && opencodeKind(data) == ocStorageSession {
		return convertOpencodeStorage(path, data, opt)
	}
	return Convert(data, opt)
}

// ConvertOpencodeStorage converts the opencode session whose storage file is
// sessionFile (…/storage/session/<projectID>/<sessionID>.json), reading its
// messages from …/storage/message/<sessionID>/ and their parts from
// …/storage/part/<messageID>/. Damaged files are listed in Result.Problems
// with their path and skipped.
func ConvertOpencodeStorage(sessionFile string, opt Options) (*Result, error) {
	data, err := readSource(sessionFile, MaxSourceBytes)
	if err != nil {
		return nil, err
	}
	return convertOpencodeStorage(sessionFile, data, opt)
}

func convertOpencodeStorage(sessionFile string, data []byte, opt Options) (*Result, error) {
	src, files, err := readOpencodeStorage(sessionFile, data)
	if err != nil {
		return nil, err
	}
	b := newBuilder(FormatOpencode, opt)
	b.res.Stats.Files = files
	if err := convertOpencode(b, src); err != nil {
		return nil, err
	}
	b.finishTokens()
	return b.res, nil
}

// convertOpencodeData converts an export document (Convert's opencode
// case).
func convertOpencodeData(b *builder, data []byte) error {
	if opencodeKind(data) == ocStorageSession {
		return fmt.Errorf("this is an opencode storage session file: its messages are in the storage tree around it; import it by its path (soba-lsp import …/storage/session/<projectID>/<sessionID>.json)")
	}
	eachLine(data, func(int, []byte) bool { b.res.Stats.Lines++; return true })
	src, err := readOpencodeExport(data)
	if err != nil {
		return err
	}
	return convertOpencode(b, src)
}

// report lists an issue as a problem: with the file of a storage object,
// with the line of an export's.
func (s *ocSource) report(b *builder, is ocIssue) {
	p := Problem{File: is.loc.file, Message: is.msg}
	if is.loc.off >= 0 && s.doc != nil {
		if s.lineStarts == nil {
			s.lineStarts = []int{0}
			for i, c := range s.doc {
				if c == '\n' {
					s.lineStarts = append(s.lineStarts, i+1)
				}
			}
		}
		off := min(is.loc.off, len(s.doc))
		// The line holding off: the last start at or before it.
		p.Line, _ = slices.BinarySearch(s.lineStarts, off+1)
	}
	b.res.Problems = append(b.res.Problems, p)
}

// ocState walks the session's messages in order, writing linearly.
type ocState struct {
	b    *builder
	src  *ocSource
	last string
	// ordOf is each message's ordinal, to find a compaction's first kept
	// message.
	ordOf map[string]int
	// requests are the compaction parts of the user messages that asked
	// for a compaction, by message id.
	requests map[string]*ocPart
	// context is the newest response's context size (input and output
	// tokens): what a compaction that follows replaced.
	context int
	// lastTime is the newest entry's timestamp: a message's later steps
	// have no time of their own and follow the results before them.
	lastTime time.Time
}

func convertOpencode(b *builder, src *ocSource) error {
	for _, is := range src.issues {
		src.report(b, is)
	}
	s := src.session
	b.res.SourceID, b.res.Cwd, b.res.Title = s.ID, s.Directory, s.Title
	msgs := src.messages(b)
	c := &ocState{b: b, src: src, ordOf: map[string]int{}, requests: map[string]*ocPart{}}
	for ord, m := range msgs {
		c.ordOf[m.info.ID] = ord
		if b.res.Cwd == "" && m.info.Path != nil {
			b.res.Cwd = m.info.Path.Cwd
		}
	}
	for ord, m := range msgs {
		switch {
		case m.info.Role == "user":
			c.user(ord, m)
		case m.info.Role == "assistant" && isOcCompaction(&m.info):
			c.compaction(ord, m)
		case m.info.Role == "assistant":
			c.assistant(ord, m)
		case m.info.Role == "":
			src.report(b, ocIssue{m.loc, fmt.Sprintf("message %s has no role: skipped", m.info.ID)})
			b.res.Stats.Skipped["part of a skipped message"] += len(m.parts)
		default:
			src.report(b, ocIssue{m.loc, fmt.Sprintf("message %s has role %q: skipped", m.info.ID, m.info.Role)})
			b.res.Stats.Skipped["part of a skipped message"] += len(m.parts)
		}
	}
	b.res.Leaf = c.last
	if len(b.res.Entries) == 0 {
		return fmt.Errorf("no opencode messages found (%d problems; first: %v)", len(b.res.Problems), firstProblem(b.res.Problems))
	}
	return nil
}

// messages reports the reading issues and returns the readable messages in
// id order (creation order), their parts too, without what a revert hid.
func (s *ocSource) messages(b *builder) []*ocMsg {
	var out []*ocMsg
	seen := map[string]bool{}
	for _, m := range s.msgs {
		for _, is := range m.issues {
			s.report(b, is)
		}
		if m.bad {
			b.res.Stats.Skipped["part of a skipped message"] += m.lost
			continue
		}
		if seen[m.info.ID] {
			s.report(b, ocIssue{m.loc, fmt.Sprintf("message %s appears again: skipped", m.info.ID)})
			continue
		}
		seen[m.info.ID] = true
		out = append(out, m)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].info.ID < out[j].info.ID })
	for _, m := range out {
		sort.SliceStable(m.parts, func(i, j int) bool { return m.parts[i].p.ID < m.parts[j].p.ID })
	}
	rev := s.session.Revert
	if rev == nil || rev.MessageID == "" {
		return out
	}
	// opencode deletes what a revert hid when the session continues: from
	// the message on, or from the part on within it.
	kept := out[:0]
	for _, m := range out {
		switch {
		case m.info.ID < rev.MessageID:
		case m.info.ID == rev.MessageID && rev.PartID != "":
			n := 0
			for _, pa := range m.parts {
				if pa.p.ID < rev.PartID {
					m.parts[n] = pa
					n++
				}
			}
			b.res.Stats.Skipped["reverted part"] += len(m.parts) - n
			m.parts = m.parts[:n]
		default:
			b.skip("reverted message")
			continue
		}
		kept = append(kept, m)
	}
	return kept
}

// isOcCompaction tells a compaction's summary message.
func isOcCompaction(m *ocMessage) bool {
	return string(bytes.TrimSpace(m.Summary)) == "true" || m.Mode == "compaction" || m.Agent == "compaction"
}

func ocTime(ms float64) time.Time {
	if ms <= 0 || ms > math.MaxInt64/2 {
		return time.Time{}
	}
	return time.UnixMilli(int64(ms)).UTC()
}

func (c *ocState) user(ord int, m *ocMsg) {
	b := c.b
	var words []string
	var request *ocPart
	for i := range m.parts {
		p := &m.parts[i].p
		switch p.Type {
		case "text":
			// Synthetic text (a mentioned file's content, opencode's own
			// notes) is kept: opencode sends it to its model as the user's.
			// It is context, not the user's words (R-C8): wrapped as such,
			// so no goal, constraint or request is taken from it.
			switch {
			case p.Ignored || p.Text == "":
			case p.Synthetic:
				words = append(words, "<context>\n"+p.Text+"\n</context>")
			default:
				words = append(words, p.Text)
			}
		case "file":
			switch {
			case p.Mime == "text/plain", p.Mime == "application/x-directory":
				// sent as the synthetic text that follows it
			case strings.HasPrefix(p.Mime, "image/"):
				words = append(words, "[image]")
			default:
				words = append(words, "[file "+p.Filename+"]")
			}
		case "compaction":
			request = p
		default:
			b.skip("user part " + p.Type) // agent, subtask
		}
	}
	switch {
	case request != nil:
		c.requests[m.info.ID] = request
		b.skip("compaction request")
	case len(words) == 0:
		b.skip("empty user message")
	default:
		c.last = b.addUser(strings.Join(words, "\n"), ocTime(m.info.Time.Created), c.last, ord, false)
	}
}

// ocStep is one model response of an assistant message.
type ocStep struct {
	text   []string
	tools  []*ocPart
	finish *ocPart
}

// steps splits the message's parts into its model responses (step-start
// begins one); tool parts that cannot be paired are reported and left out.
func (c *ocState) steps(m *ocMsg) []*ocStep {
	cur := &ocStep{}
	steps := []*ocStep{cur}
	for i := range m.parts {
		pa := &m.parts[i]
		p := &pa.p
		switch p.Type {
		case "step-start":
			if len(cur.text) > 0 || len(cur.tools) > 0 || cur.finish != nil {
				cur = &ocStep{}
				steps = append(steps, cur)
			}
		case "step-finish":
			cur.finish = p
		case "text":
			if p.Text != "" && !p.Ignored {
				cur.text = append(cur.text, p.Text)
			}
		case "tool":
			switch {
			case p.CallID == "":
				c.src.report(c.b, ocIssue{pa.loc, fmt.Sprintf("%s tool part %s has no callID: skipped", p.Tool, p.ID)})
			case p.State == nil:
				c.src.report(c.b, ocIssue{pa.loc, fmt.Sprintf("%s tool part %s has no state: skipped", p.Tool, p.ID)})
			default:
				cur.tools = append(cur.tools, p)
			}
		case "reasoning":
			// dropped, as the other imports drop thinking
		default:
			c.b.skip("assistant part " + p.Type) // patch, file, snapshot, retry, agent
		}
	}
	return steps
}

func (c *ocState) assistant(ord int, m *ocMsg) {
	b := c.b
	ts := ocTime(m.info.Time.Created)
	errText := ocError(m.info.Error)
	var lastID string
	stepTokens := false
	for _, st := range c.steps(m) {
		if st.finish != nil && st.finish.Tokens != nil {
			stepTokens = true
		}
		if len(st.text) == 0 && len(st.tools) == 0 {
			continue
		}
		if c.lastTime.After(ts) {
			ts = c.lastTime
		}
		a := &session.Assistant{Text: strings.Join(st.text, "\n"), Provider: m.info.ProviderID, Model: m.info.ModelID}
		for _, p := range st.tools {
			a.ToolCalls = append(a.ToolCalls, b.addCall(p.CallID, b.mapOpencodeCall(p.Tool, p.State.Input)))
		}
		if st.finish != nil {
			a.StopReason = st.finish.Reason
			if u := ocUsage(st.finish.Tokens); u != nil {
				a.Usage = u
				c.context = u.InputTokens + u.OutputTokens
			}
		}
		c.last = b.add(session.Entry{Type: session.TypeAssistant, Timestamp: ts, Assistant: a}, c.last, ord)
		lastID = c.last
		for _, p := range st.tools {
			c.result(ord, ts, p)
		}
	}
	if lastID == "" {
		if errText == "" {
			b.skip("empty assistant message")
			return
		}
		a := &session.Assistant{Provider: m.info.ProviderID, Model: m.info.ModelID, Error: errText}
		c.last = b.add(session.Entry{Type: session.TypeAssistant, Timestamp: ts, Assistant: a}, c.last, ord)
		return
	}
	e := b.entry(lastID)
	a := e.Assistant
	if !stepTokens {
		// Older versions record the tokens on the message only: those of
		// its last response.
		if u := ocUsage(m.info.Tokens); u != nil {
			a.Usage = u
			c.context = u.InputTokens + u.OutputTokens
		}
	}
	if a.StopReason == "" {
		a.StopReason = m.info.Finish
	}
	if errText != "" && len(a.ToolCalls) == 0 {
		a.Error = errText
	}
}

// result writes the outcome a tool part holds.
func (c *ocState) result(ord int, ts time.Time, p *ocPart) {
	b := c.b
	st := p.State
	shell := false
	if call := b.calls[p.CallID]; call != nil {
		shell = call.kind == kindShell
	}
	ok, content, exit := ocOutcome(st, shell)
	if end := ocTime(st.Time.End); end.After(ts) {
		ts = end
	}
	if ts.After(c.lastTime) {
		c.lastTime = ts
	}
	if id := b.addResult(0, p.CallID, p.Tool, ok, content, exit, ts, c.last, ord); id != "" {
		c.last = id
	}
}

// ocInterrupted is what opencode sends its model for a tool that never
// finished (the session stopped while it ran).
const ocInterrupted = "[Tool execution was interrupted]"

// ocOutcome reads a tool state: whether it succeeded, its content, and for
// a shell command its exit code (bash's metadata.exit; nil when the command
// was killed, timed out, aborted or never ran).
func ocOutcome(st *ocToolState, shell bool) (ok bool, content string, exit *int) {
	// A map tells "exit": null (killed) from no exit at all.
	var meta map[string]any
	_ = jsondec.Unmarshal(st.Metadata, &meta)
	exitValue, exitKnown := meta["exit"]
	code, hasCode := ocExit(exitValue)
	interrupted, _ := meta["interrupted"].(bool)
	output, _ := meta["output"].(string)
	switch st.Status {
	case "completed":
		ok, content = true, st.Output
		if !shell {
			return ok, content, nil
		}
		switch {
		case hasCode:
			return code == 0, content, intPtr(code)
		case exitKnown: // null: killed by a signal (timeout, abort)
			return false, content, nil
		default: // versions that did not record it: the command completed
			return true, content, intPtr(0)
		}
	case "error":
		content = st.Error
		if interrupted && output != "" {
			content = strings.TrimRight(output, "\n") + "\n\n" + st.Error
		}
		if shell && hasCode {
			return false, content, intPtr(code)
		}
		return false, content, nil
	}
	return false, ocInterrupted, nil // pending, running
}

// ocExit reads metadata.exit when it is a whole number.
func ocExit(v any) (int, bool) {
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<31 {
		return 0, false
	}
	return int(f), true
}

// ocUsage normalises opencode's tokens (input without the cached part) to
// SOBA's usage (InputTokens the whole prompt).
func ocUsage(t *ocTokens) *session.Usage {
	if t == nil || (t.Input <= 0 && t.Output <= 0) {
		return nil
	}
	return &session.Usage{InputTokens: int(t.Input + t.Cache.Read + t.Cache.Write), OutputTokens: int(t.Output), CachedTokens: int(t.Cache.Read)}
}

// ocError is an assistant error's message ({name, data: {message}}).
func ocError(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return ""
	}
	var e struct {
		Name string `json:"name"`
		Data struct {
			Message string `json:"message"`
		} `json:"data"`
	}
	if jsondec.Unmarshal(raw, &e) != nil {
		return "error"
	}
	switch {
	case e.Data.Message != "":
		return e.Data.Message
	case e.Name != "":
		return e.Name
	}
	return "error"
}

// compaction turns a compaction's summary message into a capsule.
func (c *ocState) compaction(ord int, m *ocMsg) {
	b := c.b
	var text []string
	for _, pa := range m.parts {
		if pa.p.Type == "text" && strings.TrimSpace(pa.p.Text) != "" {
			text = append(text, strings.TrimSpace(pa.p.Text))
		}
	}
	if len(text) == 0 || ocError(m.info.Error) != "" {
		b.skip("unfinished compaction") // opencode does not use it either
		return
	}
	fc := foreignCompaction{summary: strings.Join(text, "\n\n"), keepFrom: -1, tokensBefore: c.context,
		trigger: compaction.TriggerAutoThreshold, title: "Imported opencode compaction", ts: ocTime(m.info.Time.Created)}
	if req := c.requests[m.info.ParentID]; req != nil {
		switch {
		case !req.Auto:
			fc.trigger = compaction.TriggerUser
		case req.Overflow:
			fc.trigger = compaction.TriggerContextOverflow
		}
		if req.TailStartID != "" {
			if o, ok := c.ordOf[req.TailStartID]; ok && o < ord {
				fc.keepFrom = o
			} else {
				c.src.report(b, ocIssue{m.loc, fmt.Sprintf("compaction keeps from message %s, which is not before it: the capsule keeps nothing before it", req.TailStartID)})
			}
		}
	}
	c.last = b.addCapsule(c.last, ord, fc)
}

// mapOpencodeCall maps opencode's tools to SOBA's: bash (its workdir
// dropped when it is the session's directory), read, write, edit, glob,
// list, grep; patch and apply_patch stay verbatim with the files their
// patch names; every other tool stays verbatim.
func (b *builder) mapOpencodeCall(name string, input json.RawMessage) *mappedCall {
	var a map[string]json.RawMessage
	isObject := jsondec.Unmarshal(input, &a) == nil && a != nil
	switch name {
	case "bash":
		if wd, has := a["workdir"]; isObject && has {
			if p := jsonString(wd); p == "" || filepath.Clean(p) == filepath.Clean(b.res.Cwd) {
				delete(a, "workdir")
				input = marshal(a)
			}
		}
	case "patch", "apply_patch":
		c := &mappedCall{name: name, args: input, kind: kindModify}
		if len(bytes.TrimSpace(input)) == 0 {
			c.args = json.RawMessage(`{}`)
		}
		c.paths = append(c.paths, b.patchPaths(jsonString(a["patchText"]))...)
		return c
	}
	return b.mapCall(opencodeTools, name, input)
}
