// Package compaction is SOBA's context-compaction engine: the budget, the
// triggers and their priority, the ROI gates, the safe cut point, the Context
// Capsule builder and the model-input view (SPEC §2–§7).
//
// The engine is pure where it can be: decisions are functions of their inputs,
// the transcript is read through the small Transcript interface, and the
// summary model, the clock and the file system reach it only through
// interfaces, so every rule is testable without a network or an editor.
package compaction

import (
	"fmt"
	"math"
	"sync"

	"github.com/soba-agent/soba-lsp/configschema"
)

// Keys are exactly the compaction keys of SPEC §6, as the configuration
// file spells them; the workspace configuration uses this type. Their
// defaults and rules are described once, in package configschema.
type Keys struct {
	Auto                      bool    `json:"auto"`
	CompactOnTurnComplete     bool    `json:"compactOnTurnComplete"`
	CompactOnMilestone        bool    `json:"compactOnMilestone"`
	MinTokensForAutoCompact   int     `json:"minTokensForAutoCompact"`
	MinReclaimableTokens      int     `json:"minReclaimableTokens"`
	MinSavingsRatio           float64 `json:"minSavingsRatio"`
	KeepRecentTokens          int     `json:"keepRecentTokens"`
	SafetyReserveTokens       int     `json:"safetyReserveTokens"`
	AutoCompactThresholdRatio float64 `json:"autoCompactThresholdRatio"`
	TimeoutMs                 int     `json:"timeoutMs"`
}

// DefaultKeys returns the defaults of SPEC §6 (R-S1), from configschema.
func DefaultKeys() Keys { return defaultConfig().Keys }

// Config is what the engine decides with: the compaction keys and the
// model limits that set the hard limit (R-S3: they come from the active
// model definition).
type Config struct {
	Keys
	ContextWindow   int
	MaxOutputTokens int
}

// DefaultConfig returns the defaults of SPEC §6 (R-S1) with the default
// model's window and output limit, all from configschema.
func DefaultConfig() Config { return defaultConfig() }

var defaultConfig = sync.OnceValue(func() Config {
	var c Config
	configschema.MustDecodeDefaults("compaction", &c.Keys)
	var model struct {
		ContextWindow   int `json:"contextWindow"`
		MaxOutputTokens int `json:"maxOutputTokens"`
	}
	configschema.MustDecodeDefaults("model", &model)
	c.ContextWindow, c.MaxOutputTokens = model.ContextWindow, model.MaxOutputTokens
	return c
})

// HardLimit is contextWindow − maxOutputTokens − safetyReserveTokens (R-G4).
func (c Config) HardLimit() int {
	return c.ContextWindow - c.MaxOutputTokens - c.SafetyReserveTokens
}

// SoftLimit is min(hardLimit − 1, max(minTokensForAutoCompact,
// floor(hardLimit × autoCompactThresholdRatio))) (R-S2).
func (c Config) SoftLimit() int {
	h := c.HardLimit()
	ratio := int(math.Floor(float64(h) * c.AutoCompactThresholdRatio))
	return min(h-1, max(c.MinTokensForAutoCompact, ratio))
}

// Validate reports the first value that makes the engine's arithmetic
// meaningless, naming the key (R-S1). The configuration loader checks the
// same and more with the file it came from; this guards the engine itself.
func (c Config) Validate() error {
	switch {
	case c.ContextWindow <= 0:
		return fmt.Errorf("model.contextWindow: must be positive, got %d", c.ContextWindow)
	case c.MaxOutputTokens < 0:
		return fmt.Errorf("model.maxOutputTokens: must not be negative, got %d", c.MaxOutputTokens)
	case c.SafetyReserveTokens < 0:
		return fmt.Errorf("compaction.safetyReserveTokens: must not be negative, got %d", c.SafetyReserveTokens)
	case c.HardLimit() <= 0:
		return fmt.Errorf("compaction.safetyReserveTokens: hard limit %d = contextWindow %d - maxOutputTokens %d - safetyReserveTokens %d must be positive",
			c.HardLimit(), c.ContextWindow, c.MaxOutputTokens, c.SafetyReserveTokens)
	case c.KeepRecentTokens < 0 || c.KeepRecentTokens >= c.HardLimit():
		return fmt.Errorf("compaction.keepRecentTokens: %d must be between 0 and the hard limit %d", c.KeepRecentTokens, c.HardLimit())
	case c.MinSavingsRatio < 0 || c.MinSavingsRatio > 1:
		return fmt.Errorf("compaction.minSavingsRatio: %v is outside 0..1", c.MinSavingsRatio)
	case c.AutoCompactThresholdRatio < 0 || c.AutoCompactThresholdRatio > 1:
		return fmt.Errorf("compaction.autoCompactThresholdRatio: %v is outside 0..1", c.AutoCompactThresholdRatio)
	case c.MinTokensForAutoCompact < 0:
		return fmt.Errorf("compaction.minTokensForAutoCompact: must not be negative, got %d", c.MinTokensForAutoCompact)
	case c.MinReclaimableTokens < 0:
		return fmt.Errorf("compaction.minReclaimableTokens: must not be negative, got %d", c.MinReclaimableTokens)
	case c.TimeoutMs <= 0:
		return fmt.Errorf("compaction.timeoutMs: must be positive, got %d", c.TimeoutMs)
	}
	return nil
}
