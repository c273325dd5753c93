package importer

import "testing"

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
