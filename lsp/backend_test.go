package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/soba-agent/soba-lsp/lsp/protocol"
)

// testBackend is the Backend of the integration tests: scripted, with a
// compaction that can be held open, and a record of every call.
type testBackend struct {
	factoryErr error

	// mu guards every field below.
	mu         sync.Mutex
	opts       BackendOptions
	budget     protocol.Budget
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
	// compactTitle is the title Compact's start event carries ("" none).
	compactTitle string
	release      chan struct{}
	cancelled    map[string]chan struct{}
	opSeq        int
}

func newTestBackend() *testBackend {
	return &testBackend{
		budget: protocol.Budget{
			EffectiveTokens: 1200, HardLimit: 48808, SoftLimit: 39046, ContextWindow: 65000,
			MaxOutputTokens: 8000, SafetyReserveTokens: 8192, Source: "estimated", AutoCompact: true,
			State: protocol.StateIdle,
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

func (b *testBackend) notifier() Notifier {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.opts.Notifier
}

func (b *testBackend) approver() Approver {
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

func (b *testBackend) Prompt(ctx context.Context, a protocol.PromptArgs) (protocol.PromptResult, error) {
	if err := b.record("Prompt", a); err != nil {
		return protocol.PromptResult{}, err
	}
	return protocol.PromptResult{TurnID: "turn_1", Queued: false}, nil
}

func (b *testBackend) Cancel(ctx context.Context) (protocol.CancelResult, error) {
	if err := b.record("Cancel"); err != nil {
		return protocol.CancelResult{}, err
	}
	return protocol.CancelResult{Cancelled: false, What: protocol.CancelledNone}, nil
}

func (b *testBackend) Budget(ctx context.Context) (protocol.Budget, error) {
	if err := b.record("Budget"); err != nil {
		return protocol.Budget{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.budget, nil
}

func (b *testBackend) Compact(ctx context.Context, a protocol.CompactArgs) (protocol.CompactionResult, error) {
	if err := b.record("Compact", a); err != nil {
		return protocol.CompactionResult{}, err
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
	n.Compaction(protocol.CompactionEvent{Phase: "start", OperationID: op, Trigger: protocol.TriggerUser, Title: b.compactTitle})
	outcome := protocol.OutcomeCompleted
	if slow {
		n.Compaction(protocol.CompactionEvent{Phase: "progress", OperationID: op, Trigger: protocol.TriggerUser, Message: "waiting for the summary model · 0 s"})
		n.Compaction(protocol.CompactionEvent{Phase: "progress", OperationID: op, Trigger: protocol.TriggerUser, Percentage: pct(0), Message: "waiting for the summary model · part 1 of 2 · 1 s"})
		n.Compaction(protocol.CompactionEvent{Phase: "progress", OperationID: op, Trigger: protocol.TriggerUser, Percentage: pct(50), Message: "summarizing part 2 of 2 · 640 tokens · 15 s"})
		select {
		case <-b.release:
		case <-cancelled:
			outcome = protocol.OutcomeCancelled
		case <-ctx.Done():
			outcome = protocol.OutcomeCancelled
		}
	}
	res := protocol.CompactionResult{
		OperationID: op, Trigger: protocol.TriggerUser, Outcome: outcome,
		DurationMs: time.Since(start).Milliseconds(),
	}
	if outcome == protocol.OutcomeCompleted {
		res.TokensBefore, res.TokensAfter, res.ReclaimedTokens, res.ReclaimedRatio = 45210, 14870, 30340, 0.67
		res.CheckpointID, res.Quality = "ck_8f2a1c", "full"
		res.Line = "Compacted context · user · 45,210 → 14,870 tokens (67% reclaimed) · ck_8f2a1c"
	} else {
		res.Reason = "cancelled by the user"
		res.Line = "Compaction cancelled · user"
	}
	n.Compaction(protocol.CompactionEvent{Phase: "end", OperationID: op, Trigger: protocol.TriggerUser, CompactionResult: &res})
	n.Log(res.Line)
	return res, nil
}

func (b *testBackend) SetAutoCompact(ctx context.Context, a protocol.AutoCompactArgs) (protocol.Budget, error) {
	if err := b.record("SetAutoCompact", a); err != nil {
		return protocol.Budget{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.budget.AutoCompact = a.Enabled
	return b.budget, nil
}

func (b *testBackend) Checkpoint(ctx context.Context, a protocol.CheckpointArgs) (protocol.CheckpointResult, error) {
	if err := b.record("Checkpoint", a); err != nil {
		return protocol.CheckpointResult{}, err
	}
	return protocol.CheckpointResult{CheckpointID: "ck_1"}, nil
}

func (b *testBackend) CapsuleCreate(ctx context.Context, a protocol.CapsuleCreateArgs) (protocol.CapsuleCreateResult, error) {
	if err := b.record("CapsuleCreate", a); err != nil {
		return protocol.CapsuleCreateResult{}, err
	}
	return protocol.CapsuleCreateResult{CheckpointID: "ck_2", Path: ".soba/capsules/ck_2-x.capsule.md"}, nil
}

func (b *testBackend) CapsuleExport(ctx context.Context, a protocol.CapsuleExportArgs) (protocol.CapsuleExportResult, error) {
	if err := b.record("CapsuleExport", a); err != nil {
		return protocol.CapsuleExportResult{}, err
	}
	return protocol.CapsuleExportResult{Path: a.Path}, nil
}

func (b *testBackend) CapsuleLoad(ctx context.Context, a protocol.CapsuleLoadArgs) (protocol.CapsuleLoadResult, error) {
	if err := b.record("CapsuleLoad", a); err != nil {
		return protocol.CapsuleLoadResult{}, err
	}
	return protocol.CapsuleLoadResult{CheckpointID: "ck_3", Title: "t"}, nil
}

func (b *testBackend) CapsuleList(ctx context.Context) ([]protocol.CapsuleInfo, error) {
	if err := b.record("CapsuleList"); err != nil {
		return nil, err
	}
	return nil, nil
}

func (b *testBackend) CapsuleShow(ctx context.Context, a protocol.CapsuleShowArgs) (protocol.CapsuleShowResult, error) {
	if err := b.record("CapsuleShow", a); err != nil {
		return protocol.CapsuleShowResult{}, err
	}
	return protocol.CapsuleShowResult{CheckpointID: "ck_1", Markdown: "## Goal\n"}, nil
}

func (b *testBackend) SessionInfo(ctx context.Context) (protocol.SessionInfo, error) {
	if err := b.record("SessionInfo"); err != nil {
		return protocol.SessionInfo{}, err
	}
	return protocol.SessionInfo{SessionID: "s1", Entries: 3}, nil
}

func (b *testBackend) SessionList(ctx context.Context) ([]protocol.SessionSummary, error) {
	if err := b.record("SessionList"); err != nil {
		return nil, err
	}
	return []protocol.SessionSummary{{SessionID: "s1"}}, nil
}

func (b *testBackend) SessionNew(ctx context.Context) (protocol.SessionNewResult, error) {
	if err := b.record("SessionNew"); err != nil {
		return protocol.SessionNewResult{}, err
	}
	return protocol.SessionNewResult{SessionID: "s2"}, nil
}

func (b *testBackend) SessionResume(ctx context.Context, a protocol.SessionResumeArgs) (protocol.SessionResumeResult, error) {
	if err := b.record("SessionResume", a); err != nil {
		return protocol.SessionResumeResult{}, err
	}
	return protocol.SessionResumeResult{SessionID: a.SessionID}, nil
}

func (b *testBackend) SessionRewind(ctx context.Context, a protocol.SessionRewindArgs) (protocol.SessionRewindResult, error) {
	if err := b.record("SessionRewind", a); err != nil {
		return protocol.SessionRewindResult{}, err
	}
	return protocol.SessionRewindResult{LeafID: a.EntryID}, nil
}

func (b *testBackend) SessionHistory(ctx context.Context) ([]protocol.HistoryPoint, error) {
	if err := b.record("SessionHistory"); err != nil {
		return nil, err
	}
	return []protocol.HistoryPoint{{EntryID: "e_2", Kind: protocol.HistoryUser, Text: "fix the bug", RewindTo: "e_1"}}, nil
}

func (b *testBackend) SessionTranscript(ctx context.Context, a protocol.SessionTranscriptArgs) (protocol.SessionTranscript, error) {
	if err := b.record("SessionTranscript", a); err != nil {
		return protocol.SessionTranscript{}, err
	}
	return protocol.SessionTranscript{LeafID: "e_2"}, nil
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
