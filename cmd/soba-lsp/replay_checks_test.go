package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/agent"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/session"
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

// withSkillActivations is the recording sample with an activate_skill call
// added to the tool batch of the assistant entries at the given indexes
// among those calling tools (the first such batch from there on that the
// turn goes on after), its recorded result (the skill's body) after the
// batch's results: skills activated in the middle of turns, turns apart.
func withSkillActivations(t *testing.T, sample []byte, at map[int]string) []byte {
	t.Helper()
	var lines []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(sample), []byte("\n")) {
		var e map[string]any
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, e)
	}
	var out []map[string]any
	batch, pending := 0, ""
	for i := 0; i < len(lines); i++ {
		e := lines[i]
		out = append(out, e)
		a, _ := e["assistant"].(map[string]any)
		calls, _ := a["toolCalls"].([]any)
		if e["type"] != "assistant" || len(calls) == 0 {
			continue
		}
		if name, ok := at[batch]; ok {
			pending = name
		}
		batch++
		end := i + 1
		for end < len(lines) && lines[end]["type"] == "tool_result" {
			end++
		}
		if pending == "" || end >= len(lines) || lines[end]["type"] != "assistant" {
			continue
		}
		callID := fmt.Sprintf("call_skill_%d", batch)
		a["toolCalls"] = append(calls, map[string]any{"id": callID, "name": "activate_skill", "arguments": map[string]any{"name": pending}})
		out = append(out, lines[i+1:end]...)
		body := replaySkillBody(pending)
		res := map[string]any{"id": "skill" + callID, "parentId": lines[end-1]["id"], "type": "tool_result",
			"timestamp": lines[end-1]["timestamp"], "tokens": len(body)/4 + 8,
			"toolResult": map[string]any{"toolCallId": callID, "toolName": "activate_skill", "ok": true, "content": body,
				"artifacts": map[string]any{"skill": pending}}}
		out = append(out, res)
		lines[end]["parentId"] = res["id"]
		i, pending = end-1, ""
	}
	var b bytes.Buffer
	for _, e := range out {
		l, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// replaySkillBody is the body of a skill withSkillActivations activates.
func replaySkillBody(name string) string {
	return "Instructions of " + name + ": " + strings.Repeat("keep handlers small and test each error path; ", 30) + "done."
}

// TestReplayRequestsExtendTheirTurn: over the built-in sample, every model
// request of a turn after the first repeats the request before it byte for
// byte (system prompt, tools, capsule, messages) and appends to it, except
// when a compaction ran between them — at the default window (compactions
// between turns) and at a small one (compactions inside turns too). Also
// with skills activated in the middle of turns, turns apart: an activation
// leaves the system prompt alone (the skill's body is in its tool result),
// and the next capsule lists the skill (R-C1).
func TestReplayRequestsExtendTheirTurn(t *testing.T) {
	activations := map[int]string{5: "error-handling", 40: "http-tests", 90: "error-handling"}
	recordings := []struct {
		name   string
		data   []byte
		skills []string
	}{
		{"sample", sampleJSONL, nil},
		{"sample activating skills", withSkillActivations(t, sampleJSONL, activations), []string{"error-handling", "http-tests"}},
	}
	tests := []struct {
		name        string
		window      int
		wantRenewed bool
	}{
		{"default window", 0, false},
		{"context window 30000", 30000, true},
	}
	for _, rec := range recordings {
		for _, tt := range tests {
			t.Run(rec.name+", "+tt.name, func(t *testing.T) {
				recording := filepath.Join(t.TempDir(), "sample-recording.jsonl")
				if err := os.WriteFile(recording, rec.data, 0o644); err != nil {
					t.Fatal(err)
				}
				ws := t.TempDir()
				root, err := workspace.NewRoot(ws)
				if err != nil {
					t.Fatal(err)
				}
				for _, name := range rec.skills {
					dir := filepath.Join(ws, ".soba", "skills", name)
					if err := os.MkdirAll(dir, 0o755); err != nil {
						t.Fatal(err)
					}
					md := "---\nname: " + name + "\ndescription: how the project does " + name + "\n---\n" + replaySkillBody(name) + "\n"
					if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil {
						t.Fatal(err)
					}
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
				if len(rec.skills) > 0 {
					listed := replayCapsuleSkills(t, rep.SessionPath)
					if !slices.Equal(listed, rec.skills) {
						t.Errorf("the newest capsule lists skills %v, want %v", listed, rec.skills)
					}
				}
				t.Logf("%d requests: %d extended, %d after a compaction, %d broken", rep.Requests, rep.PrefixExtended, rep.PrefixRenewed, rep.PrefixBroken)
			})
		}
	}
}

// replayCapsuleSkills are the active skills the newest capsule of the
// session at path lists.
func replayCapsuleSkills(t *testing.T, path string) []string {
	t.Helper()
	s, _, err := session.Open(path, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var skills []string
	for _, n := range s.Path() {
		if n.Type != session.TypeCapsule {
			continue
		}
		e, err := s.Load(n.ID)
		if err != nil {
			t.Fatal(err)
		}
		skills = e.Capsule.State.ActiveSkills
	}
	return skills
}
