package importer

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/internal/jsondec"
	"github.com/soba-agent/soba-lsp/session"
)

// Claude Code's project JSONL (~/.claude/projects/<dir>/<session>.jsonl):
// `user` and `assistant` entries carrying an Anthropic message
// (message.content blocks text, thinking, tool_use; tool_result blocks in
// user entries), linked by uuid/parentUuid; `system` entries (a
// compact_boundary starts a new chain with parentUuid null and
// logicalParentUuid naming the old leaf; the next user entry, with
// isCompactSummary, holds the summary); `summary` entries title a
// conversation (summary, leafUuid); file-history-snapshot and other
// bookkeeping entries. One response is written as several assistant entries,
// one per content block, sharing message.id.
//
// The import keeps the active conversation: the chain from the last
// main-line entry back to the first, through compact boundaries. Sidechain
// entries (isSidechain: true, a Task subagent's own conversation) and
// branches abandoned by a rewind are skipped and counted; the subagent's
// work stays visible as the Task call's result.

type claudeLine struct {
	no                int
	Type              string          `json:"type"`
	Subtype           string          `json:"subtype"`
	UUID              string          `json:"uuid"`
	ParentUUID        *string         `json:"parentUuid"`
	LogicalParentUUID *string         `json:"logicalParentUuid"`
	IsSidechain       bool            `json:"isSidechain"`
	IsMeta            bool            `json:"isMeta"`
	IsCompactSummary  bool            `json:"isCompactSummary"`
	IsAPIErrorMessage bool            `json:"isApiErrorMessage"`
	Timestamp         string          `json:"timestamp"`
	SessionID         string          `json:"sessionId"`
	Cwd               string          `json:"cwd"`
	Message           *claudeMessage  `json:"message"`
	Summary           string          `json:"summary"`
	ToolUseResult     json.RawMessage `json:"toolUseResult"`
	// Data and ParentToolUseID are a progress line's payload and the tool
	// call it reports on (agent_progress: a Task subagent's messages).
	Data            json.RawMessage `json:"data"`
	ParentToolUseID string          `json:"parentToolUseID"`
	CompactMetadata *struct {
		Trigger   string `json:"trigger"`
		PreTokens int    `json:"preTokens"`
	} `json:"compactMetadata"`
}

type claudeMessage struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Model      string          `json:"model"`
	Content    json.RawMessage `json:"content"`
	StopReason string          `json:"stop_reason"`
	Usage      *struct {
		InputTokens   int `json:"input_tokens"`
		OutputTokens  int `json:"output_tokens"`
		CacheCreation int `json:"cache_creation_input_tokens"`
		CacheRead     int `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func convertClaude(b *builder, data []byte) error {
	var lines []*claudeLine
	byUUID := map[string]int{}
	eachLine(data, func(no int, raw []byte) bool {
		b.res.Stats.Lines++
		l := &claudeLine{no: no}
		if err := jsondec.Unmarshal(raw, l); err != nil {
			b.problem(no, "not a JSON entry: %v", err)
			return true
		}
		if l.Type == "" {
			b.problem(no, `entry has no "type": skipped`)
			return true
		}
		if l.UUID != "" {
			if _, dup := byUUID[l.UUID]; dup {
				b.problem(no, "duplicate uuid %q: skipped", l.UUID)
				return true
			}
			byUUID[l.UUID] = len(lines)
		}
		if b.res.SourceID == "" && l.SessionID != "" {
			b.res.SourceID = l.SessionID
		}
		if b.res.Cwd == "" && l.Cwd != "" {
			b.res.Cwd = l.Cwd
		}
		lines = append(lines, l)
		return true
	})

	// The active conversation ends at the last main-line entry.
	leaf := -1
	for i := len(lines) - 1; i >= 0; i-- {
		if l := lines[i]; l.UUID != "" && !l.IsSidechain && (l.Type == "user" || l.Type == "assistant" || l.Type == "system") {
			leaf = i
			break
		}
	}
	if leaf < 0 {
		// A subagent's own log (every entry isSidechain): its conversation
		// is the one to import.
		for i := len(lines) - 1; i >= 0; i-- {
			if l := lines[i]; l.UUID != "" && l.IsSidechain && (l.Type == "user" || l.Type == "assistant") {
				leaf = i
				b.problem(0, "a Claude Code subagent log (every entry isSidechain): imported as its own conversation")
				break
			}
		}
	}
	keep := claudeConversation(b, lines, byUUID, leaf)
	for i, l := range lines {
		if keep[i] {
			continue
		}
		switch {
		case l.Type == "summary":
			b.res.Title = l.Summary // the title of a conversation, not a compaction
			b.skip("summary (title)")
		case l.IsSidechain:
			b.skip("sidechain")
		case l.Type == "user" || l.Type == "assistant" || l.Type == "system":
			b.skip("off the active branch")
		default:
			b.skip(l.Type)
		}
	}

	c := claudeState{b: b, subagent: claudeSubagents(b, lines)}
	for i, l := range lines {
		if keep[i] {
			c.entry(i, l)
		}
	}
	// A Task still running when the transcript ends has no result, but its
	// subagent's edits were made: an unfinished result carries them.
	for _, id := range c.subCalls {
		if _, open := b.calls[id]; open {
			if r := b.addResult(0, id, "", false, "no result in the transcript: the subagent was still running when it ends", nil, parseTime(lines[len(lines)-1].Timestamp), c.last, len(lines)); r != "" {
				c.last = r
			}
		}
	}
	b.res.Leaf = c.last
	if len(b.res.Entries) == 0 {
		return fmt.Errorf("no Claude Code conversation entries found (%d problems; first: %v)", len(b.res.Problems), firstProblem(b.res.Problems))
	}
	return nil
}

// claudeState walks the active conversation, writing linearly.
type claudeState struct {
	b    *builder
	last string
	// response and responseEntry are the message.id of the newest assistant
	// response and its entry, so later blocks of the same response join it.
	response, responseEntry string
	boundary                *claudeLine
	// subagent is the work of each Task call's subagent, by call id;
	// subCalls the calls that have some, in order.
	subagent map[string]*subagentWork
	subCalls []string
}

func (c *claudeState) entry(ord int, l *claudeLine) {
	b := c.b
	ts := parseTime(l.Timestamp)
	switch l.Type {
	case "system":
		if l.Subtype == "compact_boundary" {
			c.boundary = l
			return
		}
		b.skip("system " + l.Subtype)
		return
	case "user", "assistant":
	default:
		b.skip(l.Type)
		return
	}
	if l.Message == nil {
		b.problem(l.no, "%s entry without a message: skipped", l.Type)
		return
	}
	if l.Type == "assistant" {
		c.assistant(ord, l)
		return
	}
	text, blocks := piText(l.Message.Content)
	switch {
	case l.IsCompactSummary:
		fc := foreignCompaction{summary: text, keepFrom: -1, trigger: compaction.TriggerAutoThreshold, title: "Imported Claude Code compaction", ts: ts}
		if c.boundary != nil && c.boundary.CompactMetadata != nil {
			fc.tokensBefore = c.boundary.CompactMetadata.PreTokens
			if c.boundary.CompactMetadata.Trigger == "manual" {
				fc.trigger = compaction.TriggerUser
			}
		}
		c.boundary = nil
		c.last = b.addCapsule(c.last, ord, fc)
		c.response = ""
		return
	case l.IsMeta:
		b.skip("meta") // notes the harness wrote, not the user
		return
	}
	var words []string
	for _, bl := range claudeBlocks(blocks, l.Message.Content) {
		switch bl.Type {
		case "tool_result":
			content, _ := piText(bl.Content)
			if id := b.addResult(l.no, bl.ToolUseID, "", !bl.IsError, content, c.exit(bl, content, l.ToolUseResult), ts, c.last, ord); id != "" {
				c.last = id
			}
		case "text":
			words = append(words, bl.Text)
		case "image":
			words = append(words, "[image]")
		}
	}
	if len(blocks) == 0 && text != "" {
		words = append(words, text) // content was a plain string
	}
	if len(words) > 0 {
		c.last = b.addUser(strings.Join(words, "\n"), ts, c.last, ord, false)
		c.response = ""
	}
}

// claudeBlocks decodes content blocks with Claude's field names.
func claudeBlocks(pi []piBlock, raw json.RawMessage) []claudeBlock {
	if pi == nil {
		return nil
	}
	out, _ := decodeEach[claudeBlock](raw)
	return out
}

// exit reads a Bash result's exit code: nil when interrupted, 0 when it
// succeeded, the code in an error's text ("Exit code N"), else 1.
func (c *claudeState) exit(bl claudeBlock, content string, meta json.RawMessage) *int {
	call := c.b.calls[bl.ToolUseID]
	if call == nil || call.kind != kindShell {
		return nil
	}
	var m struct {
		Interrupted bool `json:"interrupted"`
	}
	if jsondec.Unmarshal(meta, &m) == nil && m.Interrupted {
		return nil
	}
	if !bl.IsError {
		return intPtr(0)
	}
	if n, ok := exitFrom(claudeExitPattern, content); ok {
		return intPtr(n)
	}
	return intPtr(1)
}

func (c *claudeState) assistant(ord int, l *claudeLine) {
	b := c.b
	m := l.Message
	var blocks []claudeBlock
	var text []string
	ok := false
	if s, isText := stringValue(m.Content); isText {
		text = append(text, s)
	} else if blocks, ok = decodeEach[claudeBlock](m.Content); !ok {
		b.problem(l.no, "assistant content is neither text nor blocks")
		return
	}
	var calls []session.ToolCall
	for _, bl := range blocks {
		switch bl.Type {
		case "text":
			if bl.Text != "" {
				text = append(text, bl.Text)
			}
		case "tool_use":
			mc := b.mapCall(claudeTools, bl.Name, bl.Input)
			if w := c.subagent[bl.ID]; w != nil {
				mc.subRead, mc.subModified = w.read, w.modified
				c.subCalls = append(c.subCalls, bl.ID)
			}
			calls = append(calls, b.addCall(bl.ID, mc))
		}
	}
	var usage *session.Usage
	if u := m.Usage; u != nil && (u.InputTokens > 0 || u.OutputTokens > 0) {
		usage = &session.Usage{InputTokens: u.InputTokens + u.CacheCreation + u.CacheRead, OutputTokens: u.OutputTokens, CachedTokens: u.CacheRead}
	}
	if m.ID != "" && m.ID == c.response {
		if e := b.entry(c.responseEntry); e != nil {
			a := e.Assistant
			if len(text) > 0 {
				a.Text = strings.TrimPrefix(a.Text+"\n"+strings.Join(text, "\n"), "\n")
			}
			a.ToolCalls = append(a.ToolCalls, calls...)
			if usage != nil {
				a.Usage = usage
			}
			if m.StopReason != "" {
				a.StopReason = m.StopReason
			}
			return
		}
	}
	a := &session.Assistant{Text: strings.Join(text, "\n"), ToolCalls: calls, Provider: "anthropic", StopReason: m.StopReason, Usage: usage}
	if m.Model != "<synthetic>" {
		a.Model = m.Model
	}
	if l.IsAPIErrorMessage && len(calls) == 0 {
		a.Error, a.Text = a.Text, ""
		if a.Error == "" {
			a.Error = "API error"
		}
	}
	c.last = b.add(session.Entry{Type: session.TypeAssistant, Timestamp: parseTime(l.Timestamp), Assistant: a}, c.last, ord)
	c.response, c.responseEntry = m.ID, c.last
}

// claudeConversation marks the lines of the active conversation, the one
// Claude Code resumes (docs/import.md):
//
//   - the chain from the leaf back through parentUuid, or logicalParentUuid
//     when parentUuid is null or absent (a compact boundary's link to the
//     history it summarised);
//   - a line whose parent is not in the file (a pruned progress or hook
//     line, a boundary whose logical parent was dropped) continues from the
//     main-line line before it in the file, as Claude Code shows it, instead
//     of starting the conversation there;
//   - every line of an assistant message on the chain (the lines sharing
//     its message.id: one line per content block, parallel tool calls
//     hanging from each other), and every tool_result answering one of its
//     calls, whichever sibling line it hangs from.
//
// Lines off it are sidechains and branches a rewind abandoned.
func claudeConversation(b *builder, lines []*claudeLine, byUUID map[string]int, leaf int) []bool {
	keep := make([]bool, len(lines))
	sidechain := leaf >= 0 && lines[leaf].IsSidechain
	before := func(i int) int {
		for j := i - 1; j >= 0; j-- {
			if l := lines[j]; l.UUID != "" && l.IsSidechain == sidechain {
				return j
			}
		}
		return -1
	}
	absent := 0
	for i := leaf; i >= 0; {
		if keep[i] {
			b.problem(lines[i].no, "parentUuid chain loops back to %q: cut there", lines[i].UUID)
			break
		}
		keep[i] = true
		l := lines[i]
		next, named := -1, ""
		for _, p := range []*string{l.ParentUUID, l.LogicalParentUUID} {
			if p == nil || *p == "" {
				continue
			}
			if j, ok := byUUID[*p]; ok {
				next = j
				break
			}
			if named == "" {
				named = *p
			}
		}
		if next < 0 && i > 0 {
			// No parent in the file, or none at all in the middle of it:
			// the conversation goes on from the line before.
			if named != "" {
				absent++
			}
			next = before(i)
		}
		i = next
	}
	if absent > 0 {
		b.problem(0, "%d entries name a parent that is not in the file: each continues from the entry before it", absent)
	}

	// Whole assistant messages, then the results of their calls.
	messages := map[string]bool{}
	for i, l := range lines {
		if keep[i] && l.Type == "assistant" && l.Message != nil && l.Message.ID != "" {
			messages[l.Message.ID] = true
		}
	}
	calls := map[string]bool{}
	for i, l := range lines {
		if l.Type != "assistant" || l.Message == nil || l.IsSidechain != sidechain {
			continue
		}
		if !keep[i] && (l.Message.ID == "" || !messages[l.Message.ID]) {
			continue
		}
		keep[i] = true
		for _, bl := range claudeRefs(l.Message.Content) {
			if bl.Type == "tool_use" && bl.ID != "" {
				calls[bl.ID] = true
			}
		}
	}
	for i, l := range lines {
		if keep[i] || l.Type != "user" || l.Message == nil || l.IsSidechain != sidechain {
			continue
		}
		for _, bl := range claudeRefs(l.Message.Content) {
			if bl.Type == "tool_result" && calls[bl.ToolUseID] {
				keep[i] = true
				break
			}
		}
	}
	return keep
}

// claudeRef is the part of a content block that links calls and results.
type claudeRef struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	ToolUseID string `json:"tool_use_id"`
}

func claudeRefs(content json.RawMessage) []claudeRef {
	if len(content) == 0 || content[0] != '[' {
		return nil
	}
	out, _ := decodeEach[claudeRef](content)
	return out
}

// claudeSubagents reads the work of Task subagents from the agent_progress
// lines Claude Code writes while one runs (data.message: the subagent's own
// assistant and user messages; parentToolUseID: the Task call): the files
// each subagent's successful tool calls read and modified, by Task call id.
// The Task call's result carries them as artifacts, so the subagent's edits
// count as the session's.
func claudeSubagents(b *builder, lines []*claudeLine) map[string]*subagentWork {
	type call struct {
		task string
		c    *mappedCall
	}
	var work map[string]*subagentWork
	pending := map[string]call{}
	for _, l := range lines {
		if l.Type != "progress" || len(l.Data) == 0 || l.ParentToolUseID == "" {
			continue
		}
		var d struct {
			Type    string `json:"type"`
			Message struct {
				Type    string `json:"type"`
				Message struct {
					Content json.RawMessage `json:"content"`
				} `json:"message"`
			} `json:"message"`
		}
		if jsondec.Unmarshal(l.Data, &d) != nil || d.Type != "agent_progress" {
			continue
		}
		content := d.Message.Message.Content
		if len(content) == 0 || content[0] != '[' {
			continue
		}
		blocks, _ := decodeEach[claudeBlock](content)
		for _, bl := range blocks {
			switch {
			case bl.Type == "tool_use" && d.Message.Type == "assistant":
				if s, ok := claudeTools[bl.Name]; ok && (s.kind == kindRead || s.kind == kindModify) {
					pending[bl.ID] = call{task: l.ParentToolUseID, c: b.mapCall(claudeTools, bl.Name, bl.Input)}
				}
			case bl.Type == "tool_result" && d.Message.Type == "user":
				p, ok := pending[bl.ToolUseID]
				if !ok {
					continue
				}
				delete(pending, bl.ToolUseID)
				if bl.IsError {
					continue
				}
				if work == nil {
					work = map[string]*subagentWork{}
				}
				w := work[p.task]
				if w == nil {
					w = &subagentWork{}
					work[p.task] = w
				}
				if p.c.kind == kindModify {
					w.modified = appendNew(w.modified, p.c.paths...)
				} else {
					w.read = appendNew(w.read, p.c.paths...)
				}
			}
		}
	}
	return work
}

// subagentWork is what a Task subagent's tools read and modified.
type subagentWork struct{ read, modified []string }

func appendNew(list []string, items ...string) []string {
	for _, it := range items {
		if !slices.Contains(list, it) {
			list = append(list, it)
		}
	}
	return list
}
