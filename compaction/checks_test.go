package compaction

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/tool"
)

func TestCheckOf(t *testing.T) {
	for _, tc := range []struct {
		cmd, check string
		filtered   bool
	}{
		{"go test ./...", "go test ./...", false},
		{"  go   test  ./... ", "go test ./...", false},
		{"npm run check 2>&1", "npm run check", false},
		{"npm run check > out.txt 2>&1", "npm run check", false},
		{"cd pkg && npm run check 2>&1 | tail -20", "cd pkg && npm run check", true},
		{`cd pkg && npm run check 2>&1 | grep -E "(error|success)" | head -20`, "cd pkg && npm run check", true},
		{`npm run check 2>&1 | grep "error TS" | wc -l`, "npm run check", true},
		{"go test ./... |& tee log.txt", "go test ./...", true},
		{"make; echo $?", "make", true},
		{`make && echo "exit: $?"`, "make", true},
		{"go test ./... || true", "go test ./...", true},
		{"go test ./... 2>&1 | tail -5 || true", "go test ./...", true},
		{"go test ./... | tail -20; true", "go test ./...", true},
		{"go test ./... | grep -v ok; make lint", "go test ./... | grep -v ok; make lint", false}, // make lint is a check: judged as the last one
		{"npm test | tee out.log; exit 0", "npm test", true},
		{"go test ./... &", "go test ./...", true},
		{"go test ./...;", "go test ./...", false},
		{"cd pkg; go test ./... | tail -5", "cd pkg; go test ./...", true},
		{"cd pkg && go test ./... 2>&1 | tail -5 && echo ok", "cd pkg && go test ./...", true},
		{"go build ./... && go test ./...", "go build ./... && go test ./...", false},
		{"go test ./... > out.txt 2>&1 &", "go test ./...", true},
		{"go vet ./... | xargs -n1 echo", "go vet ./... | xargs -n1 echo", false},
		{`go test -run 'A|B' ./...`, `go test -run 'A|B' ./...`, false},
		{`go test -run "A|B" ./... | tail -3`, `go test -run "A|B" ./...`, true},
		{`grep -r foo . | wc -l`, `grep -r foo .`, true},
	} {
		check, filtered := CheckOf(tc.cmd)
		if check != tc.check || filtered != tc.filtered {
			t.Errorf("CheckOf(%q) = %q, %v; want %q, %v", tc.cmd, check, filtered, tc.check, tc.filtered)
		}
	}
}

// TestVerificationOneLinePerCheck_RC2: runs of one check with their output
// filtered are one Verification line, and only a run whose exit status is
// the check's own says in Done or Blockers whether it passes (R-C2: the
// verification commands with their last outcome). The pi session this
// comes from listed a dozen `npm run check … | grep …` variants as passing
// next to `npm run check` failing.
func TestVerificationOneLinePerCheck_RC2(t *testing.T) {
	b := newBuilder()
	b.user("make the type check pass", 10)
	b.bash("cd pkg && npm run check", 1, 10)
	b.bash("cd pkg && npm run check 2>&1 | tail -5", 0, 10)
	b.bash(`cd pkg && npm run check 2>&1 | grep "error TS" | wc -l`, 0, 10)
	b.bash("go vet ./... | tail -3", 0, 10)
	st := b.capsule(t)
	want := []capsule.Verification{
		{Command: "cd pkg && npm run check", ExitCode: 1, Outcome: OutcomeFailedCmd},
		{Command: "go vet ./... | tail -3", ExitCode: 0, Outcome: OutcomePassed},
	}
	if !slices.Equal(st.Verification, want) {
		t.Fatalf("verification %+v\nwant %+v", st.Verification, want)
	}
	if !slices.Equal(st.Blockers, []string{"`cd pkg && npm run check` fails"}) {
		t.Errorf("blockers %q", st.Blockers)
	}
	for _, d := range st.Done {
		if d == "`go vet ./... | tail -3` passes" {
			t.Errorf("done claims a filtered run passes: %q", st.Done)
		}
	}

	// A later run of the check itself decides, and rolling resolves the
	// blocker (R-M4).
	b2 := newBuilder()
	b2.bash("cd pkg && npm run check 2>&1", 0, 10)
	next := b2.capsule(t)
	rolled := Roll(st, next)
	if len(rolled.Blockers) != 0 {
		t.Errorf("blockers after the check passed: %q", rolled.Blockers)
	}
	if len(rolled.Verification) != 2 || rolled.Verification[1].Command != "cd pkg && npm run check 2>&1" || rolled.Verification[1].Outcome != OutcomePassed {
		t.Errorf("rolled verification %+v", rolled.Verification)
	}
}

// TestAgentCommandsAreNotRequests_RC1: a user message that is a command to
// another agent (`/mode`, `/theme dark`) is not the goal or a piece of work;
// it stays among the user's words.
func TestAgentCommandsAreNotRequests_RC1(t *testing.T) {
	b := newBuilder()
	b.user("/mode", 10)
	b.user("Fix the theme loader so invalid themes never crash", 10)
	b.reply("Fixed.", 10)
	b.user("/theme dark", 10)
	b.user("/usr/share/themes is missing on this machine", 10)
	st := b.capsule(t)
	if st.Goal != "Fix the theme loader so invalid themes never crash" {
		t.Errorf("goal %q", st.Goal)
	}
	if !slices.Equal(st.InProgress, []string{"Latest request: /usr/share/themes is missing on this machine"}) {
		t.Errorf("in progress %q", st.InProgress)
	}
	for _, d := range st.Done {
		if d == "Worked on: /theme dark" || d == "Worked on: /mode" {
			t.Errorf("done lists an agent command: %q", st.Done)
		}
	}
	if !slices.Contains(st.UserMessages, "/mode") || !slices.Contains(st.UserMessages, "/theme dark") {
		t.Errorf("user messages %q lost the commands", st.UserMessages)
	}
}

// TestPipefailRunsAreConclusive_RC2: SOBA's bash tool runs with pipefail, so
// a filtered pipeline that exited 0 passed every stage: it counts as a pass
// of the check itself (and resolves the check's failure), while the same
// run from a shell without pipefail, or a failing one, proves nothing.
func TestPipefailRunsAreConclusive_RC2(t *testing.T) {
	run := func(b *builder, cmd string, exit int, pipefail bool) {
		b.calls++
		id := "call_pf" + string(rune('a'+b.calls))
		b.add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{ToolCalls: []session.ToolCall{{ID: id, Name: tool.Bash, Arguments: json.RawMessage(`{}`)}}}}, 10)
		code := exit
		b.result(id, tool.Bash, exit == 0, "out", 10, &session.Artifacts{Command: cmd, ExitCode: &code, Pipefail: pipefail})
	}
	for _, tc := range []struct {
		name     string
		pipefail bool
		exit     int
		want     []capsule.Verification
		blockers []string
	}{
		{"pipefail, passed", true, 0, []capsule.Verification{{Command: "go test ./...", ExitCode: 0, Outcome: OutcomePassed}}, nil},
		{"pipefail, failed: grep may have found nothing", true, 1,
			[]capsule.Verification{{Command: "go test ./...", ExitCode: 1, Outcome: OutcomeFailedCmd}}, []string{"`go test ./...` fails"}},
		{"no pipefail", false, 0,
			[]capsule.Verification{{Command: "go test ./...", ExitCode: 1, Outcome: OutcomeFailedCmd}}, []string{"`go test ./...` fails"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			b.user("fix the tests", 10)
			run(b, "go test ./...", 1, tc.pipefail)
			run(b, "go test ./... 2>&1 | tail -5", tc.exit, tc.pipefail)
			st := b.capsule(t)
			if !slices.Equal(st.Verification, tc.want) {
				t.Errorf("verification %+v, want %+v", st.Verification, tc.want)
			}
			if !slices.Equal(st.Blockers, tc.blockers) {
				t.Errorf("blockers %q, want %q", st.Blockers, tc.blockers)
			}
		})
	}
	// A failing run, then the same check with its status masked: still failing.
	b := newBuilder()
	run(b, "go test ./...", 1, true)
	run(b, "go test ./... 2>&1 | tail -5 || true", 0, true)
	st := b.capsule(t)
	if want := []capsule.Verification{{Command: "go test ./...", ExitCode: 1, Outcome: OutcomeFailedCmd}}; !slices.Equal(st.Verification, want) {
		t.Errorf("masked run: verification %+v, want %+v", st.Verification, want)
	}
	if !slices.Equal(st.Blockers, []string{"`go test ./...` fails"}) {
		t.Errorf("masked run: blockers %q", st.Blockers)
	}
	for _, cmd := range []string{"make; echo $?", "go test ./... 2>&1 | tail -5 || true", "go test ./... | tail -20; true", "npm test | tee out.log; exit 0"} {
		if got := recordedCommand(cmd, 0, true); got != cmd {
			t.Errorf("%q: a masked exit status is not made conclusive by pipefail: recorded as %q", cmd, got)
		}
	}
}
