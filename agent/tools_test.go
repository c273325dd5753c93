package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/tool"
	"github.com/soba-agent/soba-lsp/workspace"
)

// searchWorkspace is a workspace with files the model should and should not
// see: sources, a .gitignore'd build directory and log, node_modules, .git
// and a binary file.
func searchWorkspace(t *testing.T) *toolEnv {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{
		".gitignore":               "dist/\n*.log\n",
		"a.go":                     "package a\n\n// needle in a\n",
		"sub/b.go":                 "package sub\nvar x = \"needle\"\n",
		"notes.md":                 "# Notes\n",
		"dist/out.js":              "needle()\n",
		"build.log":                "needle failed\n",
		"node_modules/x/index.js":  "needle\n",
		".git/config":              "needle\n",
		"bin.dat":                  "needle\x00\x01",
		".soba/sessions/s_1.jsonl": "needle\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := workspace.NewRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &toolEnv{root: root, dir: root.Dir(), skills: &skillSet{root: root}, protected: protectedPaths(root.Dir(), "", "")}
}

func runTool(env *toolEnv, name, args string) toolRun {
	return env.run(context.Background(), session.ToolCall{ID: "x", Name: name, Arguments: json.RawMessage(args)})
}

// TestListFiles_RC2: list_files lists the workspace's files, leaves out what
// .gitignore ignores and the directories never listed, lists an ignored
// directory the model names, and filters by a glob on the name.
func TestListFiles_RC2(t *testing.T) {
	env := searchWorkspace(t)
	for _, tc := range []struct {
		name, args string
		want       []string
	}{
		{"the whole workspace", `{}`, []string{".gitignore", "a.go", "bin.dat", "notes.md", "sub/b.go"}},
		{"a glob on the name", `{"pattern":"*.go"}`, []string{"a.go", "sub/b.go"}},
		{"a directory", `{"path":"sub"}`, []string{"sub/b.go"}},
		{"an ignored directory, named", `{"path":"dist"}`, []string{"dist/out.js"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runTool(env, "list_files", tc.args)
			if !r.ok {
				t.Fatalf("failed: %s", r.content)
			}
			if got := strings.Split(r.content, "\n"); !slices.Equal(got, tc.want) {
				t.Errorf("listed %q, want %q", got, tc.want)
			}
		})
	}
	if r := runTool(env, "list_files", `{"pattern":"["}`); r.ok || !strings.Contains(r.content, "bad pattern") {
		t.Errorf("a bad glob: ok=%v %q", r.ok, r.content)
	}
	if r := runTool(env, "list_files", `{"path":"sub","pattern":"*.md"}`); !r.ok || r.content != "(no files)" {
		t.Errorf("nothing to list: ok=%v %q", r.ok, r.content)
	}
}

// TestGrep_RC2: grep prints path:line: text for every match outside ignored
// paths and binary files, records the files it found matches in as read
// (R-C2), searches an ignored directory the model names, and refuses a bad
// pattern.
func TestGrep_RC2(t *testing.T) {
	env := searchWorkspace(t)
	r := runTool(env, "grep", `{"pattern":"needle"}`)
	if !r.ok {
		t.Fatalf("grep failed: %s", r.content)
	}
	if want := "a.go:3: // needle in a\nsub/b.go:2: var x = \"needle\""; r.content != want {
		t.Errorf("grep printed %q, want %q", r.content, want)
	}
	if r.artifacts == nil || !slices.Equal(r.artifacts.FilesRead, []string{"a.go", "sub/b.go"}) {
		t.Errorf("files read %+v", r.artifacts)
	}
	if r := runTool(env, "grep", `{"pattern":"needle","path":"dist"}`); !r.ok || r.content != "dist/out.js:1: needle()" {
		t.Errorf("grep in a named ignored directory: ok=%v %q", r.ok, r.content)
	}
	if r := runTool(env, "grep", `{"pattern":"needle","path":"a.go"}`); !r.ok || r.content != "a.go:3: // needle in a" {
		t.Errorf("grep in one file: ok=%v %q", r.ok, r.content)
	}
	if r := runTool(env, "grep", `{"pattern":"nothing-like-this"}`); !r.ok || r.content != "(no matches)" {
		t.Errorf("no matches: ok=%v %q", r.ok, r.content)
	}
	if r := runTool(env, "grep", `{"pattern":"("}`); r.ok || !strings.Contains(r.content, "bad pattern") {
		t.Errorf("a bad pattern: ok=%v %q", r.ok, r.content)
	}
}

// TestToolResultSummaries: the summary an editor shows on a tool card says
// what the call did (issue 19: "a real result summary", not the output's
// first line), from the call's own run.
func TestToolResultSummaries(t *testing.T) {
	env := searchWorkspace(t)
	big := strings.Repeat("line\n", 250)
	if err := os.WriteFile(filepath.Join(env.dir, "big.txt"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, tool, args, want string
	}{
		{"whole file", tool.ReadFile, `{"path":"big.txt","limit":1000}`, "250 lines"},
		{"a window", tool.ReadFile, `{"path":"big.txt","offset":11,"limit":20}`, "lines 11-30 of 250"},
		{"one match", tool.Grep, `{"pattern":"^line$","path":"big.txt"}`, "250 matches in 1 file"},
		{"no match", tool.Grep, `{"pattern":"zzz-not-there"}`, "no matches"},
		{"a listing", tool.ListFiles, `{"pattern":"big.txt"}`, "1 file"},
		{"a passing command", tool.Bash, `{"command":"printf 'a\\nb\\nok  pkg 0.1s\\n'"}`, "exit 0 · 3 lines · ok  pkg 0.1s"},
		{"a failing command", tool.Bash, `{"command":"echo FAIL ./x; exit 3"}`, "exit 3 · 1 line · FAIL ./x"},
		{"a silent command", tool.Bash, `{"command":"true"}`, "exit 0 · no output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := runTool(env, tc.tool, tc.args)
			if run.summary != tc.want {
				t.Fatalf("summary %q, want %q (content %.200q)", run.summary, tc.want, run.content)
			}
		})
	}
}
