package compaction

import (
	"fmt"

	"github.com/soba-agent/soba-lsp/internal/text"
)

// PreGenerationROI is the check of R-R1, made before any summary is
// generated: reclaimable = effective − keepRecentTokens, savingsRatio =
// reclaimable / effective; generation starts only if both floors are met.
func PreGenerationROI(effective int, c Config) (bool, string) {
	if effective <= 0 {
		return false, "nothing to compact"
	}
	reclaimable := effective - c.KeepRecentTokens
	ratio := float64(reclaimable) / float64(effective)
	if reclaimable < c.MinReclaimableTokens {
		return false, fmt.Sprintf("only %s tokens reclaimable, below minReclaimableTokens %s", text.Thousands(max(reclaimable, 0)), text.Thousands(c.MinReclaimableTokens))
	}
	if ratio < c.MinSavingsRatio {
		return false, fmt.Sprintf("savings ratio %.2f is below minSavingsRatio %.2f", ratio, c.MinSavingsRatio)
	}
	return true, ""
}

// PostGenerationROI is the gate of R-R2, applied to the exact measurement of
// the whole continuation (system and tools, the serialized capsule, the kept
// tail). Only soft triggers are subject to it: hard_limit, context_overflow
// and user pass whatever the figures.
func PostGenerationROI(trigger string, before, after int, c Config) (bool, string) {
	if !IsSoft(trigger) {
		return true, ""
	}
	reclaimed := before - after
	if before <= 0 || reclaimed < c.MinReclaimableTokens {
		return false, ReasonTooLittleFreed(reclaimed, c.MinReclaimableTokens)
	}
	if ratio := float64(reclaimed) / float64(before); ratio < c.MinSavingsRatio {
		return false, ReasonTooSmallShare(ratio, c.MinSavingsRatio)
	}
	return true, ""
}

// Declined remembers the last soft compaction the exact check (R-R2)
// declined: the continuation measured Before tokens and its capsule would
// have left After, when the session's effective input was Effective.
// Running the same barrier again before the history has grown enough would
// only be declined again, at the cost of a summary request each turn when a
// model summarizes, so soft triggers wait for that growth (Blocks).
type Declined struct {
	Before, After, Effective int
}

// Blocks reports whether a soft trigger at effective would be declined
// again: even if every token added since counted as reclaimed (the keep
// window moves forward by what is appended), the gate of R-R2 would still
// fail. Once a whole keep window has been appended the cut can land
// somewhere else entirely (past a large tool batch that held the old kept
// tail, say), so the bound no longer holds and nothing is blocked. A nil
// Declined blocks nothing.
func (d *Declined) Blocks(effective int, c Config) (bool, string) {
	if d == nil {
		return false, ""
	}
	grown := max(0, effective-d.Effective)
	if grown >= c.KeepRecentTokens {
		return false, ""
	}
	if ok, _ := PostGenerationROI(TriggerTurnComplete, d.Before+grown, d.After, c); ok {
		return false, ""
	}
	return true, fmt.Sprintf("the last soft compaction would have reclaimed only %d tokens; %d tokens added since cannot make it worthwhile",
		max(0, d.Before-d.After), grown)
}
