package importer

import (
	"slices"
	"testing"
)

// TestReadsInTheCommandsWorkdir_RC6: a file read by a command Codex ran in
// its own workdir (a worktree beside the session's directory) is a file
// read, by its absolute path; one read in /tmp is scratch, and a file the
// command line writes there is not taken as modified.
func TestReadsInTheCommandsWorkdir_RC6(t *testing.T) {
	g := newCodexRollout("/w/repo")
	g.user("Review the worktree.")
	for _, c := range []struct{ cmd, wd string }{
		{"sed -n '1,40p' src/a.ts && rg -n loadConfig src/b.ts", "/w/repo__worktrees/fix"},
		{"cat notes.txt", "/tmp"},
		{"cat > src/c.ts <<'EOF'\nx\nEOF", "/w/repo__worktrees/fix"},
		{"head -5 README.md", ""},
	} {
		args := map[string]any{"cmd": c.cmd}
		if c.wd != "" {
			args["workdir"] = c.wd
		}
		id := g.call("exec_command", args)
		g.output(id, "Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 0\nOriginal token count: 1\nOutput:\nok")
	}
	res, err := Convert(g.buf.Bytes(), Options{Format: FormatCodex})
	if err != nil {
		t.Fatal(err)
	}
	var read, modified []string
	for _, e := range res.Entries {
		if r := e.ToolResult; r != nil && r.Artifacts != nil {
			read = append(read, r.Artifacts.FilesRead...)
			modified = append(modified, r.Artifacts.FilesModified...)
		}
	}
	want := []string{"/w/repo__worktrees/fix/src/a.ts", "/w/repo__worktrees/fix/src/b.ts", "README.md"}
	if !slices.Equal(read, want) || len(modified) != 0 {
		t.Errorf("read %q modified %q, want read %q and nothing modified", read, modified, want)
	}
}
