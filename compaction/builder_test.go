package compaction

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/capsule"
)

// TestChatterIsNotWork_RC1: acknowledgements ("ok", "wow") are not pieces of
// work, and the latest request is the last real one, with what followed it.
func TestChatterIsNotWork_RC1(t *testing.T) {
	b := newBuilder()
	b.user("Propose a plan to split the parser into lexer and parser packages", 10)
	b.reply("Here is the plan: …", 10)
	b.user("ok", 10)
	b.reply("Starting.", 10)
	b.user("wow", 10)
	st := b.capsule(t)
	for _, d := range st.Done {
		if strings.HasSuffix(d, ": ok") || strings.HasSuffix(d, ": wow") {
			t.Errorf("done lists chatter: %q", st.Done)
		}
	}
	want := `Latest request: Propose a plan to split the parser into lexer and parser packages (then: "ok", "wow")`
	if !slices.Equal(st.InProgress, []string{want}) {
		t.Errorf("in progress %q, want %q", st.InProgress, want)
	}
	if !slices.Contains(st.UserMessages, "ok") {
		t.Errorf("user messages %q lost the chatter", st.UserMessages)
	}
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"ok", true}, {"yes please", true}, {"wow!", true}, {"ls", true},
		{"ok, create a branch refactor", false}, {"are we all committed?", false}, {"fix\nit", false},
	} {
		if got := isChatter(tc.text); got != tc.want {
			t.Errorf("isChatter(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

// TestRollDropsStaleToolFailuresAndReplies_RM4: rolling keeps what the
// previous capsule knew, but a tool failure from before it (the work went
// on) is no longer a blocker, and only the newest "Last reply" note stays;
// failing checks and other blockers carry over.
func TestRollDropsStaleToolFailuresAndReplies_RM4(t *testing.T) {
	prev := capsule.State{
		Blockers: []string{"`edit_file` failed: old text not found", "`go test ./...` fails", "waiting for the API key", "build failed: missing go.sum entry"},
		Notes:    []string{"Last reply: first", "the CI runs on Fridays"},
	}
	next := capsule.State{Blockers: []string{"`bash` failed: permission denied"}, Notes: []string{"Last reply: second"}}
	got := Roll(prev, next)
	if want := []string{"`go test ./...` fails", "waiting for the API key", "build failed: missing go.sum entry", "`bash` failed: permission denied"}; !slices.Equal(got.Blockers, want) {
		t.Errorf("blockers %q, want %q", got.Blockers, want)
	}
	if want := []string{"the CI runs on Fridays", "Last reply: second"}; !slices.Equal(got.Notes, want) {
		t.Errorf("notes %q, want %q", got.Notes, want)
	}
	// Without a newer reply, the old one stays.
	if got := Roll(prev, capsule.State{}); !slices.Contains(got.Notes, "Last reply: first") {
		t.Errorf("notes %q dropped the only reply", got.Notes)
	}
}

// TestConstraintsAreTheUsersOwnWords_RC1: a rule is taken from what the
// user wrote, not from what they pasted: fenced code, quoted lines and
// error messages carrying machine ids hold "must" and "never" too.
func TestConstraintsAreTheUsersOwnWords_RC1(t *testing.T) {
	b := newBuilder()
	b.user("Fix the stream handling. Never drop a tool result.\n```\npanic: value must not be nil\n```\n> the API must be called twice\n"+
		"The API says: ids were found without tool_result blocks, must answer toolu_019tYDrbzifrra2KYzmYqWvk first", 10)
	st := b.capsule(t)
	if want := []string{"Never drop a tool result"}; !slices.Equal(st.Constraints, want) {
		t.Errorf("constraints %q, want %q", st.Constraints, want)
	}
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"answer toolu_019tYDrbzifrra2KYzmYqWvk first", true},
		{"keep request ids like req-7f3a9c2e41b04d5e8a1 out of logs", true},
		{"never touch internationalization_settings", false}, // letters only
		{"keep 2026-12-02 as the date", false},
	} {
		if got := hasOpaqueID(tc.s); got != tc.want {
			t.Errorf("hasOpaqueID(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}

// TestSummaryPrompt_RC1_RM4: the summary request carries the previous
// capsule to roll forward (R-M4), the history, the user's focus, the part
// of a long history, and every section heading in order with what goes
// under it (R-C1); artifacts are left to the engine.
func TestSummaryPrompt_RC1_RM4(t *testing.T) {
	prev := capsule.State{Goal: "ship the parser", Constraints: []string{"no new dependencies"}}
	p := SummaryPrompt(SummaryPromptOptions{Previous: &prev, History: "user: add a lexer", Instructions: "  keep test names ", Part: 2, Parts: 3})
	for _, want := range []string{
		"<previous-capsule>\n", "ship the parser", "no new dependencies", "</previous-capsule>",
		"<history>\nuser: add a lexer\n</history>",
		"Focus of this compaction, as the user asked: keep test names\n",
		"this is part 2 of 3",
		"Do not list files read or modified, commands run or skills",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
	at := -1
	for _, s := range summarySections {
		i := strings.Index(p, "\n## "+s+"\n")
		if i <= at {
			t.Fatalf("heading %q missing or out of order:\n%s", s, p)
		}
		at = i
		if g := sectionGuide[s]; g == "" || !strings.Contains(p, "- "+s+": "+g) {
			t.Errorf("no guidance for %q", s)
		}
	}
	bare := SummaryPrompt(SummaryPromptOptions{History: "h"})
	if strings.Contains(bare, "<previous-capsule>") || strings.Contains(bare, "Focus of this compaction") || strings.Contains(bare, "comes in parts") {
		t.Errorf("a first, single-part, unfocused prompt mentions what it does not have:\n%s", bare)
	}
}

// TestRollKeepsRecentTurnItems_RM4: rolled capsules keep every milestone and
// passing check, but only the newest turn items ("Answered: …"), so a long
// session's Done is not a list of old questions.
func TestRollKeepsRecentTurnItems_RM4(t *testing.T) {
	var prev capsule.State
	for i := range 20 {
		prev.Done = append(prev.Done, answered+"question "+string(rune('a'+i)))
	}
	prev.Done = append(prev.Done, "Milestone: lexer done", "`go test ./...` passes")
	next := capsule.State{Done: []string{workedOn + "the parser", "Milestone: parser done"}}
	got := Roll(prev, next).Done
	turns := 0
	for _, d := range got {
		if isTurnItem(d) {
			turns++
		}
	}
	if turns != maxTurnItems {
		t.Errorf("%d turn items kept, want %d: %q", turns, maxTurnItems, got)
	}
	for _, want := range []string{"Milestone: lexer done", "`go test ./...` passes", "Milestone: parser done", workedOn + "the parser", answered + "question t"} {
		if !slices.Contains(got, want) {
			t.Errorf("rolled done lost %q: %q", want, got)
		}
	}
	if slices.Contains(got, answered+"question a") {
		t.Errorf("the oldest question survived: %q", got)
	}
}

// TestConstraintsAlikeOnAllCores_RC1: a history long enough to be read on
// all cores yields the constraints one core finds, in the same order (the
// runs' findings are joined in message order before duplicates fold).
func TestConstraintsAlikeOnAllCores_RC1(t *testing.T) {
	rules := []string{"Never push to main.", "Keep the public API stable.", "Do not touch vendor/.",
		"Always run the tests first.", "Use at most two dependencies.", "never push to main"}
	var users []string
	for i := range 3 * parallelConstraintsFrom {
		u := fmt.Sprintf("Step %d: rename the handler in file%d.go.", i, i)
		if i%37 == 0 {
			u += " " + rules[(i/37)%len(rules)]
		}
		if i%101 == 0 {
			u += fmt.Sprintf(" You must keep test %d green.", i)
		}
		users = append(users, u)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	one := constraintsFrom(users)
	for _, procs := range []int{2, 3, 8} {
		runtime.GOMAXPROCS(procs)
		if got := constraintsFrom(users); !slices.Equal(got, one) {
			t.Fatalf("on %d cores: %q\non one: %q", procs, got, one)
		}
	}
	if len(one) < 5 {
		t.Fatalf("only %d constraints found: %q", len(one), one)
	}
}

// TestDoneHoldsOnlyWorkWithEvidence_RC1: a request the assistant only
// answered is no Done item (it stays in User messages); a turn that changed
// files is "Worked on: … (N file changes)"; an older capsule's "Answered: …"
// items do not survive a roll.
func TestDoneHoldsOnlyWorkWithEvidence_RC1(t *testing.T) {
	b := newBuilder()
	b.user("what does the footer do?", 10)
	b.reply("It shows the budget.", 10)
	b.user("rename the config loader", 10)
	b.edit("config/loader.go", 10)
	b.reply("Renamed.", 10)
	st, err := BuildDeterministic(b.es, 0, len(b.es), nil, Extras{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(st.Done, isAnswered) {
		t.Errorf("Done has an answered request: %q", st.Done)
	}
	if !slices.Contains(st.Done, "Worked on: rename the config loader (1 file change)") {
		t.Errorf("Done lacks the turn that changed a file: %q", st.Done)
	}
	if !slices.ContainsFunc(st.UserMessages, func(m string) bool { return strings.Contains(m, "what does the footer do?") }) {
		t.Errorf("User messages lack the answered request: %q", st.UserMessages)
	}
	prev := capsule.State{Done: []string{"Answered: remove the nord.json", "Milestone: lexer done"}}
	rolled, err := BuildDeterministic(b.es, 0, len(b.es), &prev, Extras{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(rolled.Done, isAnswered) || !slices.Contains(rolled.Done, "Milestone: lexer done") {
		t.Errorf("rolled Done = %q, want the milestone and no answered item", rolled.Done)
	}
}

// TestDoneNeverCarriesContradictedPass_RC5: a capsule of a Claude Code
// session said "`mise run test` passed before 1 later edit"; the runs after
// it failed. Rolled into the next capsule, Done must not keep the pass.
func TestDoneNeverCarriesContradictedPass_RC5(t *testing.T) {
	prev := capsule.State{
		Done:         []string{"`mise run test` passed before 1 later edit", "`mise run lint` passed before 2 later edits"},
		Verification: []capsule.Verification{{Command: "mise run test", Outcome: OutcomePassed}, {Command: "mise run lint", Outcome: OutcomePassed}},
	}
	next := capsule.State{
		Verification: []capsule.Verification{{Command: "mise run test", ExitCode: 1, Outcome: OutcomeFailedCmd}},
	}
	got := Roll(prev, next)
	if slices.Contains(got.Done, "`mise run test` passed before 1 later edit") {
		t.Errorf("Done keeps a pass the later run contradicts: %q", got.Done)
	}
	// A pass no later run contradicts stays, stale as it was.
	if !slices.Contains(got.Done, "`mise run lint` passed before 2 later edits") {
		t.Errorf("Done lost an uncontradicted pass: %q", got.Done)
	}
}
