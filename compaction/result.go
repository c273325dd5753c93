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

// Budget is the budget object of PROTOCOL.md (R-O1).
type Budget struct {
	EffectiveTokens     int               `json:"effectiveTokens"`
	HardLimit           int               `json:"hardLimit"`
	SoftLimit           int               `json:"softLimit"`
	ContextWindow       int               `json:"contextWindow"`
	MaxOutputTokens     int               `json:"maxOutputTokens"`
	SafetyReserveTokens int               `json:"safetyReserveTokens"`
	Source              string            `json:"source"`
	AutoCompact         bool              `json:"autoCompact"`
	Pending             []string          `json:"pending"`
	State               string            `json:"state"`
	LastCompaction      *CompactionResult `json:"lastCompaction"`
}

// CompactionResult is the terminal report of one compaction operation
// (PROTOCOL.md). Line is the one-line result of R-B3.
type CompactionResult struct {
	OperationID     string  `json:"operationId"`
	Trigger         string  `json:"trigger"`
	Outcome         string  `json:"outcome"`
	TokensBefore    int     `json:"tokensBefore"`
	TokensAfter     int     `json:"tokensAfter"`
	ReclaimedTokens int     `json:"reclaimedTokens"`
	ReclaimedRatio  float64 `json:"reclaimedRatio"`
	CheckpointID    string  `json:"checkpointId"`
	Quality         string  `json:"quality"`
	DurationMs      int64   `json:"durationMs"`
	Reason          string  `json:"reason"`
	Line            string  `json:"line"`
	// Declined is set on a soft compaction the exact check (R-R2) declined:
	// the figures it measured, for the next soft triggers to wait on. It is
	// the engine's, not the wire's.
	Declined *Declined `json:"-"`
}

// CapsuleResult is the completed compaction a recorded capsule stands for,
// as the status line shows it after a resume: its trigger, token figures,
// checkpoint and quality (operation id and duration are not recorded in the
// capsule, so they stay empty).
func CapsuleResult(c *session.Capsule) CompactionResult {
	r := CompactionResult{Trigger: c.Trigger, Outcome: OutcomeCompleted, TokensBefore: c.TokensBefore,
		TokensAfter: c.TokensAfter, ReclaimedTokens: c.TokensBefore - c.TokensAfter, CheckpointID: c.CheckpointID, Quality: c.Quality}
	if c.TokensBefore > 0 {
		r.ReclaimedRatio = float64(r.ReclaimedTokens) / float64(c.TokensBefore)
	}
	r.Line = ResultLine(r)
	return r
}
