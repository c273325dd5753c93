// Package capsule defines the Context Capsule: the portable working state of a
// session that replaces old history in the model input (SPEC §3), and its
// .capsule.md text form (SPEC §10, docs/capsule-format.md).
//
// It is a leaf package of plain data so that the transcript store, the
// compaction engine and the editor layer all share one definition.
package capsule

import (
	"encoding/json"
	"strings"
)

// State is the portable state of R-C1. The narrative fields come from the
// summary model (or the deterministic builder); the artifact fields are filled
// by the engine from what the session recorded (R-C2) and never from a summary.
type State struct {
	Goal        string     `json:"goal,omitempty"`
	Constraints []string   `json:"constraints,omitempty"`
	Done        []string   `json:"done,omitempty"`
	InProgress  []string   `json:"inProgress,omitempty"`
	Pending     []string   `json:"pending,omitempty"`
	Decisions   []Decision `json:"decisions,omitempty"`
	Blockers    []string   `json:"blockers,omitempty"`
	NextSteps   []string   `json:"nextSteps,omitempty"`
	Notes       []string   `json:"notes,omitempty"`

	// Artifacts (R-C2): exact, from tool calls, editor documents and the watcher.
	FilesRead     []string       `json:"filesRead,omitempty"`
	FilesModified []string       `json:"filesModified,omitempty"`
	Verification  []Verification `json:"verification,omitempty"`
	ActiveSkills  []string       `json:"activeSkills,omitempty"`

	// UserMessages keeps the user's own words verbatim, newest first, within a
	// bounded share of the capsule: they carry intent a summary tends to blur.
	UserMessages []string `json:"userMessages,omitempty"`
}

// Decision is a choice the session made, with why.
type Decision struct {
	Decision  string `json:"decision"`
	Rationale string `json:"rationale,omitempty"`
}

// Verification is a verification command (tests, build, lint) with its last
// recorded outcome.
type Verification struct {
	Command string `json:"command"`
	// ExitCode is the check's own exit status, -1 when the run reported
	// none of its own (interrupted, or its status was an output filter's).
	// A line shows it only when it is the check's own and agrees with the
	// outcome (ShowsExit).
	ExitCode int `json:"exitCode"`
	// Outcome is "passed" or "failed" (or "interrupted", "inconclusive"),
	// derived from ExitCode when the command ran to completion.
	Outcome string `json:"outcome"`
	// Detail says what the outcome and exit status cannot: whose status a
	// run reported ("the exit status was `tail`'s"), or the step a failure
	// was in ("in its `npm run build` step").
	Detail string `json:"detail,omitempty"`
}

// ShowsExit reports whether v's line shows its exit status: only a status
// of the check's own that agrees with the outcome (0 for passed, non-zero
// for failed; any for an outcome SOBA does not write), never for an
// inconclusive or interrupted run. A line never shows an exit code the
// check did not return.
func (v Verification) ShowsExit() bool {
	switch {
	case v.ExitCode < 0:
		return false
	case v.Outcome == "inconclusive" || v.Outcome == "interrupted":
		return false
	case v.Outcome == "passed":
		return v.ExitCode == 0
	case v.Outcome == "failed":
		return v.ExitCode != 0
	}
	return true
}

// detailJoin is what comes between a Verification line's outcome (and exit
// status) and its detail: a step reads on ("failed (exit 1) in its `npm run
// build` step"), anything else after a colon.
func detailJoin(detail string) string {
	if strings.HasPrefix(detail, "in ") {
		return " "
	}
	return ": "
}

// Native is a provider-side continuation: items in the provider's own
// format (the Responses API's compaction item with the user messages it
// kept, Anthropic's compaction block, an answer's encrypted reasoning) that
// stand for history in later requests to the same provider and model, and
// only those (R-M1, R-C3, R-N1). They are opaque: SOBA stores and sends them
// verbatim and never reads their content.
type Native struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Items is a JSON array of the provider's items.
	Items json.RawMessage `json:"items"`
	// Tokens is the items' size as the provider reported it (0 when it did
	// not), the estimate of what they cost in a request before the
	// provider's usage reports it.
	Tokens int `json:"tokens,omitempty"`
}

// Quality of a capsule (R-C3, R-F1).
const (
	QualityFull     = "full"
	QualityDegraded = "degraded"
)
