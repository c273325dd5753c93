package importer

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/session"
)

// TestCommandInCwd_RC5: a check run as `cd <session dir> && X`, as X, or
// with Codex's workdir is one check (R-C5): its artifact command is what
// ran, as seen from the session's directory.
func TestCommandInCwd_RC5(t *testing.T) {
	const cwd = "/home/u/repo"
	for _, tc := range []struct{ workdir, cmd, want string }{
		{"", "npm test", "npm test"},
		{"", "cd /home/u/repo && npm run check", "npm run check"},
		{"", "cd /home/u/repo; npm run check 2>&1 | tail", "npm run check 2>&1 | tail"},
		{"", "cd /home/u/repo/packages/ai && npm test", "cd packages/ai && npm test"},
		{"", "cd /elsewhere && npm test", "cd /elsewhere && npm test"},
		{"", "cd /home/u/repo", "cd /home/u/repo"},
		{"", "cd /home/u/repository && npm test", "cd /home/u/repository && npm test"},
		{"/home/u/repo", "bun test", "bun test"},
		{"/home/u/repo/web", "bun test", "cd web && bun test"},
		{"/home/u/wt/x", "bun run typecheck", "cd /home/u/wt/x && bun run typecheck"},
		{"/home/u/wt/x", "cd /home/u/repo && bun test", "bun test"},
	} {
		if got := commandInCwd(cwd, tc.workdir, tc.cmd); got != tc.want {
			t.Errorf("commandInCwd(%q, %q) = %q, want %q", tc.workdir, tc.cmd, got, tc.want)
		}
	}
}

// TestCodexPollsJoinTheirCommand_RC5: a Codex command that outlives its
// exec_command call is finished by write_stdin polls of its session; the
// poll that reports the exit carries the command's outcome, and neither the
// running call nor a poll is a failure of its own.
func TestCodexPollsJoinTheirCommand_RC5(t *testing.T) {
	rollout := strings.Join([]string{
		`{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"s","cwd":"/repo"}}`,
		`{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"run the type check"}]}}`,
		`{"timestamp":"2026-01-01T00:00:02Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","call_id":"c1","arguments":"{\"cmd\":\"bun run typecheck\",\"workdir\":\"/repo\"}"}}`,
		`{"timestamp":"2026-01-01T00:00:32Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"Chunk ID: a1\nWall time: 30.0 seconds\nProcess running with session ID 55202\nOutput:\n$ tsc\n"}}`,
		`{"timestamp":"2026-01-01T00:00:33Z","type":"response_item","payload":{"type":"function_call","name":"write_stdin","call_id":"c2","arguments":"{\"session_id\":55202,\"chars\":\"\"}"}}`,
		`{"timestamp":"2026-01-01T00:01:03Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c2","output":"Chunk ID: a2\nWall time: 30.0 seconds\nProcess running with session ID 55202\nOutput:\n"}}`,
		`{"timestamp":"2026-01-01T00:01:04Z","type":"response_item","payload":{"type":"function_call","name":"write_stdin","call_id":"c3","arguments":"{\"session_id\":55202,\"chars\":\"\"}"}}`,
		`{"timestamp":"2026-01-01T00:01:10Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c3","output":"Chunk ID: 5f30ba\nWall time: 6.0 seconds\nProcess exited with code 2\nOutput:\nsrc/a.ts(1,1): error TS2304: Cannot find name 'x'.\n"}}`,
	}, "\n") + "\n"
	res, err := Convert([]byte(rollout), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var es compaction.Entries
	es = append(es, session.Entry{ID: "h", Type: session.TypeSession, Session: &session.SessionHeader{Version: 1, SessionID: "s"}})
	es = append(es, res.Entries...)
	st, err := compaction.BuildDeterministic(es, 1, len(es), nil, compaction.Extras{})
	if err != nil {
		t.Fatal(err)
	}
	want := []capsule.Verification{{Command: "bun run typecheck", ExitCode: 2, Outcome: compaction.OutcomeFailedCmd}}
	if !slices.Equal(st.Verification, want) {
		t.Errorf("verification %+v, want %+v", st.Verification, want)
	}
	if !slices.Equal(st.Blockers, []string{"`bun run typecheck` fails"}) {
		t.Errorf("blockers %q", st.Blockers)
	}
}

// TestClaudeSubagentLogImports_RT1: a Claude Code subagent log, where every
// entry is a sidechain, imports as its own conversation and says so.
func TestClaudeSubagentLogImports_RT1(t *testing.T) {
	log := strings.Join([]string{
		`{"type":"user","uuid":"u1","parentUuid":null,"isSidechain":true,"sessionId":"s","cwd":"/repo","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"Find where the parser is tested"}}`,
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","isSidechain":true,"sessionId":"s","cwd":"/repo","timestamp":"2026-01-01T00:00:01Z","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"In parser_test.go."}]}}`,
	}, "\n") + "\n"
	res, err := Convert([]byte(log), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.UserMessages != 1 || res.Stats.Assistants != 1 {
		t.Errorf("stats %+v", res.Stats)
	}
	if !slices.ContainsFunc(res.Problems, func(p Problem) bool { return strings.Contains(p.Message, "subagent log") }) {
		t.Errorf("the import does not say it is a subagent log: %v", res.Problems)
	}
}

// TestImportedCapsuleKeepsSourceTime_RT1: a foreign compaction imported as
// a capsule keeps the time the source recorded it, not the import's.
func TestImportedCapsuleKeepsSourceTime_RT1(t *testing.T) {
	data := transcript(t, "pi-mono__before-compaction.jsonl")
	var want []time.Time
	for _, line := range bytes.Split(data, []byte("\n")) {
		var l struct{ Type, Timestamp string }
		if json.Unmarshal(line, &l) == nil && l.Type == "compaction" {
			want = append(want, parseTime(l.Timestamp))
		}
	}
	res, err := Convert(data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []time.Time
	for _, e := range res.Entries {
		if e.Capsule != nil {
			got = append(got, e.Timestamp)
		}
	}
	if len(want) != 2 || !slices.EqualFunc(got, want, time.Time.Equal) {
		t.Errorf("capsule times %v, source's %v", got, want)
	}
}

// TestApplyPatchRenamesAndDeletions_RC6: an apply_patch that moves a file
// lists it as old → new, one that deletes a file as deleted.
func TestApplyPatchRenamesAndDeletions_RC6(t *testing.T) {
	b := &builder{res: &Result{Cwd: "/repo"}}
	patch := "*** Begin Patch\n*** Add File: /repo/new.go\n+package x\n*** Update File: /repo/old.go\n*** Move to: /repo/lib/old.go\n@@\n-a\n+b\n*** Delete File: /repo/gone.go\n*** Update File: src/kept.go\n@@\n-x\n+y\n*** End Patch"
	want := []string{"new.go", "old.go → lib/old.go", "gone.go (deleted)", "src/kept.go"}
	if got := b.patchPaths(patch); !slices.Equal(got, want) {
		t.Errorf("patch paths %q, want %q", got, want)
	}
}
