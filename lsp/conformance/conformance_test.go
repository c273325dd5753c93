// Package conformance runs the node protocol-conformance test (an
// independent LSP client, vscode-languageserver-protocol) against the built
// soba-lsp binary. It skips when node or the npm packages are not installed;
// test.sh installs them (npm ci) and runs the same test.
package conformance

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestConformanceWithVSCodeClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed; run lsp/conformance/test.sh")
	}
	if _, err := os.Stat("node_modules/vscode-languageserver-protocol"); err != nil {
		t.Skip("npm packages not installed; run lsp/conformance/test.sh (npm ci)")
	}
	bin := filepath.Join(t.TempDir(), "soba-lsp")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/soba-lsp").CombinedOutput(); err != nil {
		t.Fatalf("building soba-lsp: %v\n%s", err, out)
	}
	cmd := exec.Command(node, "--test", "conformance.test.js")
	cmd.Env = append(os.Environ(), "SOBA_LSP="+bin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node conformance test failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
