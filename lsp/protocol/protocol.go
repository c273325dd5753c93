// Package protocol is the one definition of PROTOCOL.md's wire schema: the
// command IDs and notification methods, every command's argument and result
// object, the Budget, the CompactionResult, the soba/event and
// soba/compaction notifications, and typed names for their enumerations
// (Trigger, Outcome, State, Phase, EventType, …).
//
// The engine and the agent return plain values of their own; the front ends
// map them onto these types, so a change here is a change of the contract
// (docs, both editors and the tests change with it). The VS Code extension's
// TypeScript types are checked against these by TestTypeScriptMatchesWire.
package protocol

// Command IDs of PROTOCOL.md, answered through workspace/executeCommand.
const (
	CommandPrompt        = "soba.prompt"
	CommandRun           = "soba.run"
	CommandCancel        = "soba.cancel"
	CommandBudget        = "soba.budget"
	CommandCompact       = "soba.compact"
	CommandAutoCompact   = "soba.autoCompact"
	CommandCheckpoint    = "soba.checkpoint"
	CommandCapsuleCreate = "soba.capsule.create"
	CommandCapsuleExport = "soba.capsule.export"
	CommandCapsuleLoad   = "soba.capsule.load"
	CommandCapsuleList   = "soba.capsule.list"
	CommandCapsuleShow   = "soba.capsule.show"
	CommandSessionInfo   = "soba.session.info"
	CommandSessionList   = "soba.session.list"
	CommandSessionNew    = "soba.session.new"
	CommandSessionResume = "soba.session.resume"
	CommandSessionRewind = "soba.session.rewind"
)

// CommandSessionHistory is an addition to PROTOCOL.md (docs/protocol.md): the
// points of the current path a rewind can go back to. It is declared apart
// from PROTOCOL.md's commands because it is answered but not advertised.
const CommandSessionHistory = "soba.session.history"

// CommandSessionTranscript is an addition to PROTOCOL.md (docs/protocol.md):
// the conversation of the current path in pages, newest page first, which
// the editors' chats show when a session is reopened.
const CommandSessionTranscript = "soba.session.transcript"

// Commands lists every command of PROTOCOL.md in its order. The server
// advertises exactly these in executeCommandProvider.commands: PROTOCOL.md's
// table is the advertised list, so a client that compares the two finds
// nothing missing and nothing extra.
var Commands = []string{
	CommandPrompt, CommandRun, CommandCancel, CommandBudget, CommandCompact, CommandAutoCompact,
	CommandCheckpoint, CommandCapsuleCreate, CommandCapsuleExport, CommandCapsuleLoad, CommandCapsuleList,
	CommandCapsuleShow, CommandSessionInfo, CommandSessionList, CommandSessionNew, CommandSessionResume,
	CommandSessionRewind,
}

// Additions lists the commands this server answers besides PROTOCOL.md's
// (docs/protocol.md). SOBA's own front ends call them through
// workspace/executeCommand; they are not advertised, so the advertised list
// stays PROTOCOL.md's table exactly.
var Additions = []string{CommandSessionHistory, CommandSessionTranscript}

// Notifications of PROTOCOL.md that are SOBA's own.
const (
	MethodEvent      = "soba/event"
	MethodBudget     = "soba/budget"
	MethodCompaction = "soba/compaction"
)

// Trigger is why a compaction ran (R-G1).
type Trigger string

// The seven triggers of R-G1.
const (
	TriggerHardLimit       Trigger = "hard_limit"
	TriggerMilestone       Trigger = "milestone"
	TriggerPlanPivot       Trigger = "plan_pivot"
	TriggerTurnComplete    Trigger = "turn_complete"
	TriggerAutoThreshold   Trigger = "auto_threshold"
	TriggerUser            Trigger = "user"
	TriggerContextOverflow Trigger = "context_overflow"
)

// Triggers lists the triggers of R-G1.
var Triggers = []Trigger{TriggerHardLimit, TriggerMilestone, TriggerPlanPivot, TriggerTurnComplete,
	TriggerAutoThreshold, TriggerUser, TriggerContextOverflow}

// Outcome is a compaction's terminal outcome (R-B4).
type Outcome string

// The terminal outcomes of R-B4.
const (
	OutcomeCompleted Outcome = "completed"
	OutcomeSkipped   Outcome = "skipped"
	OutcomeCancelled Outcome = "cancelled"
	OutcomeStale     Outcome = "stale"
	OutcomeFailed    Outcome = "failed"
)

// Outcomes lists the outcomes of R-B4.
var Outcomes = []Outcome{OutcomeCompleted, OutcomeSkipped, OutcomeCancelled, OutcomeStale, OutcomeFailed}

// Quality is a capsule's quality: full, degraded, or empty when nothing was
// appended.
type Quality string

// Capsule qualities.
const (
	QualityNone     Quality = ""
	QualityFull     Quality = "full"
	QualityDegraded Quality = "degraded"
)

// State is what the session is doing, as the Budget reports it.
type State string

// Session states of the Budget.
const (
	StateIdle       State = "idle"
	StateGenerating State = "generating"
	StateTool       State = "tool"
	StateCompacting State = "compacting"
)

// States lists the Budget's states.
var States = []State{StateIdle, StateGenerating, StateTool, StateCompacting}

// Source says how the Budget's effective tokens were measured.
type Source string

// Measurement sources.
const (
	SourceProviderUsage Source = "provider_usage"
	SourceEstimated     Source = "estimated"
)

// Phase is the phase of a soba/compaction notification.
type Phase string

// Compaction notification phases.
const (
	PhaseStart    Phase = "start"
	PhaseProgress Phase = "progress"
	PhaseEnd      Phase = "end"
)

// EventType is the type of a soba/event item.
type EventType string

// Agent stream item types.
const (
	EventTurnStart EventType = "turn_start"
	EventText      EventType = "text"
	// EventThinking is a piece of the model's reasoning, kept apart from
	// the answer and shown folded (R-C9).
	EventThinking   EventType = "thinking"
	EventToolCall   EventType = "tool_call"
	EventToolResult EventType = "tool_result"
	EventTurnEnd    EventType = "turn_end"
	EventQueued     EventType = "queued"
)

// EventTypes lists the soba/event types.
var EventTypes = []EventType{EventTurnStart, EventText, EventThinking, EventToolCall, EventToolResult, EventTurnEnd, EventQueued}

// TurnOutcome is how a turn ended (turn_end's outcome).
type TurnOutcome string

// Turn outcomes.
const (
	TurnCompleted TurnOutcome = "completed"
	TurnCancelled TurnOutcome = "cancelled"
	TurnFailed    TurnOutcome = "failed"
)

// CheckpointKind is soba.checkpoint's kind.
type CheckpointKind string

// Checkpoint kinds accepted by soba.checkpoint.
const (
	CheckpointMilestone CheckpointKind = "milestone"
	CheckpointPlanPivot CheckpointKind = "plan_pivot"
)

// Cancelled is what soba.cancel cancelled.
type Cancelled string

// What soba.cancel cancelled.
const (
	CancelledTurn       Cancelled = "turn"
	CancelledCompaction Cancelled = "compaction"
	CancelledNone       Cancelled = "none"
)

// HistoryKind is what a soba.session.history point is.
type HistoryKind string

// soba.session.history kinds.
const (
	HistoryUser       HistoryKind = "user"
	HistoryCheckpoint HistoryKind = "checkpoint"
)

// HistoryKinds lists the soba.session.history kinds.
var HistoryKinds = []HistoryKind{HistoryUser, HistoryCheckpoint}

// RunKind is what soba.run found the typed text to be.
type RunKind string

// soba.run kinds.
const (
	RunKindCommand RunKind = "command"
	RunKindPrompt  RunKind = "prompt"
)

// TranscriptKind is what a soba.session.transcript item is.
type TranscriptKind string

// soba.session.transcript kinds.
const (
	KindUser       TranscriptKind = "user"
	KindAssistant  TranscriptKind = "assistant"
	KindTool       TranscriptKind = "tool"
	KindCompaction TranscriptKind = "compaction"
	KindCheckpoint TranscriptKind = "checkpoint"
	KindError      TranscriptKind = "error"
)

// TranscriptKinds lists the soba.session.transcript kinds.
var TranscriptKinds = []TranscriptKind{KindUser, KindAssistant, KindTool, KindCompaction, KindCheckpoint, KindError}

// Approval answers of a soba.session.transcript tool item.
const (
	ApprovalOnce    = "once"
	ApprovalSession = "session"
	ApprovalDenied  = "denied"
)
