// Package conformance drives the built `soba-lsp acp` with an independent ACP
// client: the official TypeScript SDK (@agentclientprotocol/sdk), from
// acp.test.mjs, against a scripted fake model server. It skips when node or
// the npm packages are not installed; test.sh installs them (npm ci) and runs
// this test.
package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soba-agent/soba-lsp/agent/provider"
	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
)

// TestACPWithOfficialClient_RB3_RF2_RW3 is the acceptance run: a
// session, a turn with a write_file call approved through
// session/request_permission (the diff shown, R-W3), usage_update, /compact's
// result line (R-B3), a cancelled turn (R-F2), and session/load replaying the
// history from a second process.
func TestACPWithOfficialClient_RB3_RF2_RW3(t *testing.T) {
	node := needNode(t)
	filler := "x"
	for len(filler) < 4000 {
		filler += " filler words for the history"
	}
	model := providertest.NewOpenAI(t,
		providertest.Call("c1", "write_file", map[string]any{"path": "notes.txt", "content": "hello from acp\n"}),
		providertest.Text("Wrote notes.txt. "+filler),
		providertest.Call("c2", "mcp__everything__echo", map[string]any{"message": "hello over ACP"}),
		providertest.Text("Echoed."),
		providertest.Text("Second answer. "+filler),
		providertest.Reply{Text: "too late", Delay: 60 * time.Second},
	)
	summary := providertest.NewOpenAI(t, providertest.Text("## Goal\nwrite notes\n## Done\n- wrote notes.txt\n"))
	summary.RepeatLast()
	ws, configHome := workspaceDir(t, model.URL, summary.URL)
	runNode(t, node, "acp.test.mjs", ws, configHome)
	data, err := os.ReadFile(filepath.Join(ws, "notes.txt"))
	if err != nil || string(data) != "hello from acp\n" {
		t.Fatalf("notes.txt after the approved write: %q, %v", data, err)
	}
}

// needNode skips without node or the npm packages (test.sh installs them).
func needNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed; run acp/conformance/test.sh")
	}
	if _, err := os.Stat("node_modules/@agentclientprotocol/sdk"); err != nil {
		t.Skip("npm packages not installed; run acp/conformance/test.sh (npm ci)")
	}
	return node
}

// workspaceDir makes a workspace (its real path) and the user's
// configuration directory, whose soba/config.json names the fake model and
// summary model, two named models (models: main and alt, on the fake
// model's server), with approvals asked for: the user's file, since an
// untrusted workspace's own .soba/config.json may not choose the model
// server (R-W5).
func workspaceDir(t *testing.T, modelURL, summaryURL string) (ws, configHome string) {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	configHome = t.TempDir()
	if err := os.MkdirAll(filepath.Join(configHome, "soba"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`{
  "model": {"provider": "openai", "baseURL": %q, "name": "fake-model", "apiKeyEnv": "SOBA_TEST_API_KEY", "contextWindow": 65000, "maxOutputTokens": 8000},
  "summaryModel": {"provider": "openai", "baseURL": %q, "name": "fake-summary", "apiKeyEnv": "SOBA_TEST_API_KEY", "contextWindow": 65000, "maxOutputTokens": 8000},
  "compaction": {"keepRecentTokens": 100, "minReclaimableTokens": 100, "minSavingsRatio": 0.1, "timeoutMs": 15000},
  "tools": {"approval": "ask"},
  "models": {
    "main": {"provider": "openai", "baseURL": %q, "name": "fake-model", "apiKeyEnv": "SOBA_TEST_API_KEY", "contextWindow": 65000, "maxOutputTokens": 8000},
    "alt": {"provider": "openai", "baseURL": %q, "name": "fake-alt", "apiKeyEnv": "SOBA_TEST_API_KEY", "contextWindow": 65000, "maxOutputTokens": 8000}
  }
}`, modelURL, summaryURL, modelURL, modelURL)
	if err := os.WriteFile(filepath.Join(configHome, "soba", "config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws, configHome
}

// runNode builds soba-lsp and runs one node test file against it in ws,
// with the user's configuration in configHome.
func runNode(t *testing.T, node, file, ws, configHome string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "soba-lsp")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/soba-lsp").CombinedOutput(); err != nil {
		t.Fatalf("building soba-lsp: %v\n%s", err, out)
	}
	cmd := exec.Command(node, "--test", file)
	cmd.Env = append(os.Environ(), "SOBA_LSP="+bin, "SOBA_WORKSPACE="+ws, "SOBA_TEST_API_KEY=test",
		"XDG_CONFIG_HOME="+configHome, "XDG_STATE_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node ACP test %s failed: %v\n%s", file, err, out)
	}
	t.Logf("%s", out)
}

// TestACPEditorDelegationWithOfficialClient_RW1: a client that offers its
// file system and terminal sees read_file, write_file, edit_file and bash
// reach it, with the workspace's absolute paths, and the model reads the
// editor's unsaved buffer, not the disk; the edit's permission shows the
// diff against that buffer (R-W3); a cancelled turn kills and releases its
// terminal. Then PromptResponse.usage, $/cancel_request (-32800),
// session/list without cwd and session/delete.
func TestACPEditorDelegationWithOfficialClient_RW1(t *testing.T) {
	node := needNode(t)
	use := func(in, out, cached int) *provider.Usage {
		return &provider.Usage{InputTokens: in, OutputTokens: out, CachedTokens: cached}
	}
	model := providertest.NewOpenAI(t,
		providertest.Reply{ToolCalls: []provider.ToolCall{{ID: "e1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.txt"}`)}}, Usage: use(100, 10, 40)},
		providertest.Reply{ToolCalls: []provider.ToolCall{{ID: "e2", Name: "write_file", Arguments: json.RawMessage(`{"path":"sub/b.txt","content":"from the agent\n"}`)}}, Usage: use(200, 20, 80)},
		// Zero usage: the turn's usage stays the sum of the other four.
		providertest.Reply{ToolCalls: []provider.ToolCall{{ID: "e2b", Name: "edit_file", Arguments: json.RawMessage(`{"path":"a.txt","old_text":"unsaved","new_text":"edited"}`)}}, Usage: use(0, 0, 0)},
		providertest.Reply{ToolCalls: []provider.ToolCall{{ID: "e3", Name: "bash", Arguments: json.RawMessage(`{"command":"echo hi; exit 3"}`)}}, Usage: use(300, 30, 120)},
		providertest.Reply{Text: "Done editing.", Usage: use(400, 40, 160)},
		providertest.Call("e4", "bash", map[string]any{"command": "sleep 100"}),
		providertest.Reply{Text: "too late", Delay: 60 * time.Second},
	)
	ws, configHome := workspaceDir(t, model.URL, model.URL)
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("text on disk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runNode(t, node, "editor.test.mjs", ws, configHome)
	reqs := model.Requests()
	if len(reqs) < 2 {
		t.Fatalf("the model got %d requests", len(reqs))
	}
	read := toolResults(reqs[1])
	if !strings.Contains(read, "unsaved buffer text") || strings.Contains(read, "text on disk") {
		t.Fatalf("the model read %q, want the editor's unsaved buffer", read)
	}
	if _, err := os.Stat(filepath.Join(ws, "sub", "b.txt")); err == nil {
		t.Fatal("sub/b.txt was written to disk by the agent; the editor was to write it")
	}
	if len(reqs) >= 5 {
		if out := toolResults(reqs[4]); !strings.Contains(out, "hi") || !strings.Contains(out, "[exit code 3]") {
			t.Fatalf("the bash result the model read: %q", out)
		}
	}
}

// toolResults are the tool messages of a model request, joined.
func toolResults(r providertest.Received) string {
	var b strings.Builder
	for _, m := range r.Messages {
		if m.Role == "tool" {
			b.WriteString(m.Text)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// TestAcpxDrivesSobaACP_RW3_RF2: a second, independent client from npm,
// acpx, drives the built binary through acpx.sh: a one-shot prompt whose
// write asks for permission, a named session (new, prompt, list, a config
// option change recorded in the transcript, close) and a cancelled prompt
// whose bash runs in acpx's terminal.
func TestAcpxDrivesSobaACP_RW3_RF2(t *testing.T) {
	needNode(t)
	if _, err := os.Stat("node_modules/.bin/acpx"); err != nil {
		t.Skip("acpx not installed; run acp/conformance/test.sh (npm ci)")
	}
	model := providertest.NewOpenAI(t,
		providertest.Call("w1", "write_file", map[string]any{"path": "notes.txt", "content": "hello from acpx\n"}),
		providertest.Text("Wrote notes.txt."),
		providertest.Text("Named session answer."),
		providertest.Call("b1", "bash", map[string]any{"command": "sleep 30"}),
		providertest.Text("after the long one"),
	)
	ws, configHome := workspaceDir(t, model.URL, model.URL)
	bin := filepath.Join(t.TempDir(), "soba-lsp")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/soba-lsp").CombinedOutput(); err != nil {
		t.Fatalf("building soba-lsp: %v\n%s", err, out)
	}
	home := t.TempDir()
	cmd := exec.Command("bash", "acpx.sh")
	cmd.Env = append(os.Environ(), "SOBA_LSP="+bin, "SOBA_WORKSPACE="+ws, "SOBA_TEST_API_KEY=test", "HOME="+home,
		"XDG_CONFIG_HOME="+configHome, "XDG_STATE_HOME="+filepath.Join(home, "state"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("acpx.sh failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
