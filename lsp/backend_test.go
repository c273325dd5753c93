package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/soba-agent/soba-lsp/agent"
	"github.com/soba-agent/soba-lsp/compaction"
)

// testBackend is the Backend of the integration tests: scripted, with a
// compaction that can be held open, and a record of every call.
type testBackend struct {
	factoryErr error

	// mu guards every field below.
	mu         sync.Mutex
	opts       BackendOptions
	budget     compaction.Budget
	calls      []string
	args       []any // the argument structs of the calls that take one
	docs       []string
	configured []string
	configErr  error
	closed     int
	panicOn    string // command method name that panics
	failWith   error  // error returned by every command

	// slowCompact makes Compact emit start and progress, then wait for
	// release, its ctx, or CancelCompaction.
	slowCompact bool
	release     chan struct{}
	cancelled   map[string]chan struct{}
	opSeq       int
}

func newTestBackend() *testBackend {
	return &testBackend{
		budget: compaction.Budget{
			EffectiveTokens: 1200, HardLimit: 48808, SoftLimit: 39046, ContextWindow: 65000,
			MaxOutputTokens: 8000, SafetyReserveTokens: 8192, Source: "estimated", AutoCompact: true,
			State: compaction.StateIdle,
		},
		release:   make(chan struct{}),
		cancelled: map[string]chan struct{}{},
	}
}

func (b *testBackend) setOptions(o BackendOptions) {
	b.mu.Lock()
	b.opts = o
	b.mu.Unlock()
}

func (b *testBackend) notifier() agent.Notifier {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.opts.Notifier
}

func (b *testBackend) approver() agent.Approver {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.opts.Approver
}

func (b *testBackend) record(name string, args ...any) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, name)
	b.args = append(b.args, args...)
	if b.panicOn == name {
		panic("scripted panic in " + name)
	}
	return b.failWith
}

func (b *testBackend) Prompt(ctx context.Context, a PromptArgs) (PromptResult, error) {
	if err := b.record("Prompt", a); err != nil {
		return PromptResult{}, err
	}
	return PromptResult{TurnID: "turn_1", Queued: false}, nil
}

func (b *testBackend) Cancel(ctx context.Context) (CancelResult, error) {
	if err := b.record("Cancel"); err != nil {
		return CancelResult{}, err
	}
	return CancelResult{Cancelled: false, What: CancelledNone}, nil
}

func (b *testBackend) Budget(ctx context.Context) (compaction.Budget, error) {
	if err := b.record("Budget"); err != nil {
		return compaction.Budget{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.budget, nil
}

func (b *testBackend) Compact(ctx context.Context, a CompactArgs) (compaction.CompactionResult, error) {
	if err := b.record("Compact", a); err != nil {
		return compaction.CompactionResult{}, err
	}
	b.mu.Lock()
	b.opSeq++
	op := fmt.Sprintf("op_%d", b.opSeq)
	slow := b.slowCompact
	cancelled := make(chan struct{})
	b.cancelled[op] = cancelled
	b.mu.Unlock()

	n := b.notifier()
	pct := func(p int) *int { return &p }
	start := time.Now()
	n.Compaction(agent.CompactionEvent{Phase: "start", OperationID: op, Trigger: compaction.TriggerUser})
	outcome := compaction.OutcomeCompleted
	if slow {
		n.Compaction(agent.CompactionEvent{Phase: "progress", OperationID: op, Trigger: compaction.TriggerUser, Percentage: pct(0)})
		n.Compaction(agent.CompactionEvent{Phase: "progress", OperationID: op, Trigger: compaction.TriggerUser, Percentage: pct(50)})
		select {
		case <-b.release:
		case <-cancelled:
			outcome = compaction.OutcomeCancelled
		case <-ctx.Done():
			outcome = compaction.OutcomeCancelled
		}
	}
	res := compaction.CompactionResult{
		OperationID: op, Trigger: compaction.TriggerUser, Outcome: outcome,
		DurationMs: time.Since(start).Milliseconds(),
	}
	if outcome == compaction.OutcomeCompleted {
		res.TokensBefore, res.TokensAfter, res.ReclaimedTokens, res.ReclaimedRatio = 45210, 14870, 30340, 0.67
		res.CheckpointID, res.Quality = "ck_8f2a1c", "full"
		res.Line = "Compacted context · user · 45,210 → 14,870 tokens (67% reclaimed) · ck_8f2a1c"
	} else {
		res.Reason = "cancelled by the user"
		res.Line = "Compaction cancelled · user"
	}
	n.Compaction(agent.CompactionEvent{Phase: "end", OperationID: op, Trigger: compaction.TriggerUser, CompactionResult: &res})
	n.Log(res.Line)
	return res, nil
}

func (b *testBackend) SetAutoCompact(ctx context.Context, a AutoCompactArgs) (compaction.Budget, error) {
	if err := b.record("SetAutoCompact", a); err != nil {
		return compaction.Budget{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.budget.AutoCompact = a.Enabled
	return b.budget, nil
}

func (b *testBackend) Checkpoint(ctx context.Context, a CheckpointArgs) (CheckpointResult, error) {
	if err := b.record("Checkpoint", a); err != nil {
		return CheckpointResult{}, err
	}
	return CheckpointResult{CheckpointID: "ck_1"}, nil
}

func (b *testBackend) CapsuleCreate(ctx context.Context, a CapsuleCreateArgs) (CapsuleCreateResult, error) {
	if err := b.record("CapsuleCreate", a); err != nil {
		return CapsuleCreateResult{}, err
	}
	return CapsuleCreateResult{CheckpointID: "ck_2", Path: ".soba/capsules/ck_2-x.capsule.md"}, nil
}

func (b *testBackend) CapsuleExport(ctx context.Context, a CapsuleExportArgs) (CapsuleExportResult, error) {
	if err := b.record("CapsuleExport", a); err != nil {
		return CapsuleExportResult{}, err
	}
	return CapsuleExportResult{Path: a.Path}, nil
}

func (b *testBackend) CapsuleLoad(ctx context.Context, a CapsuleLoadArgs) (CapsuleLoadResult, error) {
	if err := b.record("CapsuleLoad", a); err != nil {
		return CapsuleLoadResult{}, err
	}
	return CapsuleLoadResult{CheckpointID: "ck_3", Title: "t"}, nil
}

func (b *testBackend) CapsuleList(ctx context.Context) ([]CapsuleInfo, error) {
	if err := b.record("CapsuleList"); err != nil {
		return nil, err
	}
	return nil, nil
}

func (b *testBackend) CapsuleShow(ctx context.Context, a CapsuleShowArgs) (CapsuleShowResult, error) {
	if err := b.record("CapsuleShow", a); err != nil {
		return CapsuleShowResult{}, err
	}
	return CapsuleShowResult{CheckpointID: "ck_1", Markdown: "## Goal\n"}, nil
}

func (b *testBackend) SessionInfo(ctx context.Context) (SessionInfo, error) {
	if err := b.record("SessionInfo"); err != nil {
		return SessionInfo{}, err
	}
	return SessionInfo{SessionID: "s1", Entries: 3}, nil
}

func (b *testBackend) SessionList(ctx context.Context) ([]SessionSummary, error) {
	if err := b.record("SessionList"); err != nil {
		return nil, err
	}
	return []SessionSummary{{SessionID: "s1"}}, nil
}

func (b *testBackend) SessionNew(ctx context.Context) (SessionNewResult, error) {
	if err := b.record("SessionNew"); err != nil {
		return SessionNewResult{}, err
	}
	return SessionNewResult{SessionID: "s2"}, nil
}

func (b *testBackend) SessionResume(ctx context.Context, a SessionResumeArgs) (SessionResumeResult, error) {
	if err := b.record("SessionResume", a); err != nil {
		return SessionResumeResult{}, err
	}
	return SessionResumeResult{SessionID: a.SessionID}, nil
}

func (b *testBackend) SessionRewind(ctx context.Context, a SessionRewindArgs) (SessionRewindResult, error) {
	if err := b.record("SessionRewind", a); err != nil {
		return SessionRewindResult{}, err
	}
	return SessionRewindResult{LeafID: a.EntryID}, nil
}

func (b *testBackend) CancelCompaction(operationID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, "CancelCompaction:"+operationID)
	ch, ok := b.cancelled[operationID]
	if !ok {
		return false
	}
	delete(b.cancelled, operationID)
	close(ch)
	return true
}

func (b *testBackend) Configure(settings json.RawMessage) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.configured = append(b.configured, string(settings))
	return b.configErr
}

func (b *testBackend) doc(kind, uri string) {
	b.mu.Lock()
	b.docs = append(b.docs, kind+" "+uri)
	b.mu.Unlock()
}

func (b *testBackend) DidOpen(uri string) { b.doc("open", uri) }
func (b *testBackend) DidChange(uri string, version int32) {
	b.doc(fmt.Sprintf("change@%d", version), uri)
}
func (b *testBackend) DidSave(uri string)  { b.doc("save", uri) }
func (b *testBackend) DidClose(uri string) { b.doc("close", uri) }

func (b *testBackend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed++
	return nil
}

func (b *testBackend) snapshot() (calls, docs, configured []string, closed int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.calls...), append([]string(nil), b.docs...),
		append([]string(nil), b.configured...), b.closed
}

var errScripted = errors.New("capsule ck_9 not found on the leaf path")
