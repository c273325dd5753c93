// Package capsule defines the Context Capsule: the portable working state of a
// session that replaces old history in the model input (SPEC §3), and its
// .capsule.md text form (SPEC §10, docs/capsule-format.md).
//
// It is a leaf package of plain data so that the transcript store, the
// compaction engine and the editor layer all share one definition.
package capsule

import "encoding/json"

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
	Command  string `json:"command"`
	ExitCode int    `json:"exitCode"`
	// Outcome is "passed" or "failed" (or "interrupted"), derived from ExitCode
	// when the command ran to completion.
	Outcome string `json:"outcome"`
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
