package importer

import (
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/internal/jsondec"
	"github.com/soba-agent/soba-lsp/session"
)

// pi's session format (badlogic/pi-mono, packages/coding-agent
// docs/session.md): a `session` header, then `message` entries whose
// message.role is user, assistant, toolResult or bashExecution, plus
// model_change, thinking_level_change, compaction, branch_summary, custom,
// custom_message, label and session_info. Version 1 is linear (no ids; a
// compaction names its first kept entry by firstKeptEntryIndex, an index
// into the file's entries counting the header); versions 2 and 3 put
// id/parentId on every entry (a compaction names firstKeptEntryId).

type piLine struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	ParentID  *string         `json:"parentId"`
	Timestamp json.RawMessage `json:"timestamp"`
	Version   int             `json:"version"`
	Cwd       string          `json:"cwd"`
	Message   *piMessage      `json:"message"`
	Provider  string          `json:"provider"`
	ModelID   string          `json:"modelId"`
	// compaction and branch_summary
	Summary             string `json:"summary"`
	FirstKeptEntryID    string `json:"firstKeptEntryId"`
	FirstKeptEntryIndex *int   `json:"firstKeptEntryIndex"`
	TokensBefore        int    `json:"tokensBefore"`
}

type piMessage struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	ToolCallID   string          `json:"toolCallId"`
	ToolName     string          `json:"toolName"`
	IsError      bool            `json:"isError"`
	Provider     string          `json:"provider"`
	Model        string          `json:"model"`
	StopReason   string          `json:"stopReason"`
	ErrorMessage string          `json:"errorMessage"`
	Usage        *struct {
		Input      int `json:"input"`
		Output     int `json:"output"`
		CacheRead  int `json:"cacheRead"`
		CacheWrite int `json:"cacheWrite"`
	} `json:"usage"`
	// bashExecution: a command the user ran with `!`.
	Command            string `json:"command"`
	Output             string `json:"output"`
	ExitCode           *int   `json:"exitCode"`
	Cancelled          bool   `json:"cancelled"`
	ExcludeFromContext bool   `json:"excludeFromContext"`
}

type piBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// timestamp reads pi's entry timestamp: an ISO string (or, in old files, a
// Unix millisecond number).
func (l *piLine) timestamp() time.Time {
	var s string
	if jsondec.Unmarshal(l.Timestamp, &s) == nil {
		return parseTime(s)
	}
	var ms int64
	if jsondec.Unmarshal(l.Timestamp, &ms) == nil && ms > 0 {
		return time.UnixMilli(ms).UTC()
	}
	return time.Time{}
}

// piText joins the text blocks of a content (a string or blocks); images
// become a marker.
func piText(raw json.RawMessage) (string, []piBlock) {
	if s, ok := stringValue(raw); ok {
		return s, nil
	}
	blocks, _ := decodeEach[piBlock](raw)
	var parts []string
	for _, bl := range blocks {
		switch bl.Type {
		case "text":
			if bl.Text != "" {
				parts = append(parts, bl.Text)
			}
		case "image":
			parts = append(parts, "[image]")
		}
	}
	return strings.Join(parts, "\n"), blocks
}

func convertPi(b *builder, data []byte) error {
	return convertPiLines(b, slices.Values(decodeLines[piLine](data)))
}

// convertPiLines converts pi's decoded lines, in file order.
func convertPiLines(b *builder, lines iter.Seq[decodedLine[piLine]]) error {
	tree := false
	// seen maps a source entry (id in a tree; ordinal in v1) to the new id
	// of the nearest written entry at or above it and, in a tree, to its
	// ordinal: one map, not two, since an import's memory is mostly these
	// maps and the store's index.
	seen := map[string]piSeen{}
	ordOf := func(id string) (int, bool) {
		s, ok := seen[id]
		return s.ord, ok && tree
	}
	last := ""       // new id of the last written entry (v1 parent)
	lastSource := "" // alias of the last source entry: the leaf
	ord := -1
	for d := range lines {
		no, l := d.no, d.v
		b.res.Stats.Lines++
		if d.err != nil {
			b.problem(no, "not a JSON entry: %v", d.err)
			continue
		}
		if l.Type == "" {
			b.problem(no, `entry has no "type": skipped`)
			continue
		}
		ord++ // pi's own loader counts parsed entries only
		if l.Type == "session" {
			if ord == 0 {
				b.res.SourceID, b.res.Cwd = l.ID, l.Cwd
				tree = l.Version >= 2
			} else {
				b.skip("session header")
			}
			continue
		}
		key := fmt.Sprint("#", ord)
		parent := last
		if tree {
			if l.ID == "" {
				b.problem(no, "%s entry has no id in a version 2+ session: skipped", l.Type)
				continue
			}
			key = l.ID
			parent = ""
			if l.ParentID != nil && *l.ParentID != "" {
				p, ok := seen[*l.ParentID]
				if !ok {
					b.problem(no, "parent %q of entry %q is not earlier in the file: hung from the previous entry", *l.ParentID, l.ID)
					p.id = last
				}
				parent = p.id
			}
			// Known before its conversion, as it always was: an entry's
			// ordinal for its own firstKeptEntryId.
			seen[key] = piSeen{id: seen[key].id, ord: ord}
		}
		id := b.piEntry(no, ord, &l, parent, ordOf)
		if id == "" {
			id = parent // skipped: its children hang from its parent
		} else {
			last = id
		}
		seen[key] = piSeen{id: id, ord: ord}
		lastSource = id
	}
	if b.streamErr != nil {
		return b.streamErr
	}
	b.res.Leaf = lastSource
	if b.flushed+len(b.res.Entries) == 0 {
		return fmt.Errorf("no pi entries found (%d problems; first: %v)", len(b.res.Problems), firstProblem(b.res.Problems))
	}
	return nil
}

func firstProblem(ps []Problem) string {
	if len(ps) == 0 {
		return "none"
	}
	return ps[0].String()
}

// piEntry converts one entry and returns the new id of the last entry it
// wrote ("" when it wrote none).
// piSeen is what the pi converter remembers of a source entry: the new id of
// the nearest written entry at or above it, and its ordinal.
type piSeen struct {
	id  string
	ord int
}

func (b *builder) piEntry(no, ord int, l *piLine, parent string, ordOf func(string) (int, bool)) string {
	ts := l.timestamp()
	switch l.Type {
	case "message":
		if l.Message == nil {
			b.problem(no, "message entry without a message: skipped")
			return ""
		}
		return b.piMessage(no, ord, l.Message, ts, parent)
	case "model_change":
		return b.add(session.Entry{Type: session.TypeSettings, Timestamp: ts,
			Settings: &session.Settings{Model: strings.Trim(l.Provider+"/"+l.ModelID, "/")}}, parent, ord)
	case "compaction":
		keep := -1
		switch {
		case l.FirstKeptEntryIndex != nil:
			keep = *l.FirstKeptEntryIndex
		case l.FirstKeptEntryID != "":
			if o, ok := ordOf(l.FirstKeptEntryID); ok {
				keep = o
			} else {
				b.problem(no, "compaction's firstKeptEntryId %q is not earlier in the file: the capsule keeps nothing before it", l.FirstKeptEntryID)
			}
		}
		// pi does not record whether a compaction was automatic; its
		// automatic one runs near the window's end, which is the usual case.
		return b.addCapsule(parent, ord, foreignCompaction{summary: l.Summary, keepFrom: keep, tokensBefore: l.TokensBefore,
			trigger: compaction.TriggerAutoThreshold, title: "Imported pi compaction", ts: ts})
	case "branch_summary":
		// The summary of an abandoned branch, recorded where the session
		// changed direction.
		return b.add(session.Entry{Type: session.TypeCheckpoint, Timestamp: ts, Checkpoint: &session.Checkpoint{
			CheckpointID: b.newCheckpointID(), Kind: compaction.TriggerPlanPivot, Note: "Branch summary: " + l.Summary}}, parent, ord)
	}
	b.skip(l.Type) // thinking_level_change, custom, custom_message, label, session_info, …
	return ""
}

func (b *builder) piMessage(no, ord int, m *piMessage, ts time.Time, parent string) string {
	switch m.Role {
	case "user":
		text, _ := piText(m.Content)
		return b.addUser(text, ts, parent, ord, false)
	case "bashExecution":
		if m.ExcludeFromContext {
			b.skip("bashExecution excluded from context")
			return ""
		}
		return b.addUser(piBashText(m), ts, parent, ord, true)
	case "assistant":
		text, blocks := piText(m.Content)
		a := &session.Assistant{Text: text, Provider: m.Provider, Model: m.Model, StopReason: m.StopReason}
		for _, bl := range blocks {
			if bl.Type != "toolCall" {
				continue
			}
			a.ToolCalls = append(a.ToolCalls, b.addCall(bl.ID, b.mapCall(piTools, bl.Name, bl.Arguments)))
		}
		if m.Usage != nil && (m.Usage.Input > 0 || m.Usage.Output > 0) {
			a.Usage = &session.Usage{InputTokens: m.Usage.Input + m.Usage.CacheRead + m.Usage.CacheWrite,
				OutputTokens: m.Usage.Output, CachedTokens: m.Usage.CacheRead}
		}
		if (m.StopReason == "error" || m.StopReason == "aborted") && len(a.ToolCalls) == 0 {
			a.Error = m.ErrorMessage
			if a.Error == "" {
				a.Error = m.StopReason
			}
		}
		return b.add(session.Entry{Type: session.TypeAssistant, Timestamp: ts, Assistant: a}, parent, ord)
	case "toolResult":
		text, _ := piText(m.Content)
		var exit *int
		if c := b.calls[m.ToolCallID]; c != nil && c.kind == kindShell {
			exit = piExit(!m.IsError, text)
		}
		return b.addResult(no, m.ToolCallID, m.ToolName, !m.IsError, text, exit, ts, parent, ord)
	}
	b.skip("message role " + m.Role) // custom, branchSummary, compactionSummary: derived views
	return ""
}

// piExit reads a bash result's exit code: 0 when it succeeded, the code pi
// appends on failure ("Command exited with code N"), nil for a command
// aborted or timed out, 1 for another failure.
func piExit(ok bool, text string) *int {
	if ok {
		return intPtr(0)
	}
	t := strings.TrimSpace(text)
	if n, found := exitFrom(piExitPattern, t); found {
		return intPtr(n)
	}
	if strings.HasSuffix(t, "Command aborted") || strings.Contains(t, "Command timed out") {
		return nil
	}
	return intPtr(1)
}

// piBashText is a user-run command as pi shows it to its model.
func piBashText(m *piMessage) string {
	var sb strings.Builder
	sb.WriteString("Ran `" + m.Command + "`\n")
	if m.Output != "" {
		sb.WriteString("```\n" + strings.TrimRight(m.Output, "\n") + "\n```\n")
	} else {
		sb.WriteString("(no output)\n")
	}
	switch {
	case m.Cancelled:
		sb.WriteString("(command cancelled)")
	case m.ExitCode != nil && *m.ExitCode != 0:
		fmt.Fprintf(&sb, "Command exited with code %d", *m.ExitCode)
	}
	return strings.TrimRight(sb.String(), "\n")
}
