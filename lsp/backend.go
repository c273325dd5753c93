package lsp

import (
	"context"
	"encoding/json"
	"time"

	"github.com/soba-agent/soba-lsp/agent"
	"github.com/soba-agent/soba-lsp/compaction"
)

// Backend is what the language server drives: one method per command of
// PROTOCOL.md, taking the decoded arguments and returning the result object
// the editor receives, plus configuration, document sync and teardown.
//
// The server calls methods concurrently (requests are handled in parallel),
// so an implementation serialises its own state. A returned error answers
// the request with -32803 (RequestFailed) carrying the error's message, so
// messages should say what failed with which input. Long methods (Compact,
// CapsuleCreate) honour ctx: it is cancelled by `$/cancelRequest` and when
// the connection ends.
type Backend interface {
	Prompt(ctx context.Context, args PromptArgs) (PromptResult, error)
	Cancel(ctx context.Context) (CancelResult, error)
	Budget(ctx context.Context) (compaction.Budget, error)
	// Compact runs an explicit compaction and returns when it reached its
	// terminal outcome; a cancelled compaction is a result with outcome
	// "cancelled", not an error.
	Compact(ctx context.Context, args CompactArgs) (compaction.CompactionResult, error)
	SetAutoCompact(ctx context.Context, args AutoCompactArgs) (compaction.Budget, error)
	Checkpoint(ctx context.Context, args CheckpointArgs) (CheckpointResult, error)
	CapsuleCreate(ctx context.Context, args CapsuleCreateArgs) (CapsuleCreateResult, error)
	CapsuleExport(ctx context.Context, args CapsuleExportArgs) (CapsuleExportResult, error)
	CapsuleLoad(ctx context.Context, args CapsuleLoadArgs) (CapsuleLoadResult, error)
	CapsuleList(ctx context.Context) ([]CapsuleInfo, error)
	CapsuleShow(ctx context.Context, args CapsuleShowArgs) (CapsuleShowResult, error)
	SessionInfo(ctx context.Context) (SessionInfo, error)
	SessionList(ctx context.Context) ([]SessionSummary, error)
	SessionNew(ctx context.Context) (SessionNewResult, error)
	SessionResume(ctx context.Context, args SessionResumeArgs) (SessionResumeResult, error)
	SessionRewind(ctx context.Context, args SessionRewindArgs) (SessionRewindResult, error)

	// CancelCompaction cancels the running compaction with this operation id
	// (the editor cancelled its progress). It reports whether one was running.
	CancelCompaction(operationID string) bool

	// Configure applies `settings.soba` of workspace/didChangeConfiguration
	// (raw JSON; not called when a change carries no `soba` member). An error
	// names the key that is wrong; the server shows it (window/showMessage,
	// Error) and the previous configuration should stay in force.
	Configure(settings json.RawMessage) error

	// Document sync: the editor opened, changed, saved or closed a document.
	// They must return quickly; they run in wire order on the read loop.
	DidOpen(uri string)
	DidChange(uri string, version int32)
	DidSave(uri string)
	DidClose(uri string)

	// Close flushes and releases everything (no appended entry may be lost).
	// The server calls it exactly once, at shutdown or when the connection ends.
	Close() error
}

// BackendOptions is what the server knows at `initialize` when it creates the
// backend.
type BackendOptions struct {
	// Root is the workspace root directory (from rootUri, the first workspace
	// folder, or rootPath); empty when the client sent none.
	Root string
	// InitializationOptions is the raw `initializationOptions` JSON (nil when absent).
	InitializationOptions json.RawMessage
	// ClientName is clientInfo.name, for logs.
	ClientName string
	// Notifier delivers events, budgets, compaction phases and messages to the
	// editor; its methods never block.
	Notifier agent.Notifier
	// Approver asks the user about tool calls (window/showMessageRequest).
	Approver agent.Approver
}

// BackendFactory creates the backend at `initialize`. An error fails the
// initialize request with the error's message (e.g. a bad configuration key).
type BackendFactory func(ctx context.Context, opts BackendOptions) (Backend, error)

// Command arguments (PROTOCOL.md "Commands"). A field without `,omitempty`
// is required; decoding rejects unknown, missing and mistyped fields with a
// message naming the field.

// PromptArgs are the arguments of soba.prompt.
type PromptArgs struct {
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

// Checkpoint kinds accepted by soba.checkpoint.
const (
	CheckpointMilestone = "milestone"
	CheckpointPlanPivot = "plan_pivot"
)

// CheckpointArgs are the arguments of soba.checkpoint.
type CheckpointArgs struct {
	Kind string `json:"kind"`
	Note string `json:"note"`
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

// Command results (PROTOCOL.md "Commands").

// PromptResult is the result of soba.prompt.
type PromptResult struct {
	TurnID string `json:"turnId"`
	Queued bool   `json:"queued"`
}

// What soba.cancel cancelled.
const (
	CancelledTurn       = "turn"
	CancelledCompaction = "compaction"
	CancelledNone       = "none"
)

// CancelResult is the result of soba.cancel; What is turn, compaction or none.
type CancelResult struct {
	Cancelled bool   `json:"cancelled"`
	What      string `json:"what"`
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
	Trigger      string    `json:"trigger"`
	Title        string    `json:"title"`
	Quality      string    `json:"quality"`
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

// SessionSummary is one element of the soba.session.list result.
type SessionSummary struct {
	SessionID string    `json:"sessionId"`
	Path      string    `json:"path"`
	UpdatedAt time.Time `json:"updatedAt"`
	Entries   int       `json:"entries"`
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
