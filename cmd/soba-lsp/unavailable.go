package main

// TEMPORARY: this whole file goes away when the agent's backend is wired
// into newBackend (serve.go). It lets soba-lsp start, initialize, answer
// soba.budget with the default budget and fail every other command clearly,
// so editors and the conformance test can talk to a real binary meanwhile.

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/lsp"
)

var errUnavailable = errors.New("not available yet: this soba-lsp build has no agent backend")

type unavailableBackend struct{}

func newUnavailableBackend(context.Context, lsp.BackendOptions) (lsp.Backend, error) {
	return unavailableBackend{}, nil
}

// Budget answers the defaults of SPEC §6 with the default model window:
// hard limit 65000 − 8000 − 8192 = 48808 (R-G4), soft limit 39046 (R-S2).
func (unavailableBackend) Budget(context.Context) (compaction.Budget, error) {
	return compaction.Budget{
		EffectiveTokens: 0, HardLimit: 48808, SoftLimit: 39046, ContextWindow: 65000,
		MaxOutputTokens: 8000, SafetyReserveTokens: 8192, Source: "estimated", AutoCompact: true,
		Pending: []string{}, State: compaction.StateIdle,
	}, nil
}

func (unavailableBackend) Prompt(context.Context, lsp.PromptArgs) (lsp.PromptResult, error) {
	return lsp.PromptResult{}, errUnavailable
}
func (unavailableBackend) Cancel(context.Context) (lsp.CancelResult, error) {
	return lsp.CancelResult{What: lsp.CancelledNone}, nil
}
func (unavailableBackend) Compact(context.Context, lsp.CompactArgs) (compaction.CompactionResult, error) {
	return compaction.CompactionResult{}, errUnavailable
}
func (unavailableBackend) SetAutoCompact(context.Context, lsp.AutoCompactArgs) (compaction.Budget, error) {
	return compaction.Budget{}, errUnavailable
}
func (unavailableBackend) Checkpoint(context.Context, lsp.CheckpointArgs) (lsp.CheckpointResult, error) {
	return lsp.CheckpointResult{}, errUnavailable
}
func (unavailableBackend) CapsuleCreate(context.Context, lsp.CapsuleCreateArgs) (lsp.CapsuleCreateResult, error) {
	return lsp.CapsuleCreateResult{}, errUnavailable
}
func (unavailableBackend) CapsuleExport(context.Context, lsp.CapsuleExportArgs) (lsp.CapsuleExportResult, error) {
	return lsp.CapsuleExportResult{}, errUnavailable
}
func (unavailableBackend) CapsuleLoad(context.Context, lsp.CapsuleLoadArgs) (lsp.CapsuleLoadResult, error) {
	return lsp.CapsuleLoadResult{}, errUnavailable
}
func (unavailableBackend) CapsuleList(context.Context) ([]lsp.CapsuleInfo, error) {
	return nil, errUnavailable
}
func (unavailableBackend) CapsuleShow(context.Context, lsp.CapsuleShowArgs) (lsp.CapsuleShowResult, error) {
	return lsp.CapsuleShowResult{}, errUnavailable
}
func (unavailableBackend) SessionInfo(context.Context) (lsp.SessionInfo, error) {
	return lsp.SessionInfo{}, errUnavailable
}
func (unavailableBackend) SessionList(context.Context) ([]lsp.SessionSummary, error) {
	return nil, errUnavailable
}
func (unavailableBackend) SessionNew(context.Context) (lsp.SessionNewResult, error) {
	return lsp.SessionNewResult{}, errUnavailable
}
func (unavailableBackend) SessionResume(context.Context, lsp.SessionResumeArgs) (lsp.SessionResumeResult, error) {
	return lsp.SessionResumeResult{}, errUnavailable
}
func (unavailableBackend) SessionRewind(context.Context, lsp.SessionRewindArgs) (lsp.SessionRewindResult, error) {
	return lsp.SessionRewindResult{}, errUnavailable
}
func (unavailableBackend) CancelCompaction(string) bool    { return false }
func (unavailableBackend) Configure(json.RawMessage) error { return nil }
func (unavailableBackend) DidOpen(string)                  {}
func (unavailableBackend) DidChange(string, int32)         {}
func (unavailableBackend) DidSave(string)                  {}
func (unavailableBackend) DidClose(string)                 {}
func (unavailableBackend) Close() error                    { return nil }
