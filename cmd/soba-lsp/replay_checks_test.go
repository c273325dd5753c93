package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/agent"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/workspace"
)

// fixedSummarizer stands in for a summary model: it answers every request
// with the same short summary, as a model that writes tersely would.
type fixedSummarizer struct{ answer string }

func (f fixedSummarizer) Summarize(ctx context.Context, req compaction.SummaryRequest, delta func(string)) (string, error) {
	if !strings.Contains(req.Prompt, "orders") {
		// The history must reach the model: a summary of nothing would
		// make the test prove nothing.
		return "", compaction.ErrUnusableSummary
	}
	return f.answer, nil
}

// TestReplayWastesNoSummary_RR1_RR2: over the built-in sample, no soft
// compaction generates a capsule (asks the summary model) that the exact
// check then declines, with and without a summary model, and at least as
// many compactions complete as before the prediction existed (4 of 7
// barriers, 3 of them generated and then declined).
func TestReplayWastesNoSummary_RR1_RR2(t *testing.T) {
	recording := filepath.Join(t.TempDir(), "sample-recording.jsonl")
	if err := os.WriteFile(recording, sampleJSONL, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		summarizer compaction.Summarizer
	}{
		{"deterministic capsules", nil},
		{"a summary model", fixedSummarizer{answer: "## Goal\nKeep the orders service correct\n## Done\n- fixed the order handlers and their tests\n## Next steps\n- continue with the next request\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			root, err := workspace.NewRoot(ws)
			if err != nil {
				t.Fatal(err)
			}
			counter := newCounter()
			rep, err := agent.Replay(context.Background(), recording, agent.ReplayOptions{Workspace: ws, Compaction: compaction.DefaultConfig(),
				Counter: counter, EntryTokens: entryTokens(counter), Resolver: root, Out: io.Discard, Summarizer: tt.summarizer})
			if err != nil {
				t.Fatal(err)
			}
			if rep.WastedGenerations != 0 {
				t.Errorf("%d compactions generated a capsule and were then declined, want 0", rep.WastedGenerations)
			}
			if rep.Compactions < 4 {
				t.Errorf("%d compactions completed, want at least the 4 completed before the prediction", rep.Compactions)
			}
			if rep.Barriers <= rep.Compactions {
				t.Errorf("%d barriers ran for %d compactions: the sample should exercise the prediction's decline", rep.Barriers, rep.Compactions)
			}
			if tt.summarizer != nil && rep.SummaryRequests != rep.Compactions {
				t.Errorf("%d summary requests for %d completed compactions: a request was thrown away", rep.SummaryRequests, rep.Compactions)
			}
			t.Logf("%d barriers, %d completed, %d wasted, %d summary requests", rep.Barriers, rep.Compactions, rep.WastedGenerations, rep.SummaryRequests)
		})
	}
}

// TestReplayRequestsExtendTheirTurn: over the built-in sample, every model
// request of a turn after the first repeats the request before it byte for
// byte (system prompt, tools, capsule, messages) and appends to it, except
// when a compaction ran between them — at the default window (compactions
// between turns) and at a small one (compactions inside turns too).
func TestReplayRequestsExtendTheirTurn(t *testing.T) {
	recording := filepath.Join(t.TempDir(), "sample-recording.jsonl")
	if err := os.WriteFile(recording, sampleJSONL, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		window      int
		wantRenewed bool
	}{
		{"default window", 0, false},
		{"context window 30000", 30000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			root, err := workspace.NewRoot(ws)
			if err != nil {
				t.Fatal(err)
			}
			cfg := compaction.DefaultConfig()
			if tt.window > 0 {
				cfg = withWindow(cfg, tt.window, io.Discard)
			}
			counter := newCounter()
			rep, err := agent.Replay(context.Background(), recording, agent.ReplayOptions{Workspace: ws, Compaction: cfg,
				Counter: counter, EntryTokens: entryTokens(counter), Resolver: root, Out: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			if rep.PrefixBroken != 0 {
				t.Errorf("%d requests changed an earlier part of the request before them", rep.PrefixBroken)
			}
			if rep.PrefixExtended < rep.Requests/2 {
				t.Errorf("only %d of %d requests extended the one before: the sample should have long turns", rep.PrefixExtended, rep.Requests)
			}
			if (rep.PrefixRenewed > 0) != tt.wantRenewed {
				t.Errorf("%d requests followed a compaction inside their turn, want some: %v", rep.PrefixRenewed, tt.wantRenewed)
			}
			t.Logf("%d requests: %d extended, %d after a compaction, %d broken", rep.Requests, rep.PrefixExtended, rep.PrefixRenewed, rep.PrefixBroken)
		})
	}
}
