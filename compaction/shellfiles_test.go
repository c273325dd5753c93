package compaction

import (
	"reflect"
	"slices"
	"testing"
)

// TestShellFileEffects_RC6: files created, changed, moved, deleted and read
// by shell commands, read from the syntax tree; quoted words, expansions and
// /dev are not files.
func TestShellFileEffects_RC6(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want ShellFiles
	}{
		{"cat > src/a.ts <<'EOF'\nexport const a = 1\nEOF", ShellFiles{Written: []string{"src/a.ts"}}},
		{"cd web && echo hi >> notes.md 2>/dev/null", ShellFiles{Written: []string{"web/notes.md"}}},
		{"cp a.txt b.txt && mv old.go new.go", ShellFiles{Written: []string{"b.txt"}, Renamed: [][2]string{{"old.go", "new.go"}}}},
		{"mv a.go b.go lib/", ShellFiles{Renamed: [][2]string{{"a.go", "lib/a.go"}, {"b.go", "lib/b.go"}}}},
		{"rm -rf dist build/out.js", ShellFiles{Deleted: []string{"dist", "build/out.js"}}},
		{"git mv src/x.ts src/y.ts && git rm -q old.ts", ShellFiles{Renamed: [][2]string{{"src/x.ts", "src/y.ts"}}, Deleted: []string{"old.ts"}}},
		{"touch a b && echo x | tee -a log.txt", ShellFiles{Written: []string{"a", "b", "log.txt"}}},
		{"sed -i '' 's/a/b/' src/c.ts", ShellFiles{Written: []string{"src/c.ts"}}},
		{"sed -i -e 's/a/b/' -e 's/c/d/' x.go y.go", ShellFiles{Written: []string{"x.go", "y.go"}}},
		{"sed -n '1,20p' README.md && head -n 5 go.mod && tail -f log", ShellFiles{Read: []string{"README.md", "go.mod", "log"}}},
		{"nl -ba packages/core/x.ts | sed -n '10,20p'", ShellFiles{Read: []string{"packages/core/x.ts"}}},
		{`rg -n "loadConfig" src/app.ts src/`, ShellFiles{Read: []string{"src/app.ts"}}},
		{"grep -n -A 3 TODO docs/plan.md", ShellFiles{Read: []string{"docs/plan.md"}}},
		{"rg -e foo -e bar lib/x.go", ShellFiles{Read: []string{"lib/x.go"}}},
		{`rg --files | rg "config|vitest|test"`, ShellFiles{}},
		{"rg -n loadConfig src .", ShellFiles{}},
		{"cat $F *.go > \"$OUT\"", ShellFiles{}},
		{`git commit -m "rm -rf / and cat > x"`, ShellFiles{}},
		{"echo 'mv a b' > /dev/null", ShellFiles{}},
		{"((", ShellFiles{}},
	} {
		if got := FilesOfCommand(tc.cmd); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", tc.cmd, got, tc.want)
		}
	}
}

// TestDeletionsAndRenamesListed_RC6: a file deleted is listed as deleted,
// not also as modified; written again, it is modified again; a roll replays
// the previous capsule's list and then the new one.
func TestDeletionsAndRenamesListed_RC6(t *testing.T) {
	got := replayModified([]string{"a.go", "docs/plan.md", "b.go"}, []string{"docs/plan.md (deleted)", "a.go → lib/a.go", "b.go (deleted)", "b.go"})
	want := []string{"a.go", "docs/plan.md (deleted)", "a.go → lib/a.go", "b.go"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("files modified %q, want %q", got, want)
	}
}

// TestUnexpandedVariableIsNotAFile_RC6: a path under a directory the
// command names by an unexpanded variable (`cd "$tmpdir"`, a test script's
// scratch directory) is no file of the workspace: never listed.
func TestUnexpandedVariableIsNotAFile_RC6(t *testing.T) {
	for _, cmd := range []string{
		`cd "$tmpdir" && echo '{"enabled": true}' > .entire/settings.json`,
		`cd "${TMP}/repo" && touch a.txt && rm b.txt`,
		`cd $dir; sed -i 's/a/b/' go.mod`,
		`echo x > "$tmpdir"/.entire/settings.json`,
	} {
		if f := FilesOfCommand(cmd); len(f.Written)+len(f.Deleted)+len(f.Renamed)+len(f.Read) > 0 {
			t.Errorf("%s: %+v", cmd, f)
		}
	}
	// A literal directory still places its files.
	if f := FilesOfCommand(`cd sub && echo x > out.txt`); !slices.Equal(f.Written, []string{"sub/out.txt"}) {
		t.Errorf("literal cd: %+v", f)
	}
}
