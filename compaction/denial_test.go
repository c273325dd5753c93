package compaction

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/tool"
)

// TestForeignDenialIsADecision_RC6: a call the user refused — as SOBA, Claude Code,
// Codex or opencode records it — is a Decision naming what was refused,
// never a blocker, a failed check or a modified file.
func TestForeignDenialIsADecision_RC6(t *testing.T) {
	for _, tc := range []struct {
		name, tool, args, content, want string
	}{
		{"soba write", tool.WriteFile, `{"path":"x.go","content":"y"}`, "denied: the user did not allow this write_file call", "The user denied `write_file` on `x.go`"},
		{"claude code edit", tool.EditFile, `{"path":"a.go","old_text":"a","new_text":"b"}`,
			"The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed.",
			"The user denied `edit_file` on `a.go`"},
		{"codex command", tool.Bash, `{"command":"npm run publish"}`, "exec command rejected by user", "The user denied `bash`: `npm run publish`"},
		{"codex patch", tool.EditFile, `{"path":"b.go"}`, "patch rejected by user", "The user denied `edit_file` on `b.go`"},
		{"opencode", tool.Bash, `{"command":"git push"}`, "The user rejected permission to use this specific tool call. You may try again with different parameters.", "The user denied `bash`: `git push`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			b.user("ship it", 10)
			b.add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{ToolCalls: []session.ToolCall{{ID: "c1", Name: tc.tool, Arguments: json.RawMessage(tc.args)}}}}, 10)
			b.result("c1", tc.tool, false, tc.content, 10, nil)
			st := b.capsule(t)
			if !slices.ContainsFunc(st.Decisions, func(d capsule.Decision) bool { return d.Decision == tc.want }) {
				t.Errorf("decisions %+v, want %q", st.Decisions, tc.want)
			}
			if len(st.Blockers) != 0 || len(st.Verification) != 0 || len(st.FilesModified) != 0 {
				t.Errorf("a denial counted as what happened: blockers %q verification %+v modified %q", st.Blockers, st.Verification, st.FilesModified)
			}
		})
	}
	if IsDenial("edit_file: old_text not found in a.go") || IsDenial("Exit code 1\nnpm error denied") {
		t.Error("a failure taken for a denial")
	}
}
