package importer

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Synthetic sessions for the fidelity harness: one per defect issue 15
// lists, in the format of the agent where it was seen, with a fact file each
// (testdata/fidelity/synthetic-*.facts.json) written from what the session
// does. The transcripts are generated here, so each step is readable as
// code; TestSyntheticTranscriptsAreCurrent fails when a file on disk differs
// from its generator, and -update-synthetic rewrites them.
var updateSynthetic = flag.Bool("update-synthetic", false, "rewrite testdata/fidelity/synthetic-*.jsonl from their generators")

// syntheticSessions are the generators, by file name.
var syntheticSessions = map[string]func() []byte{
	"synthetic-claude-verification.jsonl": syntheticVerification,
	"synthetic-claude-context.jsonl":      syntheticContext,
	"synthetic-codex-shell.jsonl":         syntheticCodexShell,
	"synthetic-pi-roll.jsonl":             syntheticPiRoll,
	"synthetic-claude-summary.jsonl":      syntheticClaudeSummary,
	"synthetic-claude-subagent.jsonl":     syntheticClaudeSubagent,
}

func TestSyntheticTranscriptsAreCurrent(t *testing.T) {
	for name, gen := range syntheticSessions {
		p := filepath.Join("..", "testdata", "fidelity", name)
		want := gen()
		if *updateSynthetic {
			if err := os.WriteFile(p, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%s: %v (run go test ./importer -run TestSyntheticTranscriptsAreCurrent -update-synthetic)", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from its generator: run go test ./importer -run TestSyntheticTranscriptsAreCurrent -update-synthetic", name)
		}
	}
}

// jsonLine is v as one JSONL line.
func jsonLine(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b) + "\n"
}

// claudeLog writes a Claude Code project log.
type claudeLog struct {
	buf       bytes.Buffer
	cwd       string
	n         int
	parent    any
	t         time.Time
	sidechain bool
}

func newClaudeLog(cwd string) *claudeLog {
	return &claudeLog{cwd: cwd, t: time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)}
}

func (g *claudeLog) line(typ string, msg map[string]any, extra map[string]any) {
	g.n++
	g.t = g.t.Add(7 * time.Second)
	id := fmt.Sprintf("u%03d", g.n)
	l := map[string]any{"parentUuid": g.parent, "isSidechain": g.sidechain, "userType": "external", "cwd": g.cwd,
		"sessionId": "synthetic", "version": "2.0.0", "type": typ, "message": msg, "uuid": id, "timestamp": g.t.Format(time.RFC3339Nano)}
	for k, v := range extra {
		l[k] = v
	}
	g.buf.WriteString(jsonLine(l))
	g.parent = id
}

func (g *claudeLog) user(text string) {
	g.line("user", map[string]any{"role": "user", "content": text}, nil)
}

func (g *claudeLog) reply(text string) {
	g.line("assistant", map[string]any{"id": fmt.Sprintf("msg_%d", g.n), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content": []any{map[string]any{"type": "text", "text": text}}, "stop_reason": "end_turn"}, nil)
}

// tool writes a tool call and its result; a Bash failure's content starts
// "Exit code N" as Claude Code writes it.
func (g *claudeLog) tool(name string, input map[string]any, result string, isError bool) {
	id := fmt.Sprintf("toolu_%03d", g.n+1)
	g.line("assistant", map[string]any{"id": fmt.Sprintf("msg_%d", g.n), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content": []any{map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}}, "stop_reason": "tool_use"}, nil)
	g.line("user", map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": result, "is_error": isError}}}, nil)
}

func (g *claudeLog) bash(cmd, output string, exit int) {
	if exit != 0 {
		g.tool("Bash", map[string]any{"command": cmd}, fmt.Sprintf("Exit code %d\n%s", exit, output), true)
		return
	}
	g.tool("Bash", map[string]any{"command": cmd}, output, false)
}

const claudeRefusal = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed."

// syntheticVerification: "Verification lies both ways" and "the final
// blocker is missing" — a check that failed and then ran filtered, failure
// text behind a pipe, non-checks that name checks, checks under a package
// manager's filter, type-check scripts and docker build, one check under
// `cd web &&` and `--prefix web`, a commit refused by its hook and a failed
// publish as the last thing that happened.
func syntheticVerification() []byte {
	g := newClaudeLog("/work/app")
	g.user("Make `npm run check` pass, then publish the release. Never edit files under generated/.")
	g.bash("npm run check", "> app@1.4.0 check\n> tsc --noEmit\n\nsrc/a.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.", 2)
	g.tool("Edit", map[string]any{"file_path": "/work/app/src/a.ts", "old_string": "const n: number = \"1\"", "new_string": "const n: number = 1"}, "The file /work/app/src/a.ts has been updated.", false)
	for range 3 {
		g.bash("npm run check 2>&1 | tail -3", "> app@1.4.0 check\n> tsc --noEmit\n", 0)
	}
	g.bash("npm run check", "> app@1.4.0 check\n> tsc --noEmit\n", 0)
	g.bash("npm run lint", "src/b.ts\n  4:1  error  'x' is defined but never used  no-unused-vars\n\n✖ 1 problem (1 error, 0 warnings)", 1)
	g.tool("Edit", map[string]any{"file_path": "/work/app/src/b.ts", "old_string": "const x = 1\n", "new_string": ""}, "The file /work/app/src/b.ts has been updated.", false)
	for range 10 {
		g.bash("npm run lint 2>&1 | tail -2", "> app@1.4.0 lint\n> eslint src\n", 0)
	}
	g.bash("npm run build 2>&1 | tail -4", "> app@1.4.0 build\n> vite build\nnpm error Lifecycle script `build` failed with error:\nnpm error command failed", 0)
	g.bash(`rg --files | rg "config|vitest|test"`, "vitest.config.ts\nsrc/a.test.ts", 0)
	g.tool("Write", map[string]any{"file_path": "/work/app/vitest.config.ts", "content": "export default {}\n"}, "File created successfully at: /work/app/vitest.config.ts", false)
	g.bash(`git add vitest.config.ts && git commit -m "vitest config: npm test passes"`, "[main 1a2b3c4] vitest config: npm test passes\n 1 file changed", 0)
	g.bash("pnpm --filter api test", " FAIL  src/routes.test.ts > GET /health\nAssertionError: expected 500 to be 200\n Test Files  1 failed (1)", 1)
	g.bash("npm run type-check", "> app@1.4.0 type-check\n> tsc -p tsconfig.json --noEmit\n\nsrc/c.ts(9,1): error TS2304: Cannot find name 'y'.", 2)
	g.bash("docker build -t app .", "#8 naming to docker.io/library/app done\n#8 DONE 0.1s", 0)
	g.bash("cd web && npm test", " FAIL  src/App.test.tsx\n Tests  1 failed | 4 passed (5)", 1)
	g.tool("Edit", map[string]any{"file_path": "/work/app/web/src/App.tsx", "old_string": "Hello", "new_string": "Hello, world"}, "The file /work/app/web/src/App.tsx has been updated.", false)
	g.bash("npm test --prefix web", " Tests  5 passed (5)", 0)
	g.bash(`git commit -am "release 1.4.1"`, "husky - pre-commit hook exited with code 1 (error)\nlint-staged failed", 1)
	g.bash("npm run publish", "npm error code E403\nnpm error 403 Forbidden - PUT https://registry.npmjs.org/app - You cannot publish over the previously published versions: 1.4.0.", 1)
	g.reply("The check passes now, but the commit was refused by the pre-commit hook and `npm run publish` failed with E403: the version 1.4.0 is already published.")
	return g.buf.Bytes()
}

// syntheticContext: "context is taken for requests" and the smaller points —
// an IDE's opened file and selection around the request, an interrupt
// marker, a question and a complaint, a pasted review, an "also" request, a
// write the user refused and one that failed, a final TodoWrite, a last
// reply with a list.
func syntheticContext() []byte {
	g := newClaudeLog("/work/tok")
	g.user("<ide_opened_file>The user opened the file /work/tok/SPEC.md in the IDE. This may or may not be related to the current task.</ide_opened_file>" +
		"<ide_selection>The user selected the lines 1 to 1115 from /work/tok/SPEC.md:\n# Tokenizer\nThe tokenizer must never allocate per token.\n</ide_selection>\n" +
		"Implement the tokenizer described in SPEC.md. Make sure to add an AGENTS.md file with the build commands. Never change the public API.")
	g.tool("Read", map[string]any{"file_path": "/work/tok/SPEC.md"}, "     1\t# Tokenizer\n     2\tThe tokenizer must never allocate per token.\n", false)
	g.tool("Edit", map[string]any{"file_path": "/work/tok/tokenizer.go", "old_string": "// TODO", "new_string": "func Next() {}"}, "The file /work/tok/tokenizer.go has been updated.", false)
	g.user("[Request interrupted by user]")
	g.user("why did you stop? you forgot the tests.")
	g.tool("Write", map[string]any{"file_path": "/work/tok/api.go", "content": "package tok\n"}, claudeRefusal, true)
	g.tool("Write", map[string]any{"file_path": "/work/tok/config.go", "content": "package tok\n"}, "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>", true)
	g.user("fix this:\n\nReview of tokenizer.go, from the team's style guide. Always use tabs for indentation. Prefer table-driven tests over one test per case. Keep every exported name documented. Use errors.Is for comparisons rather than ==.")
	g.tool("Edit", map[string]any{"file_path": "/work/tok/tokenizer_test.go", "old_string": "func TestA", "new_string": "func TestNext"}, "The file /work/tok/tokenizer_test.go has been updated.", false)
	g.user("Also add a benchmark for the tokenizer.")
	g.tool("Write", map[string]any{"file_path": "/work/tok/AGENTS.md", "content": "# Build\n\ngo build ./...\n"}, "File created successfully at: /work/tok/AGENTS.md", false)
	g.tool("TodoWrite", map[string]any{"todos": []any{
		map[string]any{"content": "Implement the tokenizer", "status": "completed", "activeForm": "Implementing the tokenizer"},
		map[string]any{"content": "Write AGENTS.md with the build commands", "status": "in_progress", "activeForm": "Writing AGENTS.md"},
		map[string]any{"content": "Add a tokenizer benchmark", "status": "pending", "activeForm": "Adding a benchmark"},
	}}, "Todos have been modified successfully.", false)
	g.reply("Status:\n- the tokenizer is implemented\n- AGENTS.md lists the build commands\n- the benchmark is next")
	return g.buf.Bytes()
}

// codexRollout writes a Codex rollout.
type codexRollout struct {
	buf   bytes.Buffer
	t     time.Time
	calls int
}

func newCodexRollout(cwd string) *codexRollout {
	g := &codexRollout{t: time.Date(2026, 5, 5, 14, 0, 0, 0, time.UTC)}
	g.item("session_meta", map[string]any{"id": "synthetic-codex", "timestamp": g.t.Format(time.RFC3339Nano), "cwd": cwd, "originator": "codex_cli_rs", "cli_version": "0.60.0"})
	g.item("turn_context", map[string]any{"cwd": cwd, "model": "gpt-5-codex"})
	return g
}

func (g *codexRollout) item(typ string, payload map[string]any) {
	g.t = g.t.Add(5 * time.Second)
	g.buf.WriteString(jsonLine(map[string]any{"timestamp": g.t.Format(time.RFC3339Nano), "type": typ, "payload": payload}))
}

func (g *codexRollout) user(text string) {
	g.item("response_item", map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}}})
}

func (g *codexRollout) reply(text string) {
	g.item("response_item", map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": text}}})
}

func (g *codexRollout) call(name string, args map[string]any) string {
	g.calls++
	id := fmt.Sprintf("call_%03d", g.calls)
	a, _ := json.Marshal(args)
	g.item("response_item", map[string]any{"type": "function_call", "name": name, "arguments": string(a), "call_id": id})
	return id
}

func (g *codexRollout) output(id, out string) {
	g.item("response_item", map[string]any{"type": "function_call_output", "call_id": id, "output": out})
}

// exec runs a command that finishes within its call.
func (g *codexRollout) exec(cmd, out string, exit int) {
	id := g.call("exec_command", map[string]any{"cmd": cmd, "yield_time_ms": 10000})
	g.output(id, fmt.Sprintf("Chunk ID: %06x\nWall time: 0.4 seconds\nProcess exited with code %d\nOriginal token count: 20\nOutput:\n%s", g.calls, exit, out))
}

// execPolled runs a command that outlives its call: polls of its session
// through write_stdin report it running, then its exit.
func (g *codexRollout) execPolled(cmd string, session int, out string, exit int) {
	id := g.call("exec_command", map[string]any{"cmd": cmd, "yield_time_ms": 30000})
	g.output(id, fmt.Sprintf("Chunk ID: %06x\nWall time: 30.0 seconds\nProcess running with session ID %d\nOriginal token count: 5\nOutput:\n", g.calls, session))
	id = g.call("write_stdin", map[string]any{"session_id": session, "chars": "", "yield_time_ms": 30000})
	g.output(id, fmt.Sprintf("Chunk ID: %06x\nWall time: 30.0 seconds\nProcess running with session ID %d\nOriginal token count: 3\nOutput:\n", g.calls, session))
	id = g.call("write_stdin", map[string]any{"session_id": session, "chars": "", "yield_time_ms": 30000})
	g.output(id, fmt.Sprintf("Chunk ID: %06x\nWall time: 12.2 seconds\nProcess exited with code %d\nOriginal token count: 40\nOutput:\n%s", g.calls, exit, out))
}

// syntheticCodexShell: "artifacts miss what the shell did" and the Codex
// points — the IDE preamble around the request, files written, copied,
// moved, touched, tee'd, edited in place, moved and removed through git by
// shell commands, files read through cat, sed -n, head, tail and rg -n, an
// apply_patch, and a type check and tests polled through write_stdin that
// exit 2 and 1.
func syntheticCodexShell() []byte {
	g := newCodexRollout("/work/svc")
	g.user("<environment_context>\n  <cwd>/work/svc</cwd>\n</environment_context>")
	g.user("# Context from my IDE setup:\n\n## Active file: src/config.ts\n\n## Open tabs:\n- config.ts: src/config.ts\n\n## My request for Codex:\nSplit the config module into src/config/ and keep the type check green.")
	g.exec("cat package.json", `{"name":"svc","scripts":{"type-check":"tsc --noEmit"}}`, 0)
	g.exec("sed -n '1,40p' src/main.ts", "import { load } from './config'\n", 0)
	g.exec("head -20 README.md", "# svc\n", 0)
	g.exec(`rg -n "loadConfig" src/app.ts`, "12:  const c = loadConfig()\n", 0)
	g.exec("tail -5 CHANGELOG.md", "## 0.3.0\n", 0)
	g.exec("mkdir -p src/config && cat > src/config/load.ts <<'EOF'\nexport function loadConfig() { return {} }\nEOF", "", 0)
	g.exec("cp src/config.ts src/config/index.ts", "", 0)
	g.exec("mv src/old-config.ts src/config/legacy.ts", "", 0)
	g.exec("touch src/config/.keep", "", 0)
	g.exec("echo '- config split' | tee -a docs/notes.md", "- config split\n", 0)
	g.exec("sed -i 's#./config#./config/index#' src/main.ts", "", 0)
	g.exec("git mv src/util.ts src/lib/util.ts", "", 0)
	g.exec("git rm -q src/dead.ts", "", 0)
	id := g.call("apply_patch", map[string]any{"input": "*** Begin Patch\n*** Update File: src/app.ts\n@@\n-import { loadConfig } from './config'\n+import { loadConfig } from './config/load'\n*** End Patch\n"})
	g.output(id, `{"output":"Success. Updated the following files:\nM src/app.ts\n","metadata":{"exit_code":0,"duration_seconds":0.0}}`)
	g.execPolled("pnpm run type-check", 4101, "src/config/index.ts(2,10): error TS2305: Module './load' has no exported member 'Config'.\n ELIFECYCLE  Command failed with exit code 2.", 2)
	g.execPolled("pnpm --filter api test", 4102, " FAIL  test/config.test.ts > loads the defaults\n Test Files  1 failed (1)\n ELIFECYCLE  Test failed.", 1)
	g.reply("The module is split, but the type check fails (TS2305 in src/config/index.ts) and the api tests fail on the defaults.")
	return g.buf.Bytes()
}

// piLog writes a pi v3 session.
type piLog struct {
	buf    bytes.Buffer
	t      time.Time
	n      int
	parent any
	calls  int
}

func newPiLog(cwd string) *piLog {
	g := &piLog{t: time.Date(2026, 4, 20, 8, 0, 0, 0, time.UTC)}
	g.buf.WriteString(jsonLine(map[string]any{"type": "session", "version": 3, "id": "synthetic-pi", "timestamp": g.t.Format(time.RFC3339Nano), "cwd": cwd}))
	return g
}

func (g *piLog) entry(l map[string]any) string {
	g.n++
	g.t = g.t.Add(9 * time.Second)
	id := fmt.Sprintf("p%07d", g.n)
	l["id"], l["parentId"], l["timestamp"] = id, g.parent, g.t.Format(time.RFC3339Nano)
	g.buf.WriteString(jsonLine(l))
	g.parent = id
	return id
}

func (g *piLog) message(m map[string]any) string {
	m["timestamp"] = g.t.Add(9 * time.Second).UnixMilli()
	return g.entry(map[string]any{"type": "message", "message": m})
}

func (g *piLog) user(text string) string {
	return g.message(map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}})
}

func (g *piLog) reply(text string) string {
	return g.message(map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}}, "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "stop"})
}

func (g *piLog) tool(name string, args map[string]any, result string, isError bool) string {
	g.calls++
	id := fmt.Sprintf("toolu_pi_%03d", g.calls)
	first := g.message(map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "toolCall", "id": id, "name": name, "arguments": args}},
		"provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "toolUse"})
	g.message(map[string]any{"role": "toolResult", "toolCallId": id, "toolName": name, "content": []any{map[string]any{"type": "text", "text": result}}, "isError": isError})
	return first
}

func (g *piLog) bash(cmd, out string, exit int) string {
	if exit != 0 {
		return g.tool("bash", map[string]any{"command": cmd}, fmt.Sprintf("%s\n\nCommand exited with code %d", out, exit), true)
	}
	return g.tool("bash", map[string]any{"command": cmd}, out, false)
}

// syntheticPiRoll: "stale state is carried" and pi's summary — a pi
// compaction whose summary has a blocker, a fenced layout tree, next steps
// naming directories and a bold note, followed by the work that does those
// steps, a resolved edit mismatch and a passing check. The harness's
// compaction rolls pi's capsule with what happened since.
func syntheticPiRoll() []byte {
	g := newPiLog("/work/mono")
	g.user("Split coding-agent into core and modes. Keep the old entry points working.")
	g.bash("git checkout -b refactor/split-modes", "Switched to a new branch 'refactor/split-modes'", 0)
	g.tool("edit", map[string]any{"path": "src/main.ts", "oldText": "import './agent'", "newText": "import './core/session'"}, "Successfully replaced text in src/main.ts.", false)
	// pi compacts between tool calls, keeping the latest call and result.
	kept := g.bash("npm run check", "src/modes/rpc.ts(4,1): error TS2307: Cannot find module '../agent'.", 2)
	g.entry(map[string]any{"type": "compaction", "firstKeptEntryId": kept, "tokensBefore": 48210, "summary": "## Goal\nSplit coding-agent into core and modes, keeping the old entry points working.\n\n" +
		"## Constraints & Preferences\n- Keep the old entry points working\n\n" +
		"## Progress\n### Done\n- [x] Branch refactor/split-modes created\n\n### In Progress\n- [ ] Moving the session code\n\n### Blocked\n- `npm run check` fails: 3 errors in src/modes\n\n" +
		"## Key Decisions\n- **Layout**: the tree below\n```\nsrc/\n├── core/\n│   └── session.ts\n└── modes/\n    └── interactive.ts\n```\n\n" +
		"## Next Steps\n1. Create directories src/core and src/modes\n2. Update ALL imports in src/main.ts\n\n" +
		"## Critical Context\n- Branch: refactor/split-modes\n**lib/api.ts**: posts to NEXT_PUBLIC_API_URL\n"})
	g.bash("mkdir -p src/core src/modes", "", 0)
	g.tool("write", map[string]any{"path": "src/core/session.ts", "content": "export class Session {}\n"}, "Successfully wrote 24 bytes to src/core/session.ts", false)
	g.tool("write", map[string]any{"path": "src/modes/interactive.ts", "content": "import { Session } from '../core/session'\n"}, "Successfully wrote 43 bytes to src/modes/interactive.ts", false)
	g.tool("edit", map[string]any{"path": "src/modes/interactive.ts", "oldText": "import { Session } from '../session'", "newText": "x"}, "Could not find the exact text in src/modes/interactive.ts. The old text must match exactly including all whitespace and newlines.", true)
	g.tool("edit", map[string]any{"path": "src/modes/interactive.ts", "oldText": "import { Session } from '../core/session'", "newText": "import { Session } from '../core/session.js'"}, "Successfully replaced text in src/modes/interactive.ts.", false)
	g.tool("edit", map[string]any{"path": "src/main.ts", "oldText": "import './core/session'", "newText": "import './core/session.js'\nimport './modes/interactive.js'"}, "Successfully replaced text in src/main.ts.", false)
	g.bash("npm run check", "> check\n> tsgo --noEmit\n", 0)
	g.reply("Split done: src/core and src/modes exist, the imports are updated and `npm run check` passes.")
	return g.buf.Bytes()
}

// syntheticClaudeSummary: Claude Code's compaction — a compact boundary and
// its summary in the nine numbered sections, then the work that follows.
func syntheticClaudeSummary() []byte {
	g := newClaudeLog("/work/attr")
	g.user("Fix the humanModified calculation in attribution.go. Do not change the JSON output format.")
	g.tool("Read", map[string]any{"file_path": "/work/attr/attribution.go"}, "     1\tpackage attr\n", false)
	g.reply("The calculation double-counts lines edited by both; I will fix it per file.")
	before := g.parent
	g.parent = nil
	g.line("system", map[string]any{"role": "system", "content": "Conversation compacted"}, map[string]any{"subtype": "compact_boundary",
		"logicalParentUuid": before, "compactMetadata": map[string]any{"trigger": "manual", "preTokens": 61234}})
	summary := "This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\nAnalysis:\nChronologically, the user asked for a fix.\n\nSummary:\n" +
		"1. Primary Request and Intent:\n   - Fix the humanModified calculation in attribution.go without changing the JSON output format.\n" +
		"2. Key Technical Concepts:\n   - per-file line pools\n" +
		"3. Files and Code Sections:\n   - **attribution.go**: computes humanModified per commit\n" +
		"4. Errors and fixes:\n   - none yet\n" +
		"5. Problem Solving:\n   - lines edited by both the agent and the user were counted twice\n" +
		"6. All user messages:\n   - \"Fix the humanModified calculation in attribution.go. Do not change the JSON output format.\"\n" +
		"7. Pending Tasks:\n   - Add a regression test for lines edited by both\n" +
		"8. Current Work:\n   - Changing the pool subtraction in attribution.go\n" +
		"9. Optional Next Step:\n   - Run `go test ./...` after the change\n\nPlease continue the conversation from where we left it off without asking the user any further questions. Continue with the last task that you were asked to work on."
	g.line("user", map[string]any{"role": "user", "content": summary}, map[string]any{"isCompactSummary": true})
	g.tool("Edit", map[string]any{"file_path": "/work/attr/attribution.go", "old_string": "human += n", "new_string": "human += n - both"}, "The file /work/attr/attribution.go has been updated.", false)
	g.tool("Write", map[string]any{"file_path": "/work/attr/attribution_test.go", "content": "package attr\n"}, "File created successfully at: /work/attr/attribution_test.go", false)
	g.bash("go test ./...", "ok  \twork/attr\t0.012s", 0)
	g.reply("Fixed: lines edited by both are counted once; the regression test passes.")
	return g.buf.Bytes()
}

// syntheticClaudeSubagent: a Claude Code subagent's own log, every entry
// isSidechain, which imports as its own conversation.
func syntheticClaudeSubagent() []byte {
	g := newClaudeLog("/work/docs")
	g.sidechain = true
	g.user("Find every place the docs mention the old flag --legacy-output and replace it with --format=legacy.")
	g.bash(`rg -n -- "--legacy-output" docs`, "docs/cli.md:14:  --legacy-output   print the old format", 0)
	g.tool("Edit", map[string]any{"file_path": "/work/docs/docs/cli.md", "old_string": "--legacy-output", "new_string": "--format=legacy"}, "The file /work/docs/docs/cli.md has been updated.", false)
	g.reply("Replaced the one mention in docs/cli.md.")
	return g.buf.Bytes()
}
