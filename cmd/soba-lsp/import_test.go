package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/session"
)

// These tests run the built binary's offline subcommands (import, budget,
// compact, verify) on files, as a user does.

var importFixtures = []string{"pi-v3.jsonl", "claude-code.jsonl", "codex-rollout.jsonl", "opencode-export.json", opencodeStorageSession}

// opencodeStorageSession is the session file of the opencode storage tree
// fixture; import reads its messages and parts from the tree around it.
const opencodeStorageSession = "opencode-storage/session/9f3c1e0a7b2d4c6e8f0a1b3c5d7e9f2a4b6c8d0e/ses_5d0cdf57fffe5FKDYRGn3Yv39L.json"

func fixturePath(name string) string {
	return filepath.Join("..", "..", "testdata", "imports", name)
}

// runCLI runs the binary in dir and returns stdout, stderr and the exit code.
func runCLI(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	// A replay without --workspace makes a temporary workspace: the test's
	// own, removed with it, so no run leaves directories behind.
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// importInto imports a transcript into a fresh workspace and returns the new
// session file.
func importInto(t *testing.T, src string) (ws, file string) {
	t.Helper()
	ws = t.TempDir()
	abs, _ := filepath.Abs(src)
	out, errs, code := runCLI(t, ws, "import", abs)
	if code != 0 {
		t.Fatalf("import %s: exit %d\n%s", src, code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	file = lines[len(lines)-1]
	if !strings.HasPrefix(file, filepath.Join(ws, ".soba", "sessions")+"/") || !strings.HasSuffix(file, ".jsonl") {
		t.Fatalf("import printed %q as its last line, want a file under %s/.soba/sessions", file, ws)
	}
	return ws, file
}

func TestImportCLI_NewSessionPathLastLine_RT1(t *testing.T) {
	for _, name := range importFixtures {
		t.Run(name, func(t *testing.T) {
			src := fixturePath(name)
			before, _ := os.ReadFile(src)
			_, file := importInto(t, src)
			after, _ := os.ReadFile(src)
			if !bytes.Equal(before, after) {
				t.Fatal("import modified its source")
			}
			s, rep, err := session.Open(file, session.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			h, _ := s.Header()
			if !rep.Clean() || !strings.Contains(h.ImportedFrom, name) {
				t.Fatalf("%v; header %+v", rep, h)
			}
		})
	}
	// -o chooses the file; a bad format and a missing file are clear errors.
	ws := t.TempDir()
	abs, _ := filepath.Abs(fixturePath("pi-v3.jsonl"))
	out := filepath.Join(ws, "mine.jsonl")
	stdout, errs, code := runCLI(t, ws, "import", "-o", out, abs)
	if code != 0 || strings.TrimSpace(stdout) != out {
		t.Fatalf("-o: exit %d, stdout %q", code, stdout)
	}
	if strings.Contains(errs, "/session resume") {
		t.Errorf("a session written outside the session directory is offered for resume: %s", errs)
	}
	// Into the session directory, it says how to continue it in the editor.
	stdout, errs, _ = runCLI(t, ws, "import", abs)
	id := strings.TrimSuffix(filepath.Base(strings.TrimSpace(stdout)), ".jsonl")
	if !strings.Contains(errs, "continue it in the editor: /session resume "+id+"\n") {
		t.Errorf("no resume hint for %s: %s", id, errs)
	}
	if _, errs, code := runCLI(t, ws, "import", "-o", out, abs); code == 0 || !strings.Contains(errs, "exists") {
		t.Errorf("importing over an existing file: exit %d, %s", code, errs)
	}
	if _, errs, code := runCLI(t, ws, "import", "--format", "vim", abs); code != 2 || !strings.Contains(errs, "--format") {
		t.Errorf("bad format: exit %d, %s", code, errs)
	}
	garbage := filepath.Join(ws, "garbage.jsonl")
	os.WriteFile(garbage, []byte("hello\n{\"a\":1}\n"), 0o644)
	if _, errs, code := runCLI(t, ws, "import", garbage); code != 1 || !strings.Contains(errs, "not a transcript format") {
		t.Errorf("garbage: exit %d, %s", code, errs)
	}
}

func TestImportCLI_ReportsMalformedLines(t *testing.T) {
	abs, _ := filepath.Abs(fixturePath("codex-rollout.jsonl"))
	_, errs, code := runCLI(t, t.TempDir(), "import", abs)
	if code != 0 || !strings.Contains(errs, "line 17: not a JSON line") || !strings.Contains(errs, "line 18: tool result for call \"call_never_made\"") {
		t.Fatalf("exit %d, stderr:\n%s", code, errs)
	}
	// opencode: a damaged object of an export by its line, a damaged file
	// of the storage tree by its path.
	abs, _ = filepath.Abs(fixturePath("opencode-export.json"))
	_, errs, code = runCLI(t, t.TempDir(), "import", abs)
	if code != 0 || !strings.Contains(errs, abs+": line 849: not a part") || !strings.Contains(errs, abs+": line 905: message msg_a2f342d60001vTFHyECCM0oGFO has no role") ||
		!strings.Contains(errs, "(opencode, 929 lines): 3 user messages") {
		t.Fatalf("export: exit %d, stderr:\n%s", code, errs)
	}
	abs, _ = filepath.Abs(fixturePath(opencodeStorageSession))
	storage := filepath.Dir(filepath.Dir(filepath.Dir(abs)))
	_, errs, code = runCLI(t, t.TempDir(), "import", abs)
	damaged := filepath.Join(storage, "part", "msg_a2f33e328001ucnJUyYt6UCcCy", "prt_a2f33e4c3001fzdT2cbRIWbWmG.json")
	torn := filepath.Join(storage, "message", "ses_5d0cdf57fffe5FKDYRGn3Yv39L", "msg_a2f342d60001vTFHyECCM0oGFO.json")
	if code != 0 || !strings.Contains("\n"+errs, "\n"+damaged+": not a part") || !strings.Contains(errs, "\n"+torn+": not a message") ||
		!strings.Contains(errs, "(opencode, 56 files): 3 user messages, 0 user commands, 9 assistant responses, 11 tool calls (8 renamed to SOBA tools), 11 tool results, 1 capsule; 2 problems") {
		t.Fatalf("storage: exit %d, stderr:\n%s", code, errs)
	}
}

// TestCompactDryRunLeavesFileUnchanged_RB2 runs the engine offline: plan,
// outcome and result line on stderr, the capsule on stdout, the session
// file byte for byte as it was.
func TestCompactDryRunLeavesFileUnchanged_RB2(t *testing.T) {
	// The Codex fixture ends with a capsule and two short messages: nothing
	// lies before the keep window there, however small.
	for _, name := range importFixtures[:2] {
		t.Run(name, func(t *testing.T) {
			ws, file := importInto(t, fixturePath(name))
			before, _ := os.ReadFile(file)
			// A tiny keep window, so even a short fixture has history to compact.
			cfg := filepath.Join(ws, "small.json")
			os.WriteFile(cfg, []byte(`{"compaction":{"keepRecentTokens":10}}`), 0o644)
			stdout, errs, code := runCLI(t, ws, "compact", "--dry-run", "--config", cfg, file)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, errs)
			}
			after, _ := os.ReadFile(file)
			if !bytes.Equal(before, after) {
				t.Fatal("a dry run changed the session file")
			}
			for _, want := range []string{"plan: op_", "trigger user", "outcome: completed (dry run: nothing appended)", "Compacted context · user · "} {
				if !strings.Contains(errs, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errs)
				}
			}
			doc, _, err := capsule.Parse([]byte(stdout))
			if err != nil {
				t.Fatalf("stdout is not a .capsule.md: %v\n%s", err, stdout)
			}
			if doc.Meta.Trigger != compaction.TriggerUser || len(doc.State.FilesModified) == 0 {
				t.Errorf("capsule %+v", doc)
			}
		})
	}
}

// TestCompactAppendsThroughStore_RB5 compacts for real: one capsule entry
// more, the file still verifies, and a session held by another store is
// refused rather than written.
func TestCompactAppendsThroughStore_RB5(t *testing.T) {
	ws, file := importInto(t, fixturePath("claude-code.jsonl"))
	cfg := filepath.Join(ws, "small.json")
	os.WriteFile(cfg, []byte(`{"compaction":{"keepRecentTokens":10}}`), 0o644)
	count := func() int {
		data, _ := os.ReadFile(file)
		return bytes.Count(data, []byte(`"type":"capsule"`))
	}
	n := count()
	s, _, err := session.Open(file, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, errs, code := runCLI(t, ws, "compact", "--config", cfg, file); code == 0 || !strings.Contains(errs, "in use") {
		t.Errorf("compact of a locked session: exit %d, %s", code, errs)
	}
	s.Close()
	_, errs, code := runCLI(t, ws, "compact", "--config", cfg, file)
	if code != 0 || strings.Contains(errs, "dry run") {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if count() != n+1 {
		t.Fatalf("%d capsule entries, want %d", count(), n+1)
	}
	if _, errs, code := runCLI(t, ws, "verify", file); code != 0 {
		t.Fatalf("verify after compact: %d %s", code, errs)
	}
	// The budget now starts from the new capsule.
	stdout, _, _ := runCLI(t, ws, "budget", file)
	var b compaction.Budget
	if err := json.Unmarshal([]byte(stdout), &b); err != nil || b.LastCompaction == nil || b.LastCompaction.Trigger != compaction.TriggerUser {
		t.Fatalf("budget %s: %v", stdout, err)
	}
}

func TestCompactNothingToCompact_RG8(t *testing.T) {
	ws, file := importInto(t, fixturePath("pi-v3.jsonl"))
	// The default keep window (20,000 tokens) holds this whole short session.
	stdout, errs, code := runCLI(t, ws, "compact", "--dry-run", file)
	if code != 0 || stdout != "" || !strings.Contains(errs, "outcome: skipped") || !(strings.Contains(errs, "Skipped: ") && strings.Contains(errs, " · user")) {
		t.Fatalf("exit %d, stdout %q\n%s", code, stdout, errs)
	}
	if _, errs, code := runCLI(t, ws, "compact", "--dry-run", "--trigger", "sometimes", file); code != 2 || !strings.Contains(errs, "--trigger") {
		t.Errorf("bad trigger: %d %s", code, errs)
	}
}

// TestBudgetCLI_RO1 prints the Budget; --config changes the limits.
func TestBudgetCLI_RO1(t *testing.T) {
	ws, file := importInto(t, fixturePath("pi-v3.jsonl"))
	stdout, errs, code := runCLI(t, ws, "budget", file)
	if code != 0 {
		t.Fatalf("exit %d %s", code, errs)
	}
	var b compaction.Budget
	if err := json.Unmarshal([]byte(stdout), &b); err != nil {
		t.Fatal(err)
	}
	def := compaction.DefaultConfig()
	if b.HardLimit != def.HardLimit() || b.SoftLimit != def.SoftLimit() || b.State != compaction.StateIdle || b.EffectiveTokens <= 0 || b.Pending == nil {
		t.Errorf("budget %+v", b)
	}
	if b.Source != "estimated" || b.LastCompaction == nil || b.LastCompaction.TokensBefore != 5000 {
		// The last response after the capsule has no usage; pi's compaction is the last one.
		t.Errorf("source %q, lastCompaction %+v", b.Source, b.LastCompaction)
	}
	cfg := filepath.Join(ws, "big.json")
	os.WriteFile(cfg, []byte(`{"model":{"contextWindow":200000,"maxOutputTokens":16000}}`), 0o644)
	stdout, _, _ = runCLI(t, ws, "budget", "--config", cfg, file)
	json.Unmarshal([]byte(stdout), &b)
	if b.ContextWindow != 200000 || b.HardLimit != 200000-16000-def.SafetyReserveTokens {
		t.Errorf("with --config: %+v", b)
	}
	os.WriteFile(cfg, []byte(`{"compaction":{"keepRecentTokenz":1}}`), 0o644)
	if _, errs, code := runCLI(t, ws, "budget", "--config", cfg, file); code != 2 || !strings.Contains(errs, "keepRecentTokenz") {
		t.Errorf("bad config: exit %d %s", code, errs)
	}
}

// TestVerifyCorruptedCopies_RT3_RT5 damages a copy of each imported fixture
// three ways; verify names each problem with its line and exits 1.
func TestVerifyCorruptedCopies_RT3_RT5(t *testing.T) {
	for _, name := range importFixtures {
		t.Run(name, func(t *testing.T) {
			ws, file := importInto(t, fixturePath(name))
			if out, errs, code := runCLI(t, ws, "verify", file); code != 0 || out != "" {
				t.Fatalf("clean import: exit %d, %s %s", code, out, errs)
			}
			data, _ := os.ReadFile(file)
			lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
			lines[len(lines)-1] += "\n"
			find := func(typ string) int {
				for i, l := range lines {
					if strings.Contains(l, `"type":"`+typ+`"`) {
						return i
					}
				}
				t.Fatalf("no %s line", typ)
				return -1
			}
			cases := []struct {
				name   string
				damage func() (string, string) // corrupted content, expected problem
			}{
				{"missing parent", func() (string, string) {
					i := find("assistant")
					var e session.Entry
					json.Unmarshal([]byte(lines[i]), &e)
					c := slices.Clone(lines)
					c[i] = strings.Replace(c[i], `"parentId":"`+e.Parent()+`"`, `"parentId":"deadbeef"`, 1)
					return strings.Join(c, ""), "line " + strconv.Itoa(i+1) + ": entry " + e.ID + ": parent deadbeef is not earlier in the file"
				}},
				{"orphan tool result", func() (string, string) {
					i := find("tool_result")
					var e session.Entry
					json.Unmarshal([]byte(lines[i]), &e)
					c := slices.Clone(lines)
					c[i] = strings.Replace(c[i], `"toolCallId":"`+e.ToolResult.ToolCallID+`"`, `"toolCallId":"call_gone"`, 1)
					return strings.Join(c, ""), "line " + strconv.Itoa(i+1) + ": tool result " + e.ID + `: no tool call "call_gone" before it`
				}},
				{"torn line", func() (string, string) {
					c := slices.Clone(lines)
					last := c[len(c)-1]
					c[len(c)-1] = last[:len(last)/2]
					return strings.Join(c, ""), "line " + strconv.Itoa(len(c)) + ": torn last line"
				}},
			}
			for _, tc := range cases {
				content, want := tc.damage()
				bad := filepath.Join(ws, "bad.jsonl")
				os.WriteFile(bad, []byte(content), 0o600)
				out, errs, code := runCLI(t, ws, "verify", bad)
				if code != 1 || !strings.Contains(out, want) || !strings.Contains(errs, "1 problem in ") {
					t.Errorf("%s: exit %d, want 1 and %q in:\n%s%s", tc.name, code, want, out, errs)
				}
			}
		})
	}
}

// TestVerifyCapsuleFirstKeptOffPath_RM2 moves a capsule's firstKeptEntryId
// to an entry off its path.
func TestVerifyCapsuleFirstKeptOffPath_RM2(t *testing.T) {
	ws, file := importInto(t, fixturePath("pi-v3.jsonl"))
	data, _ := os.ReadFile(file)
	var branch, capsuleLine string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "Use an environment variable instead.") {
			branch = l
		}
		if strings.Contains(l, `"type":"capsule"`) {
			capsuleLine = l
		}
	}
	var b, c session.Entry
	json.Unmarshal([]byte(branch), &b)
	json.Unmarshal([]byte(capsuleLine), &c)
	bad := strings.Replace(string(data), `"firstKeptEntryId":"`+c.Capsule.FirstKeptEntryID+`"`, `"firstKeptEntryId":"`+b.ID+`"`, 1)
	p := filepath.Join(ws, "bad.jsonl")
	os.WriteFile(p, []byte(bad), 0o600)
	out, _, code := runCLI(t, ws, "verify", p)
	if code != 1 || !strings.Contains(out, "capsule "+c.Capsule.CheckpointID+" (entry "+c.ID+"): firstKeptEntryId "+b.ID+" is not on its path") {
		t.Fatalf("exit %d: %s", code, out)
	}
}

// TestUnestimatedSessionBudgetsLikeEstimated_RG4: a session whose lines
// carry no token estimates (hand-written, or written by another tool) is
// budgeted and compacted exactly like the same session as our store writes
// it, so its hard limit holds (R-G4); verify notes the missing estimates.
func TestUnestimatedSessionBudgetsLikeEstimated_RG4(t *testing.T) {
	// pi-v3 budgets from estimates alone (and has nothing to compact after
	// its own capsule); claude-code from the provider's usage plus the
	// estimates of what follows it, and compacts.
	for _, tc := range []struct {
		fixture  string
		compacts bool
	}{{"pi-v3.jsonl", false}, {"claude-code.jsonl", true}} {
		t.Run(tc.fixture, func(t *testing.T) { checkUnestimated(t, tc.fixture, tc.compacts) })
	}
}

func checkUnestimated(t *testing.T, fixture string, compacts bool) {
	ws, withTokens := importInto(t, fixturePath(fixture))
	data, err := os.ReadFile(withTokens)
	if err != nil {
		t.Fatal(err)
	}
	stripped := regexp.MustCompile(`,"tokens":[0-9]+`).ReplaceAll(data, nil)
	if bytes.Equal(stripped, data) {
		t.Fatal("the imported session has no token estimates to strip")
	}
	without := filepath.Join(ws, "hand-written.jsonl")
	if err := os.WriteFile(without, stripped, 0o600); err != nil {
		t.Fatal(err)
	}
	budget := func(file string) compaction.Budget {
		out, errs, code := runCLI(t, ws, "budget", file)
		if code != 0 {
			t.Fatalf("budget %s: exit %d %s", file, code, errs)
		}
		var b compaction.Budget
		if err := json.Unmarshal([]byte(out), &b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := budget(withTokens), budget(without)
	if a.EffectiveTokens != b.EffectiveTokens || a.Source != b.Source {
		t.Errorf("budget with estimates %d (%s), without %d (%s)", a.EffectiveTokens, a.Source, b.EffectiveTokens, b.Source)
	}
	t.Logf("effective tokens %d (%s)", b.EffectiveTokens, b.Source)
	// A small keep window, so that the small fixture compacts.
	cfg := filepath.Join(ws, "keep-little.json")
	if err := os.WriteFile(cfg, []byte(`{"compaction":{"keepRecentTokens":50,"minReclaimableTokens":1,"minSavingsRatio":0}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	newIDs := regexp.MustCompile(`(op|ck)_[0-9a-f]+`) // fresh for every run
	resultLine := func(file string) string {
		_, errs, code := runCLI(t, ws, "compact", "--dry-run", "--config", cfg, file)
		if code != 0 || strings.Contains(errs, "outcome: completed") != compacts {
			t.Fatalf("dry run %s: exit %d %s", file, code, errs)
		}
		return newIDs.ReplaceAllString(errs, "$1_…")
	}
	if a, b := resultLine(withTokens), resultLine(without); a != b {
		t.Errorf("dry run with estimates:\n%s\nwithout:\n%s", a, b)
	}
	_, errs, code := runCLI(t, ws, "verify", without)
	if code != 0 || !strings.Contains(errs, "carry no token estimate") {
		t.Errorf("verify: exit %d, stderr %s", code, errs)
	}
	if _, errs, _ := runCLI(t, ws, "verify", withTokens); strings.Contains(errs, "carry no token estimate") {
		t.Errorf("verify notes missing estimates on a file that has them: %s", errs)
	}
}

// TestOfflineBudgetIsTheServers_RO1: `soba-lsp budget` on a session file
// prints the Budget the server reports after resuming that session: the
// same effective tokens and source, pending intents, auto-compact setting
// and last compaction (R-O1, R-T4).
func TestOfflineBudgetIsTheServers_RO1(t *testing.T) {
	for i, fixture := range importFixtures {
		t.Run(fixture, func(t *testing.T) {
			p := start(t)
			ws := p.cmd.Dir
			src, _ := filepath.Abs(fixturePath(fixture))
			out, errs, code := runCLI(t, ws, "import", src)
			if code != 0 {
				t.Fatalf("import: exit %d %s", code, errs)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			file := lines[len(lines)-1]
			offline, errs, code := runCLI(t, ws, "budget", file)
			if code != 0 {
				t.Fatalf("budget: exit %d %s", code, errs)
			}
			var want compaction.Budget
			if err := json.Unmarshal([]byte(offline), &want); err != nil {
				t.Fatal(err)
			}

			p.initialize()
			id := strings.TrimSuffix(filepath.Base(file), ".jsonl")
			p.send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand", "params": map[string]any{
				"command": "soba.session.resume", "arguments": []any{map[string]any{"sessionId": id}}}})
			if r := p.response(2); r["result"] == nil {
				t.Fatalf("soba.session.resume = %v", r)
			}
			p.send(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "workspace/executeCommand", "params": map[string]any{"command": "soba.budget"}})
			r := p.response(3)
			raw, _ := json.Marshal(r["result"])
			var got compaction.Budget
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatalf("soba.budget = %v", r)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("server after resume:\n%+v\noffline budget:\n%+v", got, want)
			}
			if got.LastCompaction == nil && i == 0 {
				t.Error("the pi fixture's own compaction is not the last compaction after resume")
			}
		})
	}
}

// TestReplayOfImportIsEstimated_RO1: replaying an imported session does not
// trust the usage the other agent's provider reported (it measured that
// agent's requests, not the replay's): budgets are estimated, and the
// replay says why.
func TestReplayOfImportIsEstimated_RO1(t *testing.T) {
	ws, file := importInto(t, fixturePath("claude-code.jsonl"))
	if b, _, _ := runCLI(t, ws, "budget", file); !strings.Contains(b, `"provider_usage"`) {
		t.Fatalf("the fixture's budget does not come from provider usage, so the test proves nothing: %s", b)
	}
	out, errs, code := runCLI(t, ws, "replay", file)
	if code != 0 { // the fixture is small: a replay without a compaction still succeeds
		t.Fatalf("replay: exit %d %s", code, errs)
	}
	if !strings.Contains(out, "imported session: its recorded provider usage measured the other agent's requests") {
		t.Errorf("replay does not say why budgets are estimated:\n%s", out)
	}
	if strings.Contains(out, "(provider_usage)") || !strings.Contains(out, "(estimated)") {
		t.Errorf("replay of an import used the recorded usage:\n%s", out)
	}
}

// TestBudgetInputAsTheServerBuildsIt_RM1_RG4: `budget --input` builds the
// next request's model input as the server does: not at all over the hard
// limit (the next turn compacts first), else the newest capsule and its
// tail, with the messages counted.
func TestBudgetInputAsTheServerBuildsIt_RM1_RG4(t *testing.T) {
	ws, file := importInto(t, fixturePath("pi-v3.jsonl"))
	small := filepath.Join(ws, "small.json")
	os.WriteFile(small, []byte(`{"model":{"contextWindow":1000,"maxOutputTokens":200},"compaction":{"safetyReserveTokens":100,"keepRecentTokens":100}}`), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"under the hard limit", []string{"budget", "--input", file}, "input: capsule \"ck_"},
		{"over the hard limit", []string{"budget", "--input", "--config", small, file}, "input: not built: "},
		{"without the flag", []string{"budget", file}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs, code := runCLI(t, ws, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if tc.want == "" && strings.Contains(errs, "input:") || !strings.Contains(errs, tc.want) {
				t.Fatalf("stderr %q, want %q", errs, tc.want)
			}
			if tc.want == "input: capsule \"ck_" && strings.Contains(errs, " 0 messages") {
				t.Fatalf("an empty model input: %s", errs)
			}
		})
	}
}

// TestExplicitCompactOfTinySessionIsSkipped_RG8: a real six-line Claude Code
// session (testdata/corpus/rules/tiny-session.jsonl) asked to compact with
// no keep window: the capsule would not be smaller than the history it
// replaces, so there is nothing worth compacting — a no-op, exit 0, not a
// failure.
func TestExplicitCompactOfTinySessionIsSkipped_RG8(t *testing.T) {
	ws, file := importInto(t, filepath.Join("..", "..", "testdata", "corpus", "rules", "tiny-session.jsonl"))
	cfg := filepath.Join(ws, "k0.json")
	if err := os.WriteFile(cfg, []byte(`{"compaction": {"keepRecentTokens": 0}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, errs, code := runCLI(t, ws, "compact", "--dry-run", "--config", cfg, file)
	if code != 0 || stdout != "" || !strings.Contains(errs, "outcome: skipped") || !strings.Contains(errs, "nothing worth compacting") {
		t.Fatalf("exit %d, stdout %q\n%s", code, stdout, errs)
	}
}
