package compaction

import "github.com/soba-agent/soba-lsp/session"

// Triggers (R-G1).
const (
	TriggerHardLimit       = "hard_limit"
	TriggerMilestone       = "milestone"
	TriggerPlanPivot       = "plan_pivot"
	TriggerTurnComplete    = "turn_complete"
	TriggerAutoThreshold   = "auto_threshold"
	TriggerUser            = "user"
	TriggerContextOverflow = "context_overflow"
)

// Terminal outcomes of a compaction (R-B4).
const (
	OutcomeCompleted = "completed"
	OutcomeSkipped   = "skipped"
	OutcomeCancelled = "cancelled"
	OutcomeStale     = "stale"
	OutcomeFailed    = "failed"
)

// Session states reported in the Budget.
const (
	StateIdle       = "idle"
	StateGenerating = "generating"
	StateTool       = "tool"
	StateCompacting = "compacting"
)

// Budget is the session's budget (R-O1); the front ends put it on the
// wire as PROTOCOL.md's Budget (lsp/protocol).
type Budget struct {
	EffectiveTokens     int
	HardLimit           int
	SoftLimit           int
	ContextWindow       int
	MaxOutputTokens     int
	SafetyReserveTokens int
	Source              string
	AutoCompact         bool
	Pending             []string
	State               string
	LastCompaction      *CompactionResult
	// CachedTokens is the part of the last request's input the provider
	// served from its prompt cache, as its usage reported it (0 before a
	// report in this run of the session, or when it reported none).
	CachedTokens int
	// RepositorySettingsIgnored are the keys of the repository's own
	// configuration left out because the workspace is not trusted (SPEC
	// R-W5), sorted; nil when none are. The engine does not read them: the
	// budget is where the editors show the session's status.
	RepositorySettingsIgnored []string
}

// CompactionResult is the terminal report of one compaction operation; the
// front ends put it on the wire as PROTOCOL.md's CompactionResult
// (lsp/protocol). Line is the one-line result of R-B3.
type CompactionResult struct {
	OperationID     string
	Trigger         string
	Outcome         string
	TokensBefore    int
	TokensAfter     int
	ReclaimedTokens int
	ReclaimedRatio  float64
	CheckpointID    string
	Quality         string
	DurationMs      int64
	Reason          string
	Line            string
	// Declined is set on a soft compaction the exact check (R-R2) declined:
	// the figures it measured, for the next soft triggers to wait on.
	Declined *Declined
	// Native says the appended capsule carries a native continuation
	// (R-N1); the line then ends "· native".
	Native bool
	// NativeOutcome is how the native call ended (Native* constants), ""
	// when none was made; NativeDurationMs is how long it took.
	NativeOutcome    string
	NativeDurationMs int64
	// Generated says the barrier went past its pre-generation checks and
	// built a capsule; SummaryAsked says a summary model was asked for it.
	// A skipped result with Generated set is work thrown away (the
	// prediction of R-R2 missed), which the replay counts.
	Generated    bool
	SummaryAsked bool
}

// CapsuleResult is the completed compaction a recorded capsule stands for,
// as the status line shows it after a resume: its trigger, token figures,
// checkpoint and quality (operation id and duration are not recorded in the
// capsule, so they stay empty).
func CapsuleResult(c *session.Capsule) CompactionResult {
	r := CompactionResult{Trigger: c.Trigger, Outcome: OutcomeCompleted, TokensBefore: c.TokensBefore,
		TokensAfter: c.TokensAfter, ReclaimedTokens: c.TokensBefore - c.TokensAfter, CheckpointID: c.CheckpointID, Quality: c.Quality,
		Native: c.Native != nil}
	if c.TokensBefore > 0 {
		r.ReclaimedRatio = float64(r.ReclaimedTokens) / float64(c.TokensBefore)
	}
	r.Line = ResultLine(r)
	return r
}

// InBudgetTerms restates a completed result in the budget's measure (the
// effective tokens before the plan and after the append), as the editor
// shows them; the engine's own figures are raw estimates. The server and
// the offline compact both report through it. A figure that is unknown
// (0) leaves the result as it is.
func (r CompactionResult) InBudgetTerms(before, after int) CompactionResult {
	if before <= 0 || after <= 0 {
		return r
	}
	r.TokensBefore, r.TokensAfter = before, after
	r.ReclaimedTokens = before - after
	r.ReclaimedRatio = float64(r.ReclaimedTokens) / float64(before)
	r.Line = ResultLine(r)
	return r
}
