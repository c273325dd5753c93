package app

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/soba-agent/soba-lsp/workspace"
)

// maxAgentsMD bounds each AGENTS.md read into the system prompt.
const maxAgentsMD = 64 << 10

// agentsInstructions is the AGENTS.md text of the system prompt, in both
// front ends (the cross-agent convention): the user's
// `~/.config/soba/AGENTS.md` (under XDG_CONFIG_HOME when set), then the
// nearest AGENTS.md to the workspace — the root's own, else the closest
// parent directory's. Each file is read only when it is a regular file, up
// to 64 KiB; a file that cannot be read is a warning.
func agentsInstructions(root *workspace.Root, getenv func(string) string) (string, []string) {
	var parts, warnings []string
	add := func(label, path string) bool {
		text, err := readBounded(path)
		if errors.Is(err, os.ErrNotExist) {
			return false
		}
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("AGENTS.md: %s: %v; left out of the system prompt", path, err))
			return true
		}
		if strings.TrimSpace(text) != "" {
			parts = append(parts, fmt.Sprintf("Instructions from %s (%s):\n%s", label, path, strings.TrimSpace(text)))
		}
		return true
	}
	if cfg, err := workspace.UserConfigFile(getenv); err == nil {
		add("the user's AGENTS.md", filepath.Join(filepath.Dir(cfg), "AGENTS.md"))
	}
	if abs, _, err := root.Resolve("AGENTS.md"); err == nil && add("the workspace's AGENTS.md", abs) {
		return strings.Join(parts, "\n\n"), warnings
	}
	for dir := filepath.Dir(root.Dir()); ; dir = filepath.Dir(dir) {
		if add("AGENTS.md above the workspace", filepath.Join(dir, "AGENTS.md")) || dir == filepath.Dir(dir) {
			break
		}
	}
	return strings.Join(parts, "\n\n"), warnings
}

// readBounded reads a regular file of at most maxAgentsMD bytes (a longer
// one is cut, saying so); FIFOs, devices and sockets are refused.
func readBounded(path string) (string, error) {
	// Non-blocking, so a FIFO swapped in after a check cannot hang the
	// open; fstat then refuses it.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", errors.New("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxAgentsMD+1))
	if err != nil {
		return "", err
	}
	if len(data) > maxAgentsMD {
		return string(data[:maxAgentsMD]) + fmt.Sprintf("\n[cut at %d bytes]", maxAgentsMD), nil
	}
	return string(data), nil
}
