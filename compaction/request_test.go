package compaction

import (
	"slices"
	"strings"
	"testing"
)

// TestContextIsNotARequest_RC8: editor and agent context wrappers,
// interrupt markers and another agent's command output are never the goal,
// a work item or the latest request; the user's own words next to them are.
func TestContextIsNotARequest_RC8(t *testing.T) {
	for _, tc := range []struct {
		name, msg, want string
	}{
		{"ide selection only", "<ide_selection>The user selected the lines 1 to 1115 from /repo/SPEC.md:\n# Spec\n- must do X\n</ide_selection>", ""},
		{"ide opened file then request", "<ide_opened_file>The user opened the file /repo/a.go in the IDE.</ide_opened_file>\nfix the parser in a.go", "fix the parser in a.go"},
		{"system reminder", "add tests\n<system-reminder>\nThe TodoWrite tool hasn't been used.\n</system-reminder>", "add tests"},
		{"environment context", "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>", ""},
		{"codex IDE context", "# Context from my IDE setup:\n\n## Active file: src/a.ts\n\n## Open tabs:\n- a.ts: src/a.ts\n\n## My request for Codex:\nrename the config loader", "rename the config loader"},
		{"codex IDE context only", "# Context from my IDE setup:\n\n## Active file: src/a.ts\n", ""},
		{"interrupt marker", "[Request interrupted by user]", ""},
		{"interrupt for tool use", "[Request interrupted by user for tool use]", ""},
		{"codex turn aborted", "<turn_aborted>\nThe user interrupted the previous turn on purpose.\n</turn_aborted>", ""},
		{"claude code slash command", "<command-name>/exit</command-name>\n            <command-message>exit</command-message>\n            <command-args></command-args>", ""},
		{"its output", "<local-command-stdout>See ya!</local-command-stdout>", ""},
		{"plain", "make the build pass", "make the build pass"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := userWords(tc.msg); got != tc.want {
				t.Errorf("userWords = %q, want %q", got, tc.want)
			}
		})
	}

	b := newBuilder()
	b.user("<ide_selection>The user selected the lines 1 to 1115 from /repo/SPEC.md:\n# Spec\n</ide_selection>", 10)
	b.user("<ide_opened_file>The user opened the file /repo/SPEC.md in the IDE.</ide_opened_file>\nimplement the retry rules of SPEC.md", 10)
	b.reply("Done.", 10)
	b.user("[Request interrupted by user]", 10)
	b.user("# Context from my IDE setup:\n\n## Active file: SPEC.md\n", 10)
	st := b.capsule(t)
	if st.Goal != "implement the retry rules of SPEC.md" {
		t.Errorf("goal %q", st.Goal)
	}
	all := strings.Join(append(append(slices.Clone(st.Done), st.InProgress...), st.NextSteps...), "\n")
	for _, marker := range []string{"ide_selection", "ide_opened_file", "Request interrupted", "Context from my IDE"} {
		if strings.Contains(all, marker) || strings.Contains(st.Goal, marker) {
			t.Errorf("%s taken as a request: goal %q, items %q", marker, st.Goal, all)
		}
	}
	if !slices.Equal(st.InProgress, []string{"Latest request: implement the retry rules of SPEC.md"}) {
		t.Errorf("in progress %q", st.InProgress)
	}
}

// TestConstraintsAreTheUsersRules_RC8: constraints are the user's
// imperatives, split into sentences that keep `AGENTS.md` whole; questions
// and complaints are not rules.
func TestConstraintsAreTheUsersRules_RC8(t *testing.T) {
	b := newBuilder()
	b.user("Make sure to add an AGENTS.md file with the layout. Never push to main! Why did you not keep the old API? You didn't keep the tests passing.", 10)
	st := b.capsule(t)
	want := []string{"Make sure to add an AGENTS.md file with the layout", "Never push to main!"}
	if !slices.Equal(st.Constraints, want) {
		t.Errorf("constraints %q, want %q", st.Constraints, want)
	}
}
