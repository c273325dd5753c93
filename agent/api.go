// Package agent runs SOBA's turn loop: prompts, inferences behind the
// preflight compaction barrier, tool calls, approvals and skills.
//
// # State machine
//
// A session's mutable state is one value guarded by one mutex (Agent.mu;
// every read and change runs under it through Agent.do). What the session
// does is one explicit phase, which only state.transition changes, along a
// fixed table (docs/architecture.md draws it):
//
//	idle             nothing runs; a prompt starts a turn, a compact starts at once
//	generating       a turn: preflight, inference, recording results
//	tool             a turn runs one tool call
//	turn_compacting  a turn waits on a compaction barrier (preflight, overflow recovery)
//	compacting       an explicit compaction runs between turns
//	capsule_create   soba.capsule.create writes its summary between turns
//	closed           Close ended all work and closed the session file
//
// A turn, a compaction between turns, and a summary request each run on a
// goroutine of the agent's conc.WaitGroup and take the lock for each step,
// never while they wait on the model, a tool, a summary or the user. Outside
// idle, prompts queue (each with its turn id) and start when the session is
// idle again, after an explicit compact asked for meanwhile.
//
// A soba.compact request waits keyed by the operation id of the compaction
// that answers it (or as unplanned until the running turn's next preflight
// plans one); a request that arrives while an explicit compaction runs joins
// it. Cancelling a request cancels only what it started: the compaction, if
// it started it, else its own wait. soba.cancel and the progress cancel
// (CancelCompaction) cancel the compaction itself.
//
// Close sets state.closing: nothing new starts, the running work is
// cancelled and drains through its phases back to idle, and then the phase
// becomes closed.
package agent

import (
	"context"
	"encoding/json"

	"github.com/soba-agent/soba-lsp/compaction"
)

// Event is one item of the agent's stream; the front end puts it on the
// wire as PROTOCOL.md's `soba/event` (lsp/protocol).
// Type is one of turn_start, text, tool_call, tool_result, turn_end, queued.
type Event struct {
	TurnID string
	Type   string
	Delta  string
	// Moved, on a thinking event, says that Delta is the answer text
	// streamed so far in this inference, which turned out to be thinking
	// (provider.Event.Moved): a front end moves what it showed.
	Moved     bool
	ID        string
	Name      string
	Arguments json.RawMessage
	OK        *bool
	Summary   string
	// Output is a tool result's whole content as recorded (tool_result);
	// the LSP wire carries only Summary.
	Output string
	// FilesRead and FilesModified are what a successful tool_result read
	// and changed (R-C6): a proposed, denied or failed write has none, so
	// an editor's file list built from them never shows what did not
	// happen.
	FilesRead     []string
	FilesModified []string
	Outcome       string
	Error         string
	// Usage, on turn_end, is what the provider reported for the turn's
	// requests; nil when it reported nothing.
	Usage *TurnUsage
}

// TurnUsage sums the provider's usage over a turn's requests: Input counts
// every prompt token, Cached the part of it a prompt cache served.
type TurnUsage struct {
	Input, Output, Cached int
}

// CompactionEvent is a `soba/compaction` notification: phase start, progress
// or end; on end the CompactionResult fields are filled. Phase "summary"
// carries a piece of the summary model's answer as it streams (for ACP's
// compaction_summary_chunk); it is not a `soba/compaction` phase.
type CompactionEvent struct {
	Phase       string
	OperationID string
	Trigger     string
	// Percentage is set only when it is real (R-B3): the share of summary
	// parts answered when the history is summarized in several.
	Percentage *int
	// Title, on start, says what the compaction holds up: "Compacting
	// context before response" only when a response waits for it.
	Title string
	// Message, on progress, says what the compaction waits for and what has
	// streamed: "waiting for the summary model · 12 s", "summarizing · 640
	// tokens · 15 s".
	Message string
	// ElapsedMs, on progress, is the time since the compaction started.
	ElapsedMs int64
	// SummaryDelta, on phase "summary", is the text just streamed.
	SummaryDelta string
	*compaction.CompactionResult
}

// Compaction titles (CompactionEvent.Title).
const (
	TitleBeforeResponse = "Compacting context before response"
	TitleCompacting     = "Compacting context"
)

// Approval is a decision on a tool call under `tools.approval: ask`.
type Approval int

// Approval decisions offered to the user.
const (
	Deny Approval = iota
	AllowOnce
	AllowSession
)

// Notifier receives everything the agent reports to the editor. The LSP
// layer implements it; every method must return quickly (no blocking I/O).
type Notifier interface {
	Event(Event)
	Budget(compaction.Budget)
	Compaction(CompactionEvent)
	// Log carries result lines (window/logMessage).
	Log(message string)
	// Warn is shown to the user (window/showMessage, Warning), e.g. when a
	// degraded fallback capsule was used.
	Warn(message string)
}

// Approver asks the user whether a tool call may run. The LSP layer
// implements it with window/showMessageRequest.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (Approval, error)
}

// ApprovalRequest is what the user is asked to approve (R-W3).
type ApprovalRequest struct {
	Tool string
	// Summary is the whole text shown: the command, or the path and the
	// change, with padding and control characters made visible.
	Summary string
	// Path and Proposed are set for a write_file or edit_file call whose
	// change is known: the workspace path and the file's whole content
	// after the change, so an editor can show a diff of exactly what will be
	// written.
	Path     string
	Proposed *string
	// Scope is what an answer for the session covers (ApprovalScope), in
	// words: "file edits", "bash commands", "the tools of MCP server x".
	Scope string
	// EveryTime is set for a call asked every time (a write to a protected
	// path, R-W6): an answer for the session would allow it once only, so a
	// front end that can should not offer one.
	EveryTime bool
	// Why says, for a call asked every time, which path and why ("Asked
	// every time: .git/hooks/pre-commit — git runs commands from it …").
	Why string
}
