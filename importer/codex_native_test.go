package importer

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/compaction"
)

// TestCodexReplacementHistoryIsNative_RN1: a Codex compacted line with a
// replacement_history becomes the native continuation of its capsule for
// openai-responses and the rollout's model; without one, or with no model
// known, the capsule is portable only.
func TestCodexReplacementHistoryIsNative_RN1(t *testing.T) {
	head := `{"timestamp":"2025-10-29T08:00:00.000Z","type":"session_meta","payload":{"id":"cx-native","cwd":"/p","originator":"codex_cli_rs"}}
{"timestamp":"2025-10-29T08:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Make the build pass."}]}}
`
	model := `{"timestamp":"2025-10-29T08:00:01.100Z","type":"turn_context","payload":{"cwd":"/p","model":"gpt-5-codex"}}
`
	reply := `{"timestamp":"2025-10-29T08:00:02.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Working on it."}]}}
`
	withHistory := `{"timestamp":"2025-10-29T08:01:00.000Z","type":"compacted","payload":{"message":"## Goal\nMake the build pass.","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"Make the build pass."}]},{"type":"compaction","encrypted_content":"gAAAA-codex"}]}}
`
	withoutHistory := `{"timestamp":"2025-10-29T08:01:00.000Z","type":"compacted","payload":{"message":"## Goal\nMake the build pass."}}
`
	for _, tc := range []struct {
		name, rollout string
		native        bool
	}{
		{"replacement history", head + model + reply + withHistory, true},
		{"no replacement history", head + model + reply + withoutHistory, false},
		{"no model known", head + reply + withHistory, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Convert([]byte(tc.rollout), Options{Format: FormatCodex})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, e := range res.Entries {
				if e.Capsule == nil {
					continue
				}
				found = true
				n := e.Capsule.Native
				if !tc.native {
					if n != nil {
						t.Fatalf("native %+v", n)
					}
					continue
				}
				if n == nil || n.Provider != "openai-responses" || n.Model != "gpt-5-codex" || !strings.Contains(string(n.Items), "gAAAA-codex") {
					t.Fatalf("native %+v", n)
				}
				if !strings.HasPrefix(e.Capsule.State.Goal, "Make the build pass") {
					t.Errorf("the portable capsule was not built: %+v", e.Capsule.State)
				}
			}
			if !found {
				t.Fatal("no capsule")
			}
			if res.Stats.Capsules != 1 {
				t.Errorf("stats %+v", res.Stats)
			}
		})
	}
}

// TestCodexHandoffInReplacementHistory_RM4: a compacted line without a
// message takes its summary from the handoff in its replacement history,
// and the handoff is never the user's request (R-C8).
func TestCodexHandoffInReplacementHistory_RM4(t *testing.T) {
	handoff := compaction.CodexSummaryPrefix + " Here is the summary produced by the other language model, use the information in this summary to assist with your own analysis:\n**What remains to be done (clear next steps)**\n- Open the draft PR\n"
	hist, _ := json.Marshal([]map[string]any{
		{"type": "message", "role": "user", "content": []map[string]string{{"type": "input_text", "text": "Make the build pass."}}},
		{"type": "message", "role": "user", "content": []map[string]string{{"type": "input_text", "text": handoff}}},
	})
	rollout := `{"timestamp":"2025-10-29T08:00:00.000Z","type":"session_meta","payload":{"id":"cx-handoff","cwd":"/p","originator":"codex_cli_rs"}}
{"timestamp":"2025-10-29T08:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"Make the build pass."}]}}
{"timestamp":"2025-10-29T08:00:02.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Working on it."}]}}
{"timestamp":"2025-10-29T08:01:00.000Z","type":"compacted","payload":{"message":"","replacement_history":` + string(hist) + `}}
`
	res, err := Convert([]byte(rollout), Options{Format: FormatCodex})
	if err != nil {
		t.Fatal(err)
	}
	var st *capsule.State
	for _, e := range res.Entries {
		if e.Capsule != nil {
			st = &e.Capsule.State
		}
	}
	if st == nil {
		t.Fatal("no capsule")
	}
	if !slices.Contains(st.NextSteps, "Open the draft PR") {
		t.Errorf("next steps %q: the handoff was not read", st.NextSteps)
	}
	for _, item := range slices.Concat([]string{st.Goal}, st.InProgress, st.NextSteps, st.Notes) {
		if strings.Contains(item, "Another language model") {
			t.Errorf("the handoff's prefix is in the capsule: %q", item)
		}
	}
}
