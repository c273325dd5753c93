package lsp

import (
	"context"
	"encoding/json"

	"github.com/soba-agent/soba-lsp/lsp/protocol"
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
	Prompt(ctx context.Context, args protocol.PromptArgs) (protocol.PromptResult, error)
	Cancel(ctx context.Context) (protocol.CancelResult, error)
	Budget(ctx context.Context) (protocol.Budget, error)
	// Compact runs an explicit compaction and returns when it reached its
	// terminal outcome; a cancelled compaction is a result with outcome
	// "cancelled", not an error.
	Compact(ctx context.Context, args protocol.CompactArgs) (protocol.CompactionResult, error)
	SetAutoCompact(ctx context.Context, args protocol.AutoCompactArgs) (protocol.Budget, error)
	Checkpoint(ctx context.Context, args protocol.CheckpointArgs) (protocol.CheckpointResult, error)
	CapsuleCreate(ctx context.Context, args protocol.CapsuleCreateArgs) (protocol.CapsuleCreateResult, error)
	CapsuleExport(ctx context.Context, args protocol.CapsuleExportArgs) (protocol.CapsuleExportResult, error)
	CapsuleLoad(ctx context.Context, args protocol.CapsuleLoadArgs) (protocol.CapsuleLoadResult, error)
	CapsuleList(ctx context.Context) ([]protocol.CapsuleInfo, error)
	CapsuleShow(ctx context.Context, args protocol.CapsuleShowArgs) (protocol.CapsuleShowResult, error)
	SessionInfo(ctx context.Context) (protocol.SessionInfo, error)
	SessionList(ctx context.Context) ([]protocol.SessionSummary, error)
	SessionNew(ctx context.Context) (protocol.SessionNewResult, error)
	SessionResume(ctx context.Context, args protocol.SessionResumeArgs) (protocol.SessionResumeResult, error)
	SessionRewind(ctx context.Context, args protocol.SessionRewindArgs) (protocol.SessionRewindResult, error)
	// SessionHistory lists the points of the current path a rewind can go
	// back to (soba.session.history, an addition to PROTOCOL.md).
	SessionHistory(ctx context.Context) ([]protocol.HistoryPoint, error)
	// SessionTranscript returns a page of the current path's conversation
	// (soba.session.transcript, an addition to PROTOCOL.md).
	SessionTranscript(ctx context.Context, args protocol.SessionTranscriptArgs) (protocol.SessionTranscript, error)

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
	Notifier Notifier
	// Approver asks the user about tool calls (window/showMessageRequest).
	Approver Approver
}

// Notifier is what a backend reports to the editor, in the wire's types.
// Every method only queues: none blocks.
type Notifier interface {
	// Event sends soba/event.
	Event(protocol.Event)
	// Budget sends soba/budget (coalesced).
	Budget(protocol.Budget)
	// Compaction sends soba/compaction and drives the barrier's progress.
	Compaction(protocol.CompactionEvent)
	// Log carries result lines (window/logMessage).
	Log(message string)
	// Warn is shown to the user (window/showMessage, Warning).
	Warn(message string)
}

// Approval is the user's decision on a tool call.
type Approval int

// Decisions offered in window/showMessageRequest.
const (
	Deny Approval = iota
	AllowOnce
	AllowSession
)

// Approver asks the user whether a tool call may run.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (Approval, error)
}

// ApprovalRequest is what the user is asked to approve (R-W3): the tool,
// the whole summary shown, and for a write or an edit the workspace path
// and the file's content after the change (Proposed), which the request
// carries for an editor to show as a diff.
type ApprovalRequest struct {
	Tool     string
	Summary  string
	Path     string
	Proposed *string
	// Scope is what "for this session" covers, in words ("file edits",
	// "bash commands", "the tools of MCP server \"github\""); the allow
	// action names it. Empty: the tool alone.
	Scope string
	// EveryTime: the call is asked every time (a write to a protected
	// path, R-W6), so no answer for the session is offered.
	EveryTime bool
	// Why says which protected path and why, for a call asked every time;
	// the question's second line.
	Why string
}

// BackendFactory creates the backend at `initialize`. An error fails the
// initialize request with the error's message (e.g. a bad configuration key).
type BackendFactory func(ctx context.Context, opts BackendOptions) (Backend, error)
