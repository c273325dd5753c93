package compaction

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/tool"
)

// TestCheckIdentity_RC5: a check is what it runs and where, read from the
// command line's syntax tree: output filters, redirections, wrappers and
// status echoes are not part of it; `cd X &&`, `cd X;`, `-C X`, `--prefix
// X` name its directory; filtered says the line's status is not the
// check's own.
func TestCheckIdentity_RC5(t *testing.T) {
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
		{`make && echo "exit: $?"`, "make", false}, // a failing make fails the line
		{"go test ./... || true", "go test ./...", true},
		{"go test ./... 2>&1 | tail -5 || true", "go test ./...", true},
		{"go test ./... | tail -20; true", "go test ./...", true},
		{"go test ./... | grep -v ok; make lint", "make lint", false}, // the line's status is make lint's
		{"npm test | tee out.log; exit 0", "npm test", true},
		{"go test ./... &", "go test ./...", true},
		{"go test ./...;", "go test ./...", false},
		{"cd pkg; go test ./... | tail -5", "cd pkg && go test ./...", true},
		{"cd pkg && go test ./... 2>&1 | tail -5 && echo ok", "cd pkg && go test ./...", true},
		{"go build ./... && go test ./...", "go build ./...", false}, // each check of the chain is its own
		{"cd pkg && go build ./... && go test ./...", "cd pkg && go build ./...", false},
		{"go test ./... > out.txt 2>&1 &", "go test ./...", true},
		{"go vet ./... | xargs -n1 echo", "go vet ./...", true},
		{`go test -run 'A|B' ./...`, `go test -run 'A|B' ./...`, false},
		{`go test -run "A|B" ./... | tail -3`, `go test -run "A|B" ./...`, true},
		{"make -C pkg test", "cd pkg && make test", false},
		{"npm --prefix pkg run check", "cd pkg && npm run check", false},
		{"cd a && cd b && npm test", "cd a/b && npm test", false},
		{"cd ./pkg/ && npm test", "cd pkg && npm test", false},
		{"timeout 300 go test ./...", "go test ./...", false},
		{"CI=1 npx vitest run", "npx vitest run", false},
		{"set -o pipefail; go test ./... | tail -5", "go test ./...", true},
		{`bash -lc "cd web && npm test | tail -3"`, "cd web && npm test", true},
		{"pnpm --filter api test", "pnpm --filter api test", false},
		{"docker build -t x .", "docker build -t x .", false},
		{"! go test ./...", "go test ./...", true},
		// Not checks: the line comes back with its blanks collapsed.
		{`rg --files | rg "config|vitest|test"`, `rg --files | rg "config|vitest|test"`, false},
		{`git add a.ts && git commit -m "vitest config and go test fixes"`, `git add a.ts && git commit -m "vitest config and go test fixes"`, false},
		{`grep -r foo . | wc -l`, `grep -r foo . | wc -l`, false},
		{"echo go test ./...", "echo go test ./...", false},
	} {
		check, filtered := CheckOf(tc.cmd)
		if check != tc.check || filtered != tc.filtered {
			t.Errorf("CheckOf(%q) = %q, %v; want %q, %v", tc.cmd, check, filtered, tc.check, tc.filtered)
		}
	}
}

// TestCheckKinds_RC5: the table of check kinds and consequential commands.
func TestCheckKinds_RC5(t *testing.T) {
	for cmd, want := range map[string]cmdKind{
		"go test ./...": kindCheck, "go vet ./...": kindCheck, "go build ./...": kindCheck, "gofmt -l .": kindCheck,
		"npm test": kindCheck, "npm run check": kindCheck, "npm run type-check": kindCheck, "pnpm typecheck": kindCheck,
		"pnpm --filter api test": kindCheck, "pnpm -F web run build": kindCheck, "yarn workspace web test": kindCheck,
		"bun test": kindCheck, "bun run lint": kindCheck, "npm run test:unit": kindCheck, "npm run check-types": kindCheck,
		"turbo run test": kindCheck, "turbo build": kindCheck, "nx run-many -t test": kindCheck, "nx run app:lint": kindCheck,
		"npx tsc --noEmit": kindCheck, "npx vitest run": kindCheck, "pytest -q": kindCheck, "python -m pytest": kindCheck,
		"tox": kindCheck, "cargo test": kindCheck, "cargo clippy": kindCheck, "cargo fmt --check": kindCheck,
		"make": kindCheck, "make test": kindCheck, "make check": kindCheck, "mvn verify": kindCheck, "./gradlew test": kindCheck,
		"mise run test": kindCheck, "mise run lint": kindCheck, "mise run fmt": kindNone,
		"docker build .": kindCheck, "docker compose build": kindCheck, "prettier --check .": kindCheck, "ruff check .": kindCheck,
		"npm publish": kindConsequential, "npm run publish": kindConsequential, "pnpm run release": kindConsequential,
		"git push origin main": kindConsequential, `git commit -m "x"`: kindConsequential, "cargo publish": kindConsequential,
		"npx prisma migrate deploy": kindNone, // npx runs prisma: a migration…
		"prisma migrate deploy":     kindConsequential,
		"gh pr merge 12 --squash":   kindConsequential,
		"npm run lint:fix":          kindNone, "npm install": kindNone, "npm run dev": kindNone, "prettier --write .": kindNone,
		"cargo fmt": kindNone, "gofmt -w .": kindNone, "go run .": kindNone, "git status": kindNone, "ls -la": kindNone,
		"cat go.mod": kindNone, "echo testing": kindNone, "rg test": kindNone, "docker run x": kindNone, "make clean": kindNone,
	} {
		words := parseShell(cmd).cmds
		got := kindNone
		if len(words) > 0 {
			got = words[0].kind
		}
		if cmd == "npx prisma migrate deploy" {
			// npx hands its words to the tool it runs.
			if got != kindConsequential {
				t.Errorf("%q: kind %v, want consequential", cmd, got)
			}
			continue
		}
		if got != want {
			t.Errorf("%q: kind %v, want %v", cmd, got, want)
		}
	}
}

// TestVerificationStates_RC5: a run is passed or failed only when the line's
// status is the check's own; a filtered or masked run is inconclusive unless
// its output carries the tool's failure text; an interrupted run says so.
func TestVerificationStates_RC5(t *testing.T) {
	zero, one, two := 0, 1, 2
	for _, tc := range []struct {
		name, cmd string
		exit      *int
		pipefail  bool
		output    string
		want      string
	}{
		{"own pass", "npm run check", &zero, false, "", OutcomePassed},
		{"own failure", "npm run check", &two, false, "", OutcomeFailedCmd},
		{"piped, exit 0", "npm run check 2>&1 | tail -5", &zero, false, "done", OutcomeInconclusive},
		{"piped, npm error in output", "npm run check 2>&1 | tail -5", &zero, false, "npm error command failed\nnpm error code 2", OutcomeFailedCmd},
		{"piped, TS errors", "npx tsc --noEmit | head -20", &zero, false, "src/a.ts(3,1): error TS2304: Cannot find name 'x'.", OutcomeFailedCmd},
		{"masked by || true", "go test ./... || true", &zero, false, "ok", OutcomeInconclusive},
		{"masked, go FAIL", "go test ./... || true", &zero, false, "--- FAIL: TestX (0.00s)\nFAIL", OutcomeFailedCmd},
		{"echo $?", "make; echo $?", &zero, false, "2", OutcomeInconclusive},
		{"pipefail pass", "go test ./... | tail -5", &zero, true, "ok", OutcomePassed},
		{"pipefail, tail cannot fail", "go test ./... | tail -5", &one, true, "", OutcomeFailedCmd},
		{"pipefail, grep may find nothing", "go test ./... | grep FAIL", &one, true, "", OutcomeInconclusive},
		{"interrupted", "npm test", nil, false, "", OutcomeInterrupted},
		{"bun 0 fail is no failure", "bun test | tail -3", &zero, false, " 12 pass\n 0 fail", OutcomeInconclusive},
		{"bun failures", "bun test | tail -3", &zero, false, " 11 pass\n 1 fail", OutcomeFailedCmd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := outcomesOf(tc.cmd, tc.exit, tc.pipefail, tc.output)
			if len(rs) != 1 {
				t.Fatalf("%d checks in %q", len(rs), tc.cmd)
			}
			if rs[0].outcome != tc.want {
				t.Errorf("outcome %q (note %q), want %q", rs[0].outcome, rs[0].note, tc.want)
			}
			if tc.want == OutcomeInconclusive && !strings.Contains(rs[0].detail, "the exit status was") {
				t.Errorf("an inconclusive run does not say why: detail %q", rs[0].detail)
			}
			// A line shows an exit status only when it is the check's own.
			v := capsule.Verification{Command: rs[0].group.display, ExitCode: rs[0].exit, Outcome: rs[0].outcome}
			if tc.exit != nil && *tc.exit == 0 && rs[0].outcome == OutcomeFailedCmd && v.ShowsExit() {
				t.Errorf("failed with exit 0 shown: %+v", v)
			}
			if rs[0].outcome == OutcomeInconclusive && rs[0].exit != -1 {
				t.Errorf("inconclusive run keeps the filter's exit %d", rs[0].exit)
			}
		})
	}
}

// TestLatestConclusiveRunWins_RC5: the last outcome is that of the latest
// conclusive run: a check that failed once and passed later passes, with no
// blocker; a later filtered run neither clears nor claims anything.
func TestLatestConclusiveRunWins_RC5(t *testing.T) {
	for _, tc := range []struct {
		name     string
		runs     []string // "exit cmd"
		want     string
		blockers int
	}{
		{"fail then pass", []string{"2 npm run check", "0 npm run check"}, OutcomePassed, 0},
		{"fail, then passes filtered", []string{"2 npm run check", "0 npm run check 2>&1 | tail -3", "0 npm run check | grep error"}, OutcomeInconclusive, 0},
		{"pass, then filtered", []string{"0 npm run check", "0 npm run check 2>&1 | tail -3"}, OutcomePassed, 0},
		{"fail, filtered, fail", []string{"2 npm run check", "0 npm run check | tail", "1 npm run check"}, OutcomeFailedCmd, 1},
		{"a chain that failed makes an earlier pass unknown", []string{"0 npm test", "1 npm test && npm run lint"}, OutcomeInconclusive, 1},
		{"a failed chain resolved by its checks", []string{"1 npm test && npm run lint", "0 npm test", "0 npm run lint"}, OutcomePassed, 0},
		{"a failed chain, then filtered runs: unknown, no blocker", []string{"1 npm test && npm run lint", "0 npm test | tail", "0 npm run lint | tail"}, OutcomeInconclusive, 0},
		{"a chain that passed passes each", []string{"1 npm test", "0 npm run lint && npm test"}, OutcomePassed, 0},
		{"pass then fail", []string{"0 npm run check", "2 npm run check"}, OutcomeFailedCmd, 1},
		{"under cd and -C", []string{"2 cd web && npm run check", "0 npm --prefix web run check"}, OutcomePassed, 0},
		{"only filtered", []string{"0 npm run check | tail"}, OutcomeInconclusive, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			b.user("make the checks pass", 10)
			for _, r := range tc.runs {
				exit, cmd, _ := strings.Cut(r, " ")
				b.bash(cmd, int(exit[0]-'0'), 10)
			}
			st := b.capsule(t)
			_, first, _ := strings.Cut(tc.runs[0], " ")
			check, _ := CheckOf(first)
			i := slices.IndexFunc(st.Verification, func(v capsule.Verification) bool { return v.Command == check })
			if i < 0 || st.Verification[i].Outcome != tc.want {
				t.Fatalf("verification %+v, want %q %s", st.Verification, check, tc.want)
			}
			if len(st.Blockers) != tc.blockers {
				t.Errorf("blockers %q, want %d", st.Blockers, tc.blockers)
			}
		})
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
		{Command: "cd pkg && npm run check", ExitCode: -1, Outcome: OutcomeInconclusive, Detail: "the exit status was `grep`'s"},
		{Command: "go vet ./...", ExitCode: -1, Outcome: OutcomeInconclusive, Detail: "the exit status was `tail`'s"},
	}
	if !slices.Equal(st.Verification, want) {
		t.Fatalf("verification %+v\nwant %+v", st.Verification, want)
	}
	// Neither "fails" (the filtered runs showed no failure) nor "passes".
	if len(st.Blockers) != 0 {
		t.Errorf("blockers %q", st.Blockers)
	}
	if !slices.Contains(st.NextSteps, "Run `cd pkg && npm run check` with its own exit status: it failed, and later runs hid theirs") {
		t.Errorf("next steps %q", st.NextSteps)
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
	if len(rolled.Blockers) != 0 || len(rolled.NextSteps) != 0 && strings.Contains(rolled.NextSteps[0], "npm run check") {
		t.Errorf("blockers after the check passed: %q", rolled.Blockers)
	}
	if len(rolled.Verification) != 2 || rolled.Verification[1].Command != "cd pkg && npm run check" || rolled.Verification[1].Outcome != OutcomePassed {
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
		{"no pipefail: the failure may be fixed, unknown", false, 0,
			[]capsule.Verification{{Command: "go test ./...", ExitCode: -1, Outcome: OutcomeInconclusive, Detail: "the exit status was `tail`'s"}}, nil},
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
	// A failing run, then the same check with its status masked and no
	// failure text: the failure may be fixed; neither failed nor passed.
	b := newBuilder()
	run(b, "go test ./...", 1, true)
	run(b, "go test ./... 2>&1 | tail -5 || true", 0, true)
	st := b.capsule(t)
	if want := []capsule.Verification{{Command: "go test ./...", ExitCode: -1, Outcome: OutcomeInconclusive, Detail: "the exit status was hidden by `|| true`"}}; !slices.Equal(st.Verification, want) {
		t.Errorf("masked run: verification %+v, want %+v", st.Verification, want)
	}
	if len(st.Blockers) != 0 {
		t.Errorf("masked run: blockers %q", st.Blockers)
	}
	if !slices.ContainsFunc(st.Notes, func(n string) bool {
		return strings.Contains(n, "failed (exit 1), then ran 1 time with its status hidden")
	}) {
		t.Errorf("masked run: notes %q do not say the check failed before", st.Notes)
	}
	for _, cmd := range []string{"make; echo $?", "go test ./... 2>&1 | tail -5 || true", "go test ./... | tail -20; true", "npm test | tee out.log; exit 0"} {
		zero := 0
		if rs := outcomesOf(cmd, &zero, true, "ok"); len(rs) != 1 || rs[0].outcome != OutcomeInconclusive {
			t.Errorf("%q: a masked exit status is not made conclusive by pipefail: %+v", cmd, rs)
		}
	}
}

// TestRollKeepsAnUnsureCheckUnsure_RC5: a check that passed before the
// previous capsule, then failed and ran only filtered, is not "passed"
// after a roll (R-M4, R-C5).
func TestRollKeepsAnUnsureCheckUnsure_RC5(t *testing.T) {
	b := newBuilder()
	b.bash("npm run check", 0, 10)
	prev := b.capsule(t)
	b3 := newBuilder()
	b3.add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{ToolCalls: []session.ToolCall{{ID: "c1", Name: tool.Bash, Arguments: json.RawMessage(`{}`)}}}}, 10)
	zero := 0
	b3.result("c1", tool.Bash, true, "src/a.ts(1,1): error TS2307: Cannot find module './x.js'", 10, &session.Artifacts{Command: "npm run check 2>&1 | grep error", ExitCode: &zero})
	b3.add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{ToolCalls: []session.ToolCall{{ID: "c2", Name: tool.Bash, Arguments: json.RawMessage(`{}`)}}}}, 10)
	b3.result("c2", tool.Bash, true, "done", 10, &session.Artifacts{Command: "npm run check 2>&1 | tail -3", ExitCode: &zero})
	next := b3.capsule(t)
	rolled := Roll(prev, next)
	if len(rolled.Verification) != 1 || rolled.Verification[0].Outcome != OutcomeInconclusive {
		t.Errorf("rolled verification %+v, want npm run check inconclusive", rolled.Verification)
	}
}

// TestInterruptedRunKeepsWhatWasKnown_RC5: an interrupted run between a
// failure and filtered runs does not make the failure forgotten.
func TestInterruptedRunKeepsWhatWasKnown_RC5(t *testing.T) {
	b := newBuilder()
	b.user("fix the check", 10)
	b.bash("npm run check", 2, 10)
	b.bash("npm run check | tail", 0, 10)
	b.add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{ToolCalls: []session.ToolCall{{ID: "ci", Name: tool.Bash, Arguments: json.RawMessage(`{}`)}}}}, 10)
	b.result("ci", tool.Bash, false, "Command aborted", 10, &session.Artifacts{Command: "npm run check | tail"})
	b.bash("npm run check | tail", 0, 10)
	st := b.capsule(t)
	if len(st.Verification) != 1 || st.Verification[0].Outcome != OutcomeInconclusive {
		t.Errorf("verification %+v", st.Verification)
	}
	if !slices.Contains(st.NextSteps, "Run `npm run check` with its own exit status: it failed, and later runs hid theirs") {
		t.Errorf("the failure before the interrupted run is forgotten: next steps %q", st.NextSteps)
	}
}

// TestStalePass_RC5: a check whose last pass is older than later edits is
// not said to pass: Done and the notes say it passed before them.
func TestStalePass_RC5(t *testing.T) {
	b := newBuilder()
	b.user("fix the parser", 10)
	b.bash("go test ./...", 0, 10)
	for i := range 3 {
		id := fmt.Sprintf("e%d", i)
		b.add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{ToolCalls: []session.ToolCall{{ID: id, Name: tool.EditFile, Arguments: json.RawMessage(`{"path":"p.go"}`)}}}}, 10)
		b.result(id, tool.EditFile, true, "ok", 10, &session.Artifacts{FilesModified: []string{"p.go"}})
	}
	st := b.capsule(t)
	if slices.Contains(st.Done, "`go test ./...` passes") || !slices.Contains(st.Done, "`go test ./...` passed before 3 later edits") {
		t.Errorf("done %q", st.Done)
	}
	if !slices.Contains(st.Notes, "Verification: `go test ./...` is stale: passed before 3 later edits") {
		t.Errorf("notes %q", st.Notes)
	}
}

// TestRollDropsPassesNoLongerTrue_RC5: "`X` passes" from the previous
// capsule goes when X failed since, or passed before later edits.
func TestRollDropsPassesNoLongerTrue_RC5(t *testing.T) {
	prev := capsule.State{
		Done:         []string{"`go test ./...` passes", "`make lint` passes"},
		Verification: []capsule.Verification{{Command: "go test ./...", Outcome: OutcomePassed}, {Command: "make lint", Outcome: OutcomePassed}},
	}
	next := capsule.State{
		Done:         []string{"`make lint` passed before 2 later edits"},
		Verification: []capsule.Verification{{Command: "go test ./...", ExitCode: 1, Outcome: OutcomeFailedCmd}, {Command: "make lint", Outcome: OutcomePassed}},
	}
	rolled := Roll(prev, next)
	if !slices.Equal(rolled.Done, []string{"`make lint` passed before 2 later edits"}) {
		t.Errorf("done %q", rolled.Done)
	}
}

// TestConsequentialFailureIsABlocker_RC5: a failed publish or a commit its
// hook refused is a blocker until the same command succeeds; another
// command's success does not clear it; "nothing to commit" is no failure.
func TestConsequentialFailureIsABlocker_RC5(t *testing.T) {
	run := func(b *builder, cmd string, exit int, out string) {
		b.calls++
		id := fmt.Sprintf("cq%d", b.calls)
		b.add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{ToolCalls: []session.ToolCall{{ID: id, Name: tool.Bash, Arguments: json.RawMessage(`{}`)}}}}, 10)
		code := exit
		b.result(id, tool.Bash, exit == 0, out, 10, &session.Artifacts{Command: cmd, ExitCode: &code})
	}
	b := newBuilder()
	b.user("commit and publish", 10)
	run(b, `git commit -m "feat: x"`, 1, "husky - pre-commit hook exited with code 1 (error)")
	run(b, "git push origin main", 0, "")
	run(b, "npm run publish", 1, "npm error code E403\nnpm error 403 Forbidden")
	st := b.capsule(t)
	want := []string{"`git commit -m \"feat: x\"` failed (exit 1): husky - pre-commit hook exited with code 1 (error)", "`npm run publish` failed (exit 1): npm error code E403"}
	if !slices.Equal(st.Blockers, want) {
		t.Errorf("blockers %q\nwant %q", st.Blockers, want)
	}
	run(b, `git commit -m "feat: x, hook fixed"`, 0, "")
	run(b, "git commit -am wip", 1, "nothing to commit, working tree clean")
	st = b.capsule(t)
	if !slices.Equal(st.Blockers, want[1:]) {
		t.Errorf("after the commit succeeded: blockers %q", st.Blockers)
	}
}

// TestNestedStepIsAttributedToTheCommandThatRan_RC5: a check that failed
// inside another command (npm's lifecycle scripts) is the Verification line
// of the command that ran, with its own exit status and the step; a later
// successful run of that command clears it.
func TestNestedStepIsAttributedToTheCommandThatRan_RC5(t *testing.T) {
	out := "> pi-monorepo@0.0.2 prepublishOnly\n> npm run clean && npm run build && npm run check\n" +
		"npm error Lifecycle script `build` failed with error:\nnpm error code 1\n\nCommand exited with code 1"
	b := newBuilder()
	b.user("publish", 10)
	b.bashOut("npm run publish", 1, out)
	st := b.capsule(t)
	want := []capsule.Verification{{Command: "npm run publish", ExitCode: 1, Outcome: OutcomeFailedCmd, Detail: "in its `npm run build` step"}}
	if !slices.Equal(st.Verification, want) {
		t.Errorf("verification %+v, want %+v", st.Verification, want)
	}
	if !slices.ContainsFunc(st.Blockers, func(s string) bool {
		return strings.HasPrefix(s, "`npm run publish` failed (exit 1) in its `npm run build` step")
	}) {
		t.Errorf("blockers %q", st.Blockers)
	}
	md := string(capsule.Render(capsule.Document{Meta: capsule.Meta{CheckpointID: "ck_1", Title: "t"}, State: st}))
	if !strings.Contains(md, "- `npm run publish` — failed (exit 1) in its `npm run build` step\n") {
		t.Errorf("capsule:\n%s", md)
	}
	b.bashOut("npm run publish", 0, "+ pi-monorepo@0.0.3")
	st = b.capsule(t)
	if want := []capsule.Verification{{Command: "npm run publish", ExitCode: 0, Outcome: OutcomePassed}}; !slices.Equal(st.Verification, want) {
		t.Errorf("after a successful run: verification %+v, want %+v", st.Verification, want)
	}
	// A check's own failure in one of its scripts names the step too.
	one := 1
	rs := outcomesOf("npm run check", &one, false, "npm error Lifecycle script `lint` failed with error:")
	if len(rs) != 1 || rs[0].detail != "in its `npm run lint` step" || rs[0].exit != 1 {
		t.Errorf("npm run check failing in lint: %+v", rs)
	}
}
