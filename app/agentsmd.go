package app

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/soba-agent/soba-lsp/workspace"
)

// maxAgentsMD bounds each AGENTS.md read into the system prompt (R-W7): a
// longer file is cut at this size, the cut is said in the prompt and in a
// warning (docs/decisions.md).
const maxAgentsMD = 64 << 10

// agentsInstructions is the AGENTS.md text of the system prompt, in both
// front ends (the cross-agent convention): the user's
// `~/.config/soba/AGENTS.md` (under XDG_CONFIG_HOME when set), then the
// nearest AGENTS.md to the workspace — the root's own, else the closest
// parent directory's.
//
// A project file comes through the same door as the tools' reads (R-W1):
// the workspace's own through the workspace root, one above it through a
// root on the directory that holds it, so it is read only when it is a
// regular file and never through a link leading out of that directory (a
// repository's top-level AGENTS.md linking to ~/.ssh/id_rsa is refused, also
// when a sub-folder is opened). The user's own file is the user's choice and
// may be a link (dotfile managers make them), with the door's other rules.
// Each is read up to maxAgentsMD; a file that cannot be read is a warning,
// and the search stops at the nearest AGENTS.md found, readable or not.
func agentsInstructions(root *workspace.Root, getenv func(string) string) (string, []string) {
	var parts, warnings []string
	add := func(label, path string, open func() (*os.File, error)) bool {
		text, cut, err := readInstructions(open)
		if errors.Is(err, os.ErrNotExist) {
			return false
		}
		var esc *workspace.EscapeError
		switch {
		case errors.As(err, &esc):
			warnings = append(warnings, fmt.Sprintf("AGENTS.md: %s is a link leading out of %s; not followed, left out of the system prompt", path, filepath.Dir(path)))
			return true
		case err != nil:
			warnings = append(warnings, fmt.Sprintf("AGENTS.md: %s: %v; left out of the system prompt", path, err))
			return true
		case cut:
			warnings = append(warnings, fmt.Sprintf("AGENTS.md: %s is over %d bytes; only its first %d bytes are in the system prompt", path, maxAgentsMD, maxAgentsMD))
		}
		if strings.TrimSpace(text) != "" {
			parts = append(parts, fmt.Sprintf("Instructions from %s (%s):\n%s", label, path, strings.TrimSpace(text)))
		}
		return true
	}
	if cfg, err := workspace.UserConfigFile(getenv); err == nil {
		path := filepath.Join(filepath.Dir(cfg), "AGENTS.md")
		add("the user's AGENTS.md", path, func() (*os.File, error) { return workspace.OpenRegularFile(path) })
	}
	if add("the workspace's AGENTS.md", filepath.Join(root.Dir(), "AGENTS.md"), func() (*os.File, error) { return root.Open("AGENTS.md") }) {
		return strings.Join(parts, "\n\n"), warnings
	}
	for dir := filepath.Dir(root.Dir()); ; dir = filepath.Dir(dir) {
		open := func() (*os.File, error) {
			r, err := workspace.NewRoot(dir)
			if err != nil {
				// A directory that cannot be opened (a 0711 /home) has
				// no AGENTS.md the door could read: look further up.
				return nil, fmt.Errorf("%s: %w", dir, os.ErrNotExist)
			}
			defer r.Close() // the open file outlives its root
			return r.Open("AGENTS.md")
		}
		if add("AGENTS.md above the workspace", filepath.Join(dir, "AGENTS.md"), open) || dir == filepath.Dir(dir) {
			break
		}
	}
	return strings.Join(parts, "\n\n"), warnings
}

// readInstructions reads at most maxAgentsMD bytes of the file open gives
// (the door has checked it is regular), reporting whether it was cut; a cut
// text ends with a line saying so, for the model.
func readInstructions(open func() (*os.File, error)) (text string, cut bool, err error) {
	f, err := open()
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxAgentsMD+1))
	if err != nil {
		return "", false, err
	}
	if len(data) > maxAgentsMD {
		return string(data[:maxAgentsMD]) + fmt.Sprintf("\n[cut at %d bytes]", maxAgentsMD), true, nil
	}
	return string(data), false, nil
}
