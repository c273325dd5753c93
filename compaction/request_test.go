package compaction

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/tool"
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
		{"codex handoff summary", CodexSummaryPrefix + " Use this to build on the work. Here is the summary produced by the other language model, use the information in this summary to assist with your own analysis:\n- Added the check", ""},
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

// TestBlockersDropWhatWasResolved_RC8: a failed edit followed by a
// successful edit of the same file is no blocker; nor is a failure of an
// earlier turn; a failure in the final turn is.
func TestBlockersDropWhatWasResolved_RC8(t *testing.T) {
	edit := func(b *builder, path string, ok bool, content string) {
		b.calls++
		id := "call_e" + string(rune('a'+b.calls))
		b.add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{ToolCalls: []session.ToolCall{{ID: id, Name: tool.EditFile, Arguments: json.RawMessage(`{"path":"` + path + `"}`)}}}}, 10)
		var art *session.Artifacts
		if ok {
			art = &session.Artifacts{FilesModified: []string{path}}
		}
		b.result(id, tool.EditFile, ok, content, 10, art)
	}
	for _, tc := range []struct {
		name  string
		build func(b *builder)
		want  []string
	}{
		{"fixed by a later edit", func(b *builder) {
			edit(b, "a.go", false, "old_text not found in a.go")
			edit(b, "a.go", true, "ok")
		}, nil},
		{"another file still failing", func(b *builder) {
			edit(b, "a.go", false, "old_text not found in a.go")
			edit(b, "b.go", true, "ok")
		}, []string{"`edit_file` failed: old_text not found in a.go"}},
		{"an earlier turn", func(b *builder) {
			edit(b, "a.go", false, "old_text not found in a.go")
			b.reply("I could not edit a.go; moving on.", 10)
			b.user("now update the docs", 10)
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			b.user("fix a.go", 10)
			tc.build(b)
			if st := b.capsule(t); !slices.Equal(st.Blockers, tc.want) {
				t.Errorf("blockers %q, want %q", st.Blockers, tc.want)
			}
		})
	}
}

// TestDenialIsADecision_RC6: a write the user denied is not modified and
// not a failure: it is the user's decision.
func TestDenialIsADecision_RC6(t *testing.T) {
	b := newBuilder()
	b.user("rewrite the config loader", 10)
	b.add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{ToolCalls: []session.ToolCall{{ID: "c1", Name: tool.WriteFile, Arguments: json.RawMessage(`{"path":"config.go","content":"x"}`)}}}}, 10)
	b.result("c1", tool.WriteFile, false, "denied: the user did not allow this write_file call", 10, nil)
	st := b.capsule(t)
	if len(st.FilesModified) != 0 || len(st.Blockers) != 0 {
		t.Errorf("files modified %q, blockers %q", st.FilesModified, st.Blockers)
	}
	if len(st.Decisions) != 1 || st.Decisions[0].Decision != "The user denied `write_file` on `config.go`" {
		t.Errorf("decisions %+v", st.Decisions)
	}
}

// TestLastReplyKeptWhole_RC1: the model's last reply is kept whole up to a
// bound, so a list it announced is not cut after its first line.
func TestLastReplyKeptWhole_RC1(t *testing.T) {
	b := newBuilder()
	b.user("what fails?", 10)
	b.reply("Three tests fail. Let me enumerate them before fixing:\n1. TestA\n2. TestB\n3. TestC", 10)
	st := b.capsule(t)
	if !slices.Contains(st.Notes, "Last reply: Three tests fail. Let me enumerate them before fixing:\n1. TestA\n2. TestB\n3. TestC") {
		t.Errorf("notes %q", st.Notes)
	}
}

// TestRollDropsResolvedSteps_RC8: a step carried from the previous capsule
// is dropped once what happened since resolved it: its check ran, or all the
// files it names were changed.
func TestRollDropsResolvedSteps_RC8(t *testing.T) {
	prev := capsule.State{NextSteps: []string{
		"Update ALL imports in `src/main.ts` and `src/modes/rpc.ts`",
		"Run `npm run check` to verify",
		"Test via `npx tsx src/cli.ts`",
		"Write the changelog",
	}}
	next := capsule.State{
		FilesModified: []string{"packages/agent/src/main.ts", "packages/agent/src/modes/rpc.ts"},
		Verification:  []capsule.Verification{{Command: "npm run check", ExitCode: 2, Outcome: OutcomeFailedCmd}},
	}
	rolled := Roll(prev, next)
	want := []string{"Test via `npx tsx src/cli.ts`", "Write the changelog"}
	if !slices.Equal(rolled.NextSteps, want) {
		t.Errorf("next steps %q, want %q", rolled.NextSteps, want)
	}
}

// TestNotesBoundedWithCount_RC7: a roll keeps the first notes (layout,
// branch) and the newest within the bound, and says how many it left out.
func TestNotesBoundedWithCount_RC7(t *testing.T) {
	var prev capsule.State
	prev.Notes = append(prev.Notes, "Branch: refactor", "Layout: src/core, src/modes")
	for i := range 60 {
		prev.Notes = append(prev.Notes, "finding "+strconv.Itoa(i))
	}
	rolled := Roll(prev, capsule.State{Notes: []string{"newest finding"}})
	if len(rolled.Notes) != maxNotes || rolled.Notes[0] != "Branch: refactor" || rolled.Notes[1] != "Layout: src/core, src/modes" ||
		rolled.Notes[len(rolled.Notes)-1] != "newest finding" {
		t.Fatalf("notes %q", rolled.Notes)
	}
	if !slices.Contains(rolled.Notes, "… 24 more notes are in the transcript") {
		t.Errorf("the notes left out are not counted: %q", rolled.Notes)
	}
	again := Roll(rolled, capsule.State{Notes: []string{"one more"}})
	n := 0
	for _, x := range again.Notes {
		if strings.HasSuffix(x, "more notes are in the transcript") {
			n++
		}
	}
	if n != 1 || len(again.Notes) != maxNotes || !slices.Contains(again.Notes, "… 25 more notes are in the transcript") {
		t.Errorf("rolled twice: %d count notes in %d notes: %q", n, len(again.Notes), again.Notes)
	}
}

// TestFinalPlanIsInProgressAndPending_RC1: the last todo list or plan the
// model wrote gives In progress and Pending, in each agent's format.
func TestFinalPlanIsInProgressAndPending_RC1(t *testing.T) {
	for _, tc := range []struct{ name, args string }{
		{"TodoWrite", `{"todos":[{"content":"Extend the struct","status":"completed","activeForm":"x"},{"content":"Fix the test fixture","status":"in_progress"},{"content":"Update the docs","status":"pending"}]}`},
		{"todowrite", `{"todos":[{"content":"Extend the struct","status":"completed","priority":"high"},{"content":"Fix the test fixture","status":"in_progress"},{"content":"Update the docs","status":"pending"}]}`},
		{"update_plan", `{"plan":[{"step":"Extend the struct","status":"completed"},{"step":"Fix the test fixture","status":"in_progress"},{"step":"Update the docs","status":"pending"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			b.user("finish the attribution work", 10)
			b.add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{ToolCalls: []session.ToolCall{{ID: "p0", Name: tc.name, Arguments: json.RawMessage(`{"todos":[{"content":"Old item","status":"pending"}],"plan":[]}`)}}}}, 10)
			b.add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{ToolCalls: []session.ToolCall{{ID: "p1", Name: tc.name, Arguments: json.RawMessage(tc.args)}}}}, 10)
			st := b.capsule(t)
			if !slices.Equal(st.InProgress, []string{"Latest request: finish the attribution work", "Fix the test fixture"}) || !slices.Equal(st.Pending, []string{"Update the docs"}) {
				t.Errorf("in progress %q, pending %q", st.InProgress, st.Pending)
			}
		})
	}
}

// TestPastedTextIsNotAConstraint_RC8: text the user pastes — a review comment
// after "fix this:", a specification with headings — is not the user's rule.
func TestPastedTextIsNotAConstraint_RC8(t *testing.T) {
	review := "can you look at the changes and tell me what it takes to fix this:\n\n" +
		"The humanModified calculation uses min(a, b). This must never subtract self-modifications from the agent's lines, " +
		"and callers should not rely on it. Without this conversion, the per-file tracking data will be lost when session state is saved."
	spec := "Implement this spec. Never touch the public API.\n# Spec\nThe server must always answer.\n## Limits\nRequests must not exceed 1 MB.\n"
	b := newBuilder()
	b.user(review, 10)
	b.user(spec, 10)
	st := b.capsule(t)
	if !slices.Equal(st.Constraints, []string{"Never touch the public API"}) {
		t.Errorf("constraints %q", st.Constraints)
	}
	if !strings.Contains(st.Goal, "humanModified") {
		t.Errorf("the goal lost what to fix: %q", st.Goal)
	}
}

// TestGoalIsWhatTheUserAskedFor_RC8: the goal is the first request without
// its leading reading steps, amended by later "also …"/"now …" requests.
func TestGoalIsWhatTheUserAskedFor_RC8(t *testing.T) {
	b := newBuilder()
	b.user("read packages/coding-agent/docs/theme.md in full, then theme.ts. we still need to port over user-message-selector.ts based on the patterns you find.", 10)
	b.reply("Ported.", 10)
	b.user("also add a test for it", 10)
	b.user("looks good", 10)
	st := b.capsule(t)
	want := "we still need to port over user-message-selector.ts based on the patterns you find. Also: add a test for it"
	if st.Goal != want {
		t.Errorf("goal %q\nwant %q", st.Goal, want)
	}
}
