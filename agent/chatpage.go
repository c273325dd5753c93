package agent

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/internal/text"
	"github.com/soba-agent/soba-lsp/session"
)

// TranscriptItem is one block of the conversation as an editor's chat shows
// it (soba.session.transcript): a user message, the assistant's text, a tool
// call with its result, a compaction marker, a checkpoint or a failed
// inference.
type TranscriptItem struct {
	EntryID   string
	Kind      string // "user", "assistant", "tool", "compaction", "checkpoint", "error"
	CreatedAt time.Time
	Text      string
	Tool      *TranscriptTool
	Capsule   *session.Capsule // Kind "compaction": the capsule entry (its State is left out)
}

// TranscriptTool is a tool call with its result (nil OK: no result on the
// path yet).
type TranscriptTool struct {
	ID, Name      string
	Arguments     json.RawMessage
	OK            *bool
	Summary       string
	Approval      string
	FilesModified []string
}

// TranscriptPage is one page of the leaf path's conversation, root first.
// Before is the cursor of the next older page ("" when this page starts at
// the root); LeafID is the leaf the page was read from.
type TranscriptPage struct {
	Items  []TranscriptItem
	Before string
	LeafID string
}

// Transcript page sizes: the entries a page covers.
const (
	DefaultTranscriptPage = 60
	MaxTranscriptPage     = 500
)

// maxTranscriptText bounds the text of one item: a chat shows a message,
// not a whole pasted log (the transcript keeps it all).
const maxTranscriptText = 64 << 10

// Transcript returns the page of the leaf path's conversation that ends
// just before entry `before` (the newest page when before is ""), covering
// at most limit entries: pages go from the newest back to the root, and a
// page never starts with a tool result whose call is on the page before.
// Only the page's entries are read, so the newest page of a long session
// costs the same as that of a short one.
func (a *Agent) Transcript(before string, limit int) (TranscriptPage, error) {
	if limit <= 0 {
		limit = DefaultTranscriptPage
	}
	limit = min(limit, MaxTranscriptPage)
	var (
		store *session.Store
		path  []session.Meta
	)
	if err := a.do(func(st *state) {
		store = st.store
		path = st.store.Path()
	}); err != nil {
		return TranscriptPage{}, err
	}
	page := TranscriptPage{}
	if len(path) > 0 {
		page.LeafID = path[len(path)-1].ID
	}
	end := len(path)
	if before != "" {
		end = -1
		for i := len(path) - 1; i >= 0; i-- {
			if path[i].ID == before {
				end = i
				break
			}
		}
		if end < 0 {
			return TranscriptPage{}, &unknownEntryError{id: before}
		}
	}
	start := max(0, end-limit)
	// A tool result belongs with its call: the page starts at the
	// assistant entry that asked for it.
	for start > 0 && path[start].Type == session.TypeToolResult {
		start--
	}
	entries, err := store.LoadMany(path[start:end])
	if err != nil {
		return TranscriptPage{}, err
	}
	if start > 0 {
		page.Before = path[start].ID
	}
	page.Items = transcriptItems(entries)
	return page, nil
}

// unknownEntryError is the error of a cursor that is not on the leaf path.
type unknownEntryError struct{ id string }

func (e *unknownEntryError) Error() string {
	return "no entry \"" + e.id + "\" on the session's current path; ask for the newest page (no `before`) and page back from there"
}

// transcriptItems turns path entries into chat items, root first: a tool
// result joins its call's item.
func transcriptItems(entries []session.Entry) []TranscriptItem {
	var out []TranscriptItem
	calls := map[string]int{} // tool call id → index in out
	for _, e := range entries {
		switch {
		case e.User != nil:
			if strings.TrimSpace(e.User.Text) == "" {
				continue
			}
			out = append(out, TranscriptItem{EntryID: e.ID, Kind: "user", CreatedAt: e.Timestamp, Text: text.Clip(e.User.Text, maxTranscriptText)})
		case e.Assistant != nil:
			if e.Assistant.Error != "" {
				out = append(out, TranscriptItem{EntryID: e.ID, Kind: "error", CreatedAt: e.Timestamp, Text: e.Assistant.Error})
				continue
			}
			if strings.TrimSpace(e.Assistant.Text) != "" {
				out = append(out, TranscriptItem{EntryID: e.ID, Kind: "assistant", CreatedAt: e.Timestamp, Text: text.Clip(e.Assistant.Text, maxTranscriptText)})
			}
			for _, c := range e.Assistant.ToolCalls {
				calls[c.ID] = len(out)
				out = append(out, TranscriptItem{EntryID: e.ID, Kind: "tool", CreatedAt: e.Timestamp,
					Tool: &TranscriptTool{ID: c.ID, Name: c.Name, Arguments: c.Arguments}})
			}
		case e.ToolResult != nil:
			r := e.ToolResult
			i, ok := calls[r.ToolCallID]
			if !ok {
				// Its call is on an older page (a page starts at a call, so
				// only a call cut off by the session's root lands here).
				i = len(out)
				out = append(out, TranscriptItem{EntryID: e.ID, Kind: "tool", CreatedAt: e.Timestamp, Tool: &TranscriptTool{ID: r.ToolCallID, Name: r.ToolName}})
			}
			t := out[i].Tool
			okv := r.OK
			t.OK = &okv
			t.Summary = r.Summary
			if t.Summary == "" {
				t.Summary = firstLineOf(r.Content, 160)
			}
			t.Approval = r.Approval
			if t.Approval == "" && !r.OK && compaction.IsDenial(r.Content) {
				t.Approval = session.ApprovalDenied
			}
			if r.OK && r.Artifacts != nil {
				t.FilesModified = r.Artifacts.FilesModified
			}
		case e.Capsule != nil:
			c := *e.Capsule
			c.State = capsule.State{}
			c.Native = nil
			out = append(out, TranscriptItem{EntryID: e.ID, Kind: "compaction", CreatedAt: e.Timestamp, Text: c.Title, Capsule: &c})
		case e.Checkpoint != nil:
			out = append(out, TranscriptItem{EntryID: e.ID, Kind: "checkpoint", CreatedAt: e.Timestamp, Text: checkpointText(e.Checkpoint)})
		case e.CapsuleLoad != nil:
			t := e.CapsuleLoad.Title
			if t == "" {
				t = e.CapsuleLoad.Path
			}
			out = append(out, TranscriptItem{EntryID: e.ID, Kind: "checkpoint", CreatedAt: e.Timestamp, Text: "capsule loaded: " + t})
		}
	}
	return out
}
