package app

import (
	"context"

	"github.com/soba-agent/soba-lsp/agent"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/lsp"
	"github.com/soba-agent/soba-lsp/lsp/protocol"
)

// The agent and the engine report plain values of their own; these map them
// onto PROTOCOL.md's wire types (lsp/protocol), the one place where the two
// meet.

// WireBudget is a Budget on the wire: pending is never null.
func WireBudget(b compaction.Budget) protocol.Budget {
	w := protocol.Budget{
		EffectiveTokens: b.EffectiveTokens, HardLimit: b.HardLimit, SoftLimit: b.SoftLimit,
		ContextWindow: b.ContextWindow, MaxOutputTokens: b.MaxOutputTokens, SafetyReserveTokens: b.SafetyReserveTokens,
		Source: protocol.Source(b.Source), AutoCompact: b.AutoCompact, State: protocol.State(b.State),
		Pending: make([]protocol.Trigger, len(b.Pending)), CachedTokens: b.CachedTokens,
		Display:                   protocol.BudgetDisplay(b.EffectiveTokens, b.HardLimit),
		RepositorySettingsIgnored: b.RepositorySettingsIgnored,
	}
	for i, t := range b.Pending {
		w.Pending[i] = protocol.Trigger(t)
	}
	if b.LastCompaction != nil {
		r := WireResult(*b.LastCompaction)
		w.LastCompaction = &r
	}
	return w
}

// WireResult is a CompactionResult on the wire.
func WireResult(r compaction.CompactionResult) protocol.CompactionResult {
	return protocol.CompactionResult{
		OperationID: r.OperationID, Trigger: protocol.Trigger(r.Trigger), Outcome: protocol.Outcome(r.Outcome),
		TokensBefore: r.TokensBefore, TokensAfter: r.TokensAfter, ReclaimedTokens: r.ReclaimedTokens,
		ReclaimedRatio: r.ReclaimedRatio, CheckpointID: r.CheckpointID, Quality: protocol.Quality(r.Quality),
		DurationMs: r.DurationMs, Reason: r.Reason, Line: r.Line,
	}
}

// wireEvent is an agent stream item on the wire.
func wireEvent(e agent.Event) protocol.Event {
	return protocol.Event{TurnID: e.TurnID, Type: protocol.EventType(e.Type), Delta: e.Delta, Moved: e.Moved, ID: e.ID, Name: e.Name,
		Arguments: e.Arguments, OK: e.OK, Summary: e.Summary, FilesRead: e.FilesRead, FilesModified: e.FilesModified,
		Outcome: protocol.TurnOutcome(e.Outcome), Error: e.Error}
}

// wireCompactionEvent is a compaction phase on the wire.
func wireCompactionEvent(e agent.CompactionEvent) protocol.CompactionEvent {
	w := protocol.CompactionEvent{Phase: protocol.Phase(e.Phase), OperationID: e.OperationID,
		Trigger: protocol.Trigger(e.Trigger), Percentage: e.Percentage, Title: e.Title, Message: e.Message, ElapsedMs: e.ElapsedMs}
	if e.CompactionResult != nil {
		r := WireResult(*e.CompactionResult)
		w.CompactionResult = &r
	}
	return w
}

// wireNotifier is the agent's Notifier over the front end's.
type wireNotifier struct{ n lsp.Notifier }

func (w wireNotifier) Event(e agent.Event)        { w.n.Event(wireEvent(e)) }
func (w wireNotifier) Budget(b compaction.Budget) { w.n.Budget(WireBudget(b)) }
func (w wireNotifier) Compaction(e agent.CompactionEvent) {
	if e.Phase == "summary" { // the streamed summary is ACP's; progress messages carry its size
		return
	}
	w.n.Compaction(wireCompactionEvent(e))
}
func (w wireNotifier) Log(message string)  { w.n.Log(message) }
func (w wireNotifier) Warn(message string) { w.n.Warn(message) }

// wireApprover is the agent's Approver over the front end's.
type wireApprover struct{ a lsp.Approver }

func (w wireApprover) Approve(ctx context.Context, req agent.ApprovalRequest) (agent.Approval, error) {
	d, err := w.a.Approve(ctx, lsp.ApprovalRequest{Tool: req.Tool, Summary: req.Summary, Path: req.Path, Proposed: req.Proposed, Scope: req.Scope, EveryTime: req.EveryTime, Why: req.Why})
	switch d {
	case lsp.AllowOnce:
		return agent.AllowOnce, err
	case lsp.AllowSession:
		return agent.AllowSession, err
	}
	return agent.Deny, err
}
