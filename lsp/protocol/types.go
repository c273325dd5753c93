package protocol

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Command arguments (PROTOCOL.md "Commands"). A field without `,omitempty`
// is required; the server's decoder rejects unknown, missing and mistyped
// fields with a message naming the field, then calls Validate.

// PromptArgs are the arguments of soba.prompt.
type PromptArgs struct {
	Text string `json:"text"`
}

// RunArgs are the arguments of soba.run: what the user typed to the agent.
type RunArgs struct {
	Text string `json:"text"`
}

// CompactArgs are the arguments of soba.compact.
type CompactArgs struct {
	Instructions string `json:"instructions,omitempty"`
}

// AutoCompactArgs are the arguments of soba.autoCompact.
type AutoCompactArgs struct {
	Enabled bool `json:"enabled"`
}

// CheckpointArgs are the arguments of soba.checkpoint.
type CheckpointArgs struct {
	Kind CheckpointKind `json:"kind"`
	Note string         `json:"note"`
}

// CapsuleCreateArgs are the arguments of soba.capsule.create.
type CapsuleCreateArgs struct {
	Title string `json:"title"`
}

// CapsuleExportArgs are the arguments of soba.capsule.export.
type CapsuleExportArgs struct {
	CheckpointID string `json:"checkpointId"`
	Path         string `json:"path"`
	Overwrite    bool   `json:"overwrite,omitempty"`
}

// CapsuleLoadArgs are the arguments of soba.capsule.load.
type CapsuleLoadArgs struct {
	Path string `json:"path"`
}

// CapsuleShowArgs are the arguments of soba.capsule.show; an empty
// CheckpointID means the newest capsule on the leaf path.
type CapsuleShowArgs struct {
	CheckpointID string `json:"checkpointId,omitempty"`
}

// SessionResumeArgs are the arguments of soba.session.resume.
type SessionResumeArgs struct {
	SessionID string `json:"sessionId"`
}

// SessionRewindArgs are the arguments of soba.session.rewind.
type SessionRewindArgs struct {
	EntryID string `json:"entryId"`
}

// SessionTranscriptArgs are the arguments of soba.session.transcript (an
// addition to PROTOCOL.md): Before is the cursor a page returned (empty: the
// newest page), Limit the number of path entries a page covers (0: 60, at
// most 500).
type SessionTranscriptArgs struct {
	Before string `json:"before,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

// Validate: limit is between 0 and 500.
func (a *SessionTranscriptArgs) Validate() (field, problem string) {
	if a.Limit < 0 || a.Limit > 500 {
		return "limit", fmt.Sprintf("must be between 1 and 500 (0 for the default), got %d", a.Limit)
	}
	return "", ""
}

// Validate checks the rules beyond JSON types; it returns the offending
// field and the problem, or two empty strings.
func (a *PromptArgs) Validate() (field, problem string) { return required("text", a.Text) }

// Validate: the text may not be empty.
func (a *RunArgs) Validate() (field, problem string) { return required("text", a.Text) }

// Validate: kind is milestone or plan_pivot.
func (a *CheckpointArgs) Validate() (field, problem string) {
	if a.Kind != CheckpointMilestone && a.Kind != CheckpointPlanPivot {
		return "kind", fmt.Sprintf("must be %q or %q, got %q", CheckpointMilestone, CheckpointPlanPivot, a.Kind)
	}
	return "", ""
}

// Validate: the title may not be empty.
func (a *CapsuleCreateArgs) Validate() (field, problem string) { return required("title", a.Title) }

// Validate: checkpointId and path may not be empty.
func (a *CapsuleExportArgs) Validate() (field, problem string) {
	if f, p := required("checkpointId", a.CheckpointID); p != "" {
		return f, p
	}
	return required("path", a.Path)
}

// Validate: the path may not be empty.
func (a *CapsuleLoadArgs) Validate() (field, problem string) { return required("path", a.Path) }

// Validate: the session id may not be empty.
func (a *SessionResumeArgs) Validate() (field, problem string) {
	return required("sessionId", a.SessionID)
}

// Validate: the entry id may not be empty.
func (a *SessionRewindArgs) Validate() (field, problem string) { return required("entryId", a.EntryID) }

func required(field, value string) (string, string) {
	if strings.TrimSpace(value) == "" {
		return field, "must not be empty"
	}
	return "", ""
}

// Command results (PROTOCOL.md "Commands").

// PromptResult is the result of soba.prompt.
type PromptResult struct {
	TurnID string `json:"turnId"`
	Queued bool   `json:"queued"`
}

// RunPromptResult is soba.run's answer for a prompt: soba.prompt's result
// plus kind "prompt" and (an addition to PROTOCOL.md) the text that went to
// the model, which differs from what was typed for `//…`.
type RunPromptResult struct {
	Kind   RunKind `json:"kind"`
	TurnID string  `json:"turnId"`
	Queued bool    `json:"queued"`
	Text   string  `json:"text"`
}

// RunCommandResult is soba.run's answer for a slash command: the lines to
// show, and (additions to PROTOCOL.md's `{kind, lines}`) the command it ran
// with that command's result, so an editor can also update its own views
// (status bar, capsule tab) without parsing anything. Error is set, and
// nothing ran, when the text was a slash command typed wrong.
type RunCommandResult struct {
	Kind    RunKind  `json:"kind"`
	Lines   []string `json:"lines"`
	Command string   `json:"command,omitempty"`
	Result  any      `json:"result,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// CancelResult is the result of soba.cancel.
type CancelResult struct {
	Cancelled bool      `json:"cancelled"`
	What      Cancelled `json:"what"`
}

// CheckpointResult is the result of soba.checkpoint.
type CheckpointResult struct {
	CheckpointID string `json:"checkpointId"`
}

// CapsuleCreateResult is the result of soba.capsule.create.
type CapsuleCreateResult struct {
	CheckpointID string `json:"checkpointId"`
	Path         string `json:"path"`
}

// CapsuleExportResult is the result of soba.capsule.export.
type CapsuleExportResult struct {
	Path string `json:"path"`
}

// CapsuleLoadResult is the result of soba.capsule.load.
type CapsuleLoadResult struct {
	CheckpointID string   `json:"checkpointId"`
	Title        string   `json:"title"`
	Warnings     []string `json:"warnings"`
}

// CapsuleInfo is one element of the soba.capsule.list result.
type CapsuleInfo struct {
	CheckpointID string    `json:"checkpointId"`
	Trigger      Trigger   `json:"trigger"`
	Title        string    `json:"title"`
	Quality      Quality   `json:"quality"`
	CreatedAt    time.Time `json:"createdAt"`
}

// CapsuleShowResult is the result of soba.capsule.show: the capsule as
// `.capsule.md` text.
type CapsuleShowResult struct {
	CheckpointID string `json:"checkpointId"`
	Markdown     string `json:"markdown"`
}

// SessionInfo is the result of soba.session.info.
type SessionInfo struct {
	SessionID  string `json:"sessionId"`
	Path       string `json:"path"`
	FlightPath string `json:"flightPath"`
	LeafID     string `json:"leafId"`
	Entries    int    `json:"entries"`
}

// SessionSummary is one element of the soba.session.list result. Title
// and Bytes are additions to PROTOCOL.md: the session's first user request
// (one line, clipped; empty when there is none yet) and the file's size, so
// a picker can tell sessions apart without opening them.
type SessionSummary struct {
	SessionID string    `json:"sessionId"`
	Path      string    `json:"path"`
	UpdatedAt time.Time `json:"updatedAt"`
	Entries   int       `json:"entries"`
	Title     string    `json:"title"`
	Bytes     int64     `json:"bytes"`
}

// HistoryPoint is one element of the soba.session.history result (an
// addition to PROTOCOL.md): a user request or a checkpoint on the current
// path, root first. RewindTo is the entryId to pass to soba.session.rewind
// to go back to just before this point: for a request the entry it
// answered (so the request and all after it leave the path, and the user
// can send it again), for a checkpoint the checkpoint itself.
// FilesModifiedAfter lists the workspace files tool calls modified after
// RewindTo on the current path; a rewind does not revert them.
type HistoryPoint struct {
	EntryID            string      `json:"entryId"`
	Kind               HistoryKind `json:"kind"`
	Text               string      `json:"text"`
	CreatedAt          time.Time   `json:"createdAt"`
	RewindTo           string      `json:"rewindTo"`
	FilesModifiedAfter []string    `json:"filesModifiedAfter"`
}

// SessionTranscript is the result of soba.session.transcript: a page of
// the current path's conversation, its items root first. Before is the
// cursor of the next older page, empty when this page starts at the
// session's beginning; LeafID is the leaf the page was read from.
type SessionTranscript struct {
	Items  []TranscriptItem `json:"items"`
	Before string           `json:"before"`
	LeafID string           `json:"leafId"`
}

// TranscriptItem is one block of a reopened session's chat: a user message,
// the assistant's text (Markdown), a tool call with its result, a compaction
// marker (a capsule replaced the history before it), a checkpoint, or an
// inference that failed (Text is the error).
type TranscriptItem struct {
	EntryID    string                `json:"entryId"`
	Kind       TranscriptKind        `json:"kind"`
	CreatedAt  time.Time             `json:"createdAt"`
	Text       string                `json:"text"`
	Tool       *TranscriptTool       `json:"tool,omitempty"`
	Compaction *TranscriptCompaction `json:"compaction,omitempty"`
}

// TranscriptTool is a tool item's call and result. OK is absent while the
// path holds no result; Approval is the user's answer when the call was
// asked about ("once", "session", "denied").
type TranscriptTool struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	Arguments     json.RawMessage `json:"arguments,omitempty"`
	OK            *bool           `json:"ok,omitempty"`
	Summary       string          `json:"summary"`
	Approval      string          `json:"approval,omitempty"`
	FilesModified []string        `json:"filesModified,omitempty"`
}

// TranscriptCompaction is a compaction item's capsule: soba.capsule.show
// with its CheckpointID shows it.
type TranscriptCompaction struct {
	CheckpointID string  `json:"checkpointId"`
	Trigger      Trigger `json:"trigger"`
	TokensBefore int     `json:"tokensBefore"`
	TokensAfter  int     `json:"tokensAfter"`
	Quality      Quality `json:"quality"`
}

// SessionNewResult is the result of soba.session.new.
type SessionNewResult struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
}

// SessionResumeResult is the result of soba.session.resume.
type SessionResumeResult struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	LeafID    string `json:"leafId"`
}

// SessionRewindResult is the result of soba.session.rewind.
type SessionRewindResult struct {
	LeafID string `json:"leafId"`
}

// Budget is PROTOCOL.md's Budget (R-O1): the result of soba.budget and
// soba.autoCompact, and the soba/budget notification. Pending is never
// null on the wire.
type Budget struct {
	EffectiveTokens     int               `json:"effectiveTokens"`
	HardLimit           int               `json:"hardLimit"`
	SoftLimit           int               `json:"softLimit"`
	ContextWindow       int               `json:"contextWindow"`
	MaxOutputTokens     int               `json:"maxOutputTokens"`
	SafetyReserveTokens int               `json:"safetyReserveTokens"`
	Source              Source            `json:"source"`
	AutoCompact         bool              `json:"autoCompact"`
	Pending             []Trigger         `json:"pending"`
	State               State             `json:"state"`
	LastCompaction      *CompactionResult `json:"lastCompaction"`
	// CachedTokens is the part of the last request's input the provider
	// read from its prompt cache (0 until a provider reports it).
	CachedTokens int `json:"cachedTokens"`
	// Display is an addition to PROTOCOL.md: the status text both editors
	// show, "14.0k / 17.0k (82%)" (effective tokens / hard limit, the share
	// rounded down), in one number format (FormatTokens).
	Display string `json:"display"`
	// RepositorySettingsIgnored lists, while there are any, the keys of the
	// repository's own configuration (.soba/config.json, the editor's
	// repositorySettings) that are ignored because the workspace is not
	// trusted (PROTOCOL.md "Workspace trust", SPEC R-W5).
	RepositorySettingsIgnored []string `json:"repositorySettingsIgnored,omitempty"`
}

// CompactionResult is PROTOCOL.md's terminal report of one compaction
// operation. Line is the one-line result of R-B3.
type CompactionResult struct {
	OperationID     string  `json:"operationId"`
	Trigger         Trigger `json:"trigger"`
	Outcome         Outcome `json:"outcome"`
	TokensBefore    int     `json:"tokensBefore"`
	TokensAfter     int     `json:"tokensAfter"`
	ReclaimedTokens int     `json:"reclaimedTokens"`
	ReclaimedRatio  float64 `json:"reclaimedRatio"`
	CheckpointID    string  `json:"checkpointId"`
	Quality         Quality `json:"quality"`
	DurationMs      int64   `json:"durationMs"`
	Reason          string  `json:"reason"`
	Line            string  `json:"line"`
}

// Event is one item of the agent's stream, the soba/event notification.
type Event struct {
	TurnID string    `json:"turnId"`
	Type   EventType `json:"type"`
	Delta  string    `json:"delta,omitempty"`
	// Moved (thinking): delta is the answer text streamed so far in this
	// model call, which turned out to be thinking (the server's template
	// had opened the block); the editor moves it out of the answer.
	Moved     bool            `json:"moved,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	OK        *bool           `json:"ok,omitempty"`
	Summary   string          `json:"summary,omitempty"`
	// FilesRead and FilesModified (tool_result, an addition to
	// PROTOCOL.md) are the files a successful call read and changed; a
	// denied or failed call has none (R-C6).
	FilesRead     []string    `json:"filesRead,omitempty"`
	FilesModified []string    `json:"filesModified,omitempty"`
	Outcome       TurnOutcome `json:"outcome,omitempty"`
	Error         string      `json:"error,omitempty"`
}

// CompactionEvent is the soba/compaction notification: phase start,
// progress or end; on end the CompactionResult fields are filled.
type CompactionEvent struct {
	Phase       Phase   `json:"phase"`
	OperationID string  `json:"operationId"`
	Trigger     Trigger `json:"trigger"`
	// Percentage is sent only when it is real (several summary parts).
	Percentage *int `json:"percentage,omitempty"`
	// Title (start): "Compacting context before response" when a response
	// waits for this compaction, otherwise "Compacting context".
	Title string `json:"title,omitempty"`
	// Message (progress): what the compaction waits for and what streamed,
	// with the elapsed time, as the $/progress report says it.
	Message string `json:"message,omitempty"`
	// ElapsedMs (progress): milliseconds since the compaction started.
	ElapsedMs int64 `json:"elapsedMs,omitempty"`
	*CompactionResult
}

// ApprovalDetail is the `soba` member SOBA adds to the params of the
// window/showMessageRequest that asks for an approval (R-W3; an addition to
// PROTOCOL.md): the tool, the whole summary the message shows after its
// first line, and for a write_file or edit_file whose result is known the
// workspace path and the file's whole content after the change, so an
// editor can open a diff beside the question. Scope is what the allow
// action for the session covers ("file edits", "bash commands", "the tools
// of MCP server \"github\""), which that action's title also names.
type ApprovalDetail struct {
	Tool     string  `json:"tool"`
	Summary  string  `json:"summary"`
	Path     string  `json:"path,omitempty"`
	Proposed *string `json:"proposed,omitempty"`
	Scope    string  `json:"scope,omitempty"`
}

// FormatTokens writes a token count briefly with one decimal, the one
// number format of the status text: 950 → "950", 31234 → "31.2k",
// 1250000 → "1.3M".
func FormatTokens(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d", n)
	case n < 999950:
		return fmt.Sprintf("%.1fk", float64(n)/1000)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1e6)
}

// BudgetDisplay is Budget.Display: "14.0k / 17.0k (82%)"; without a hard
// limit only the count.
func BudgetDisplay(effective, hardLimit int) string {
	if hardLimit <= 0 {
		return FormatTokens(effective)
	}
	return fmt.Sprintf("%s / %s (%d%%)", FormatTokens(effective), FormatTokens(hardLimit), effective*100/hardLimit)
}
