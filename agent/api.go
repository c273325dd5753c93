// Package agent runs SOBA's turn loop: prompts, inferences behind the
// preflight compaction barrier, tool calls, approvals and skills.
package agent

import (
	"context"
	"encoding/json"

	"github.com/soba-agent/soba-lsp/compaction"
)

// Event is one item of the agent's stream (PROTOCOL.md `soba/event`).
// Type is one of turn_start, text, tool_call, tool_result, turn_end, queued.
type Event struct {
	TurnID    string          `json:"turnId"`
	Type      string          `json:"type"`
	Delta     string          `json:"delta,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	OK        *bool           `json:"ok,omitempty"`
	Summary   string          `json:"summary,omitempty"`
	Outcome   string          `json:"outcome,omitempty"`
	Error     string          `json:"error,omitempty"`
}

// CompactionEvent is a `soba/compaction` notification: phase start, progress
// or end; on end the CompactionResult fields are filled.
type CompactionEvent struct {
	Phase       string `json:"phase"`
	OperationID string `json:"operationId"`
	Trigger     string `json:"trigger"`
	Percentage  *int   `json:"percentage,omitempty"`
	*compaction.CompactionResult
}

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
	Approve(ctx context.Context, tool string, summary string) (Approval, error)
}
