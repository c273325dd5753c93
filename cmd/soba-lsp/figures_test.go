package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// compactedLine reads a completed result line's figures:
// "Compacted context · user · 1,234 → 567 tokens (…)".
var compactedLine = regexp.MustCompile(`Compacted context · \w+ · ([\d,]+) → ([\d,]+) tokens`)

func thousands(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
	if err != nil {
		t.Fatalf("figure %q: %v", s, err)
	}
	return n
}

// writeConfig makes the workspace's configuration of start (the model at
// a closed port) keep only a little recent history, so every fixture has
// something to compact.
func writeConfig(t *testing.T, ws string) {
	t.Helper()
	cfg := `{"model":{"provider":"openai","baseURL":"http://127.0.0.1:9/v1","name":"m"},"compaction":{"keepRecentTokens":200}}`
	if err := os.WriteFile(filepath.Join(ws, ".soba", "config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOfflineFiguresAreTheServers_RO1 compares the three figures a user
// sees for one session file: `soba-lsp budget`'s effective tokens, the
// "before" of `soba-lsp compact`'s result line, and the tokensBefore of
// the server's soba.compact on the same file. They are one measure (R-O1:
// the budget), so they are equal.
func TestOfflineFiguresAreTheServers_RO1(t *testing.T) {
	sessions := []struct{ src, id string }{
		{filepath.Join("sample", "session.jsonl"), "sample"},
		{filepath.Join("..", "..", "testdata", "sessions", "s_basic01.jsonl"), "s_basic01"},
		// Its capsule lists a skill (whose body the system prompt carries)
		// and a turn after it activates another (whose body is in its tool
		// result, not the system prompt): every figure counts each once.
		{filepath.Join("..", "..", "testdata", "sessions", "s_basic01.jsonl"), "s_basic01_skills"},
		// The workspace's AGENTS.md is part of the server's system prompt:
		// the offline figures count it too.
		{filepath.Join("sample", "session.jsonl"), "sample_agents_md"},
	}
	for _, sess := range sessions {
		t.Run(sess.id, func(t *testing.T) {
			p := start(t)
			ws := p.cmd.Dir
			writeConfig(t, ws)
			file := copySession(t, ws, sess.src, sess.id)
			if sess.id == "s_basic01_skills" {
				withSkillsAfterCapsule(t, ws, file)
			}
			if sess.id == "sample_agents_md" {
				rules := strings.Repeat("- Run `go test ./...` before every commit and keep the output in the reply.\n", 60)
				if err := os.WriteFile(filepath.Join(ws, "AGENTS.md"), []byte("# Rules\n"+rules), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if sess.id == "s_basic01" {
				// Two more turns after its capsule give the user compact
				// something old enough; the provider's usage report of the
				// last answer makes the budget differ from the engine's
				// estimate, as in the field (budget 10,404, compact
				// "1,054 → 905", server "10,404 → 1,810").
				appendLines(t, file,
					`{"id":"b1","parentId":"a100000a","type":"user","timestamp":"2026-07-14T09:31:00Z","tokens":20,"user":{"text":"Now log every retry at debug level."}}`,
					`{"id":"b2","parentId":"b1","type":"assistant","timestamp":"2026-07-14T09:31:05Z","tokens":40,"assistant":{"text":"Done: retries are logged at debug level with the attempt and the delay.","provider":"ollama","model":"qwen3-coder:30b","stopReason":"end_turn","usage":{"inputTokens":10600,"outputTokens":30}}}`,
					`{"id":"b3","parentId":"b2","type":"user","timestamp":"2026-07-14T09:32:00Z","tokens":15,"user":{"text":"Add a changelog entry."}}`,
					`{"id":"b4","parentId":"b3","type":"assistant","timestamp":"2026-07-14T09:32:05Z","tokens":30,"assistant":{"text":"Added under Unreleased.","provider":"ollama","model":"qwen3-coder:30b","stopReason":"end_turn","usage":{"inputTokens":10700,"outputTokens":12}}}`)
			}

			out, errs, code := runCLI(t, ws, "budget", file)
			if code != 0 {
				t.Fatalf("budget: exit %d %s", code, errs)
			}
			var b struct {
				EffectiveTokens int `json:"effectiveTokens"`
			}
			if err := json.Unmarshal([]byte(out), &b); err != nil {
				t.Fatal(err)
			}

			_, errs, code = runCLI(t, ws, "compact", "--dry-run", file)
			m := compactedLine.FindStringSubmatch(errs)
			if code != 0 || m == nil {
				t.Fatalf("compact --dry-run: exit %d, no completed result line:\n%s", code, errs)
			}
			offlineBefore := thousands(t, m[1])

			p.initialize()
			id := strings.TrimSuffix(filepath.Base(file), ".jsonl")
			p.send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand", "params": map[string]any{
				"command": "soba.session.resume", "arguments": []any{map[string]any{"sessionId": id}}}})
			if r := p.response(2); r["result"] == nil {
				t.Fatalf("soba.session.resume = %v", r)
			}
			p.send(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "workspace/executeCommand", "params": map[string]any{
				"command": "soba.compact", "arguments": []any{map[string]any{}}}})
			r := p.response(3)
			res, _ := r["result"].(map[string]any)
			if res == nil || res["outcome"] != "completed" {
				t.Fatalf("soba.compact = %v", r)
			}
			serverBefore := int(res["tokensBefore"].(float64))

			if b.EffectiveTokens != offlineBefore || offlineBefore != serverBefore {
				t.Errorf("budget %d, compact's before %d, server's soba.compact before %d: want one figure",
					b.EffectiveTokens, offlineBefore, serverBefore)
			}
		})
	}
}

// TestOfflineCompactRecordsAndMirrors_RO2: a compaction by `soba-lsp
// compact` leaves what the server's leaves: a flight record of the
// operation in .soba/flight/<session>.jsonl (R-O2) and, for an explicit
// compact's full capsule, its mirror in Project Memory (R-C4). A dry run
// leaves neither.
func TestOfflineCompactRecordsAndMirrors_RO2(t *testing.T) {
	ws := t.TempDir()
	writeConfigIn(t, ws)
	id := "sample"
	file := copySession(t, ws, filepath.Join("sample", "session.jsonl"), id)
	flight := filepath.Join(ws, ".soba", "flight", id+".jsonl")
	index := filepath.Join(ws, ".soba", "memory", "MEMORY.md")

	if _, errs, code := runCLI(t, ws, "compact", "--dry-run", file); code != 0 {
		t.Fatalf("compact --dry-run: exit %d %s", code, errs)
	}
	if _, err := os.Stat(flight); err == nil {
		t.Fatal("a dry run wrote a flight record")
	}
	if _, err := os.Stat(index); err == nil {
		t.Fatal("a dry run mirrored to Project Memory")
	}

	_, errs, code := runCLI(t, ws, "compact", file)
	if code != 0 || compactedLine.FindStringSubmatch(errs) == nil {
		t.Fatalf("compact: exit %d %s", code, errs)
	}
	data, err := os.ReadFile(flight)
	if err != nil {
		t.Fatalf("no flight record: %v", err)
	}
	var rec struct {
		SessionID, OperationID, Trigger, Outcome, CheckpointID string
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(data))), &rec); err != nil {
		t.Fatalf("flight record %q: %v", data, err)
	}
	if rec.SessionID != id || rec.Trigger != "user" || rec.Outcome != "completed" || rec.CheckpointID == "" || rec.OperationID == "" {
		t.Fatalf("flight record %+v", rec)
	}
	idx, err := os.ReadFile(index)
	if err != nil || !strings.Contains(string(idx), rec.CheckpointID) {
		t.Fatalf("Project Memory's index does not list %s (%v):\n%s", rec.CheckpointID, err, idx)
	}
	if _, err := os.Stat(filepath.Join(ws, ".soba", "memory", "capsules", rec.CheckpointID+".capsule.md")); err != nil {
		t.Fatalf("the mirrored capsule: %v", err)
	}
}

// writeConfigIn is writeConfig for a workspace made by importInto.
func writeConfigIn(t *testing.T, ws string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(ws, ".soba"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeConfig(t, ws)
}

// copySession copies a session file into the workspace's session
// directory as <id>.jsonl and returns its path.
func copySession(t *testing.T, ws, src, id string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(ws, ".soba", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, id+".jsonl")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// withSkillsAfterCapsule makes the capsule of the s_basic01 copy at file
// list the skill go-style and appends a turn that activates the skill
// retries; both skills are in the workspace ws. No answer carries usage,
// so the figures are estimates and count the system prompt as is.
func withSkillsAfterCapsule(t *testing.T, ws, file string) {
	t.Helper()
	for _, name := range []string{"go-style", "retries"} {
		dir := filepath.Join(ws, ".soba", "skills", name)
		body := strings.Repeat("Follow the "+name+" rules of this project for every change. ", 40)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: "+name+"\ndescription: the "+name+" rules\n---\n"+body+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(data), `"state":{`) != 1 {
		t.Fatal("the fixture should have one capsule state")
	}
	data = []byte(strings.Replace(string(data), `"state":{`, `"state":{"activeSkills":["go-style"],`, 1))
	data = regexp.MustCompile(`,"usage":\{[^}]*\}`).ReplaceAll(data, nil)
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("Follow the retries rules of this project for every change. ", 40)
	appendLines(t, file,
		`{"id":"k1","parentId":"a100000a","type":"user","timestamp":"2026-07-14T09:30:40Z","tokens":12,"user":{"text":"Use the retries skill."}}`,
		`{"id":"k2","parentId":"k1","type":"assistant","timestamp":"2026-07-14T09:30:41Z","tokens":30,"assistant":{"text":"","toolCalls":[{"id":"call_k","name":"activate_skill","arguments":{"name":"retries"}}]}}`,
		`{"id":"k3","parentId":"k2","type":"tool_result","timestamp":"2026-07-14T09:30:42Z","tokens":620,"toolResult":{"toolCallId":"call_k","toolName":"activate_skill","ok":true,"content":"`+strings.TrimSpace(body)+`","artifacts":{"skill":"retries"}}}`,
		`{"id":"k4","parentId":"k3","type":"assistant","timestamp":"2026-07-14T09:30:45Z","tokens":20,"assistant":{"text":"The retries skill is active.","provider":"ollama","model":"qwen3-coder:30b","stopReason":"end_turn"}}`)
}

// appendLines appends JSONL lines to a session file.
func appendLines(t *testing.T, file string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := f.WriteString(l + "\n"); err != nil {
			t.Fatal(err)
		}
	}
}
