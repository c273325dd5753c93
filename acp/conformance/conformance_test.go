// Package conformance drives the built `soba-lsp acp` with an independent ACP
// client: the official TypeScript SDK (@agentclientprotocol/sdk), from
// acp.test.mjs, against a scripted fake model server. It skips when node or
// the npm packages are not installed; test.sh installs them (npm ci) and runs
// this test.
package conformance

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
)

// TestACPWithOfficialClient_RB3_RF2_RW3 is the acceptance run: a
// session, a turn with a write_file call approved through
// session/request_permission (the diff shown, R-W3), usage_update, /compact's
// result line (R-B3), a cancelled turn (R-F2), and session/load replaying the
// history from a second process.
func TestACPWithOfficialClient_RB3_RF2_RW3(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed; run acp/conformance/test.sh")
	}
	if _, err := os.Stat("node_modules/@agentclientprotocol/sdk"); err != nil {
		t.Skip("npm packages not installed; run acp/conformance/test.sh (npm ci)")
	}
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
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".soba"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`{
  "model": {"provider": "openai", "baseURL": %q, "name": "fake-model", "apiKeyEnv": "SOBA_TEST_API_KEY", "contextWindow": 65000, "maxOutputTokens": 8000},
  "summaryModel": {"provider": "openai", "baseURL": %q, "name": "fake-summary", "apiKeyEnv": "SOBA_TEST_API_KEY", "contextWindow": 65000, "maxOutputTokens": 8000},
  "compaction": {"keepRecentTokens": 100, "minReclaimableTokens": 100, "minSavingsRatio": 0.1, "timeoutMs": 15000},
  "tools": {"approval": "ask"}
}`, model.URL, summary.URL)
	if err := os.WriteFile(filepath.Join(ws, ".soba", "config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "soba-lsp")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/soba-lsp").CombinedOutput(); err != nil {
		t.Fatalf("building soba-lsp: %v\n%s", err, out)
	}
	cmd := exec.Command(node, "--test", "acp.test.mjs")
	cmd.Env = append(os.Environ(), "SOBA_LSP="+bin, "SOBA_WORKSPACE="+ws, "SOBA_TEST_API_KEY=test",
		"XDG_CONFIG_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node ACP test failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	data, err := os.ReadFile(filepath.Join(ws, "notes.txt"))
	if err != nil || string(data) != "hello from acp\n" {
		t.Fatalf("notes.txt after the approved write: %q, %v", data, err)
	}
}
