package importer

import (
	"strings"
	"testing"
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
