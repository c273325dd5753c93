package compaction

import "slices"

// Intents is the set of pending trigger intents: soft triggers recorded
// between inferences (R-B1, R-G6, R-G7) and an explicit user request (R-G8).
// A pending intent is consumed once, by the preflight that acts on it (R-G2).
type Intents struct {
	list []string
}

// intentOrder is the order in which intents are listed (Budget.pending).
var intentOrder = []string{TriggerUser, TriggerMilestone, TriggerPlanPivot, TriggerTurnComplete}

// Add records an intent; adding one already pending is a no-op.
func (in *Intents) Add(trigger string) {
	if !slices.Contains(in.list, trigger) {
		in.list = append(in.list, trigger)
	}
}

// Has reports whether the intent is pending.
func (in Intents) Has(trigger string) bool { return slices.Contains(in.list, trigger) }

// Consume removes the intent and reports whether it was pending.
func (in *Intents) Consume(trigger string) bool {
	i := slices.Index(in.list, trigger)
	if i < 0 {
		return false
	}
	in.list = slices.Delete(in.list, i, i+1)
	return true
}

// List returns the pending intents in a stable order.
func (in Intents) List() []string {
	out := make([]string, 0, len(in.list))
	for _, t := range intentOrder {
		if in.Has(t) {
			out = append(out, t)
		}
	}
	return out
}

// Len is the number of pending intents.
func (in Intents) Len() int { return len(in.list) }

// IsSoft reports whether a trigger is soft (R-G10): soft triggers obey
// auto-compact off, the ROI gates and the one-attempt-per-turn rule.
func IsSoft(trigger string) bool {
	switch trigger {
	case TriggerAutoThreshold, TriggerTurnComplete, TriggerMilestone, TriggerPlanPivot:
		return true
	}
	return false
}

// ValidTrigger reports whether t is one of the seven triggers of R-G1.
func ValidTrigger(t string) bool {
	switch t {
	case TriggerHardLimit, TriggerMilestone, TriggerPlanPivot, TriggerTurnComplete,
		TriggerAutoThreshold, TriggerUser, TriggerContextOverflow:
		return true
	}
	return false
}

// PreflightInput is everything the preflight decision depends on. It is a
// plain value so the decision is a pure function (R-B2, R-G2).
type PreflightInput struct {
	// Effective is the effective input of the next request, the pending
	// request included (a large pasted prompt counts before it is sent).
	Effective int
	Config    Config
	// AutoCompact is the session's auto-compact switch (`auto-compact
	// on|off`); soft triggers need both it and Config.Auto (R-G10).
	AutoCompact bool
	Pending     Intents
	// SoftAttempted is true once a soft compaction was attempted in the
	// current agent turn (R-G5).
	SoftAttempted bool
	// Declined is the last soft compaction the exact check declined since
	// the model input last changed shape, or nil; soft triggers wait until
	// one could pass (Declined.Blocks).
	Declined *Declined
}

// Decision is the preflight's choice: at most one trigger, or none.
type Decision struct {
	Trigger string
	// Consume lists the intents the chosen compaction consumes.
	Consume []string
	// Reason says why nothing runs, or why a soft trigger was declined.
	Reason string
}

// Due reports whether the decision runs a compaction.
func (d Decision) Due() bool { return d.Trigger != "" }

// Preflight picks at most one trigger by the priority of R-G2: hard_limit;
// then a pending milestone or plan_pivot; then a pending turn_complete; then
// the ordinary auto_threshold. An explicit user request ranks right after the
// hard limit; when the hard limit runs it also answers a pending user request
// (one compaction satisfies both, and the user gets its result).
//
// It allocates nothing on the common path where nothing is due.
func Preflight(in PreflightInput) Decision {
	c := in.Config
	if in.Effective > c.HardLimit() {
		d := Decision{Trigger: TriggerHardLimit}
		if in.Pending.Has(TriggerUser) {
			d.Consume = []string{TriggerUser}
		}
		return d
	}
	if in.Pending.Has(TriggerUser) {
		return Decision{Trigger: TriggerUser, Consume: []string{TriggerUser}}
	}
	soft := c.Auto && in.AutoCompact
	if !soft {
		if in.Pending.Len() > 0 || in.Effective >= c.SoftLimit() {
			return Decision{Reason: "auto-compact is off"}
		}
		return Decision{}
	}
	if in.SoftAttempted {
		if in.Pending.Len() > 0 || in.Effective >= c.SoftLimit() {
			return Decision{Reason: "a soft compaction was already attempted in this turn"}
		}
		return Decision{}
	}
	for _, t := range [...]string{TriggerMilestone, TriggerPlanPivot, TriggerTurnComplete} {
		if !in.Pending.Has(t) {
			continue
		}
		if ok, why := PreGenerationROI(in.Effective, c); !ok {
			// The intent is consumed even when declined: it was recorded for
			// this moment, and a later preflight re-evaluates afresh.
			return Decision{Consume: []string{t}, Reason: why}
		}
		if blocked, why := in.Declined.Blocks(in.Effective, c); blocked {
			return Decision{Consume: []string{t}, Reason: why}
		}
		return Decision{Trigger: t, Consume: []string{t}}
	}
	if in.Effective >= c.SoftLimit() {
		if ok, why := PreGenerationROI(in.Effective, c); !ok {
			return Decision{Reason: why}
		}
		if blocked, why := in.Declined.Blocks(in.Effective, c); blocked {
			return Decision{Reason: why}
		}
		return Decision{Trigger: TriggerAutoThreshold}
	}
	return Decision{}
}

// TurnCompleteIntent reports whether a completed turn records a
// turn_complete intent (R-G6): with auto and compactOnTurnComplete, when the
// effective context is at least minTokensForAutoCompact, R-R1 passes, and
// the last declined soft compaction (nil when none) does not show that the
// exact check would decline it again ("worthwhile", R-G6).
func TurnCompleteIntent(effective int, c Config, autoCompact bool, declined *Declined) bool {
	if !c.Auto || !autoCompact || !c.CompactOnTurnComplete {
		return false
	}
	if effective < c.MinTokensForAutoCompact {
		return false
	}
	if blocked, _ := declined.Blocks(effective, c); blocked {
		return false
	}
	ok, _ := PreGenerationROI(effective, c)
	return ok
}

// MilestoneIntent reports whether a checkpoint of the given kind records an
// intent (R-G7). Milestones obey compactOnMilestone; a plan pivot always
// records one while soft triggers are on.
func MilestoneIntent(kind string, c Config, autoCompact bool) bool {
	if !c.Auto || !autoCompact {
		return false
	}
	switch kind {
	case TriggerMilestone:
		return c.CompactOnMilestone
	case TriggerPlanPivot:
		return true
	}
	return false
}
