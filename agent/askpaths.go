package agent

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/tool"
)

// AskPath is one kind of workspace file whose writes are asked every time
// (SPEC R-W6): a file that makes another program run code, so a write the
// user allowed "for this session" on an ordinary file must not cover it.
type AskPath struct {
	// Pattern is a glob over the slash-separated workspace path, matched
	// without regard to case (a case-insensitive file system opens .GIT as
	// .git): `*` within a name, `**` across directories.
	Pattern string
	// Why completes "asked every time: PATH — …" in the question.
	Why string
}

// AskPaths is the one list of R-W6 (docs/security.md is checked against it).
// The first pattern that matches gives the reason. It is apart from the R-W2
// receipts (protect.go), which the tools never write at all: those are
// refused, these are asked.
var AskPaths = []AskPath{
	{"**/.git", "a `.git` file names the repository git uses"},
	{"**/.git/**", "git runs commands from it (hooks, `core.fsmonitor`, `core.hooksPath`, filters)"},
	{"**/.vscode/**", "VS Code runs commands from it (tasks with `runOn: folderOpen`, launch configurations, settings that name programs)"},
	{"**/.idea/**", "JetBrains IDEs run commands from it (run configurations, startup tasks, external tools)"},
	{"**/.envrc", "direnv runs it as a shell script when you enter the directory"},
	{"**/.env*", "programs load it into their environment (and it often holds secrets)"},
	{".github/workflows/**", "GitHub Actions runs it, with the repository's secrets, on the next push"},
	{"**/.husky/**", "husky runs it at each git commit and push"},
	{".soba/skills/**", "a skill is instructions the model follows"},
	{".soba/**", "SOBA's own files steer the agent (its configuration, instructions and memory)"},
}

// askPathFor returns the AskPaths entry rel falls under, if any.
func askPathFor(rel string) (AskPath, bool) {
	rel = strings.ToLower(path.Clean(rel))
	for _, p := range AskPaths {
		if ok, _ := doublestar.Match(strings.ToLower(p.Pattern), rel); ok {
			return p, true
		}
	}
	return AskPath{}, false
}

// autoApproved reports whether one of the user's tools.autoApprovePaths
// patterns covers rel.
func autoApproved(rel string, patterns []string) bool {
	rel = strings.ToLower(path.Clean(rel))
	for _, p := range patterns {
		if ok, _ := doublestar.Match(strings.ToLower(path.Clean(p)), rel); ok {
			return true
		}
	}
	return false
}

// AskPathsMarkdown is the table of docs/security.md's R-W6 section.
func AskPathsMarkdown() string {
	var b strings.Builder
	b.WriteString("| path (glob, any case) | asked every time because |\n| --- | --- |\n")
	for _, p := range AskPaths {
		fmt.Fprintf(&b, "| `%s` | %s |\n", p.Pattern, p.Why)
	}
	return b.String()
}

// writtenPaths are the workspace paths (slash-separated, relative to the
// root) a call writes, as far as can be told before it runs: a write's or an
// edit's path and, when it is a link inside the workspace, the file it leads
// to; for bash, the files its command line writes, deletes or renames as
// the shell parser reads it (compaction.FilesOfCommand), joined to the
// directories it `cd`s to. A path outside the workspace, or one the parser
// cannot read (an expansion, a script that writes by itself), is not
// listed: the parser sees redirections and the usual commands, not what a
// program does once it runs (docs/security.md "What is not confined").
func (env *toolEnv) writtenPaths(call session.ToolCall) []string {
	var out []string
	add := func(p string) {
		if p != "" && p != "." && !strings.HasPrefix(p, "../") && p != ".." {
			out = appendUnique(out, p)
		}
	}
	switch call.Name {
	case tool.WriteFile, tool.EditFile:
		var a struct {
			Path string `json:"path"`
		}
		if json.Unmarshal(call.Arguments, &a) != nil || a.Path == "" {
			return nil
		}
		if env.root == nil {
			add(path.Clean(filepath.ToSlash(a.Path)))
			return out
		}
		_, rel, err := env.root.Resolve(a.Path)
		if err != nil {
			return nil
		}
		add(rel)
		if real, err := env.root.Real(rel); err == nil {
			add(real)
		}
	case tool.Bash:
		var a struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(call.Arguments, &a) != nil || a.Command == "" {
			return nil
		}
		f := compaction.FilesOfCommand(a.Command)
		ps := append(append([]string{}, f.Written...), f.Deleted...)
		for _, r := range f.Renamed {
			ps = append(ps, r[0], r[1])
		}
		for _, p := range ps {
			rel := env.workspaceRel(p)
			add(rel)
			if env.root != nil && rel != "" {
				if real, err := env.root.Real(rel); err == nil {
					add(real) // a link the command writes through
				}
			}
		}
	}
	return out
}

// workspaceRel makes a path a shell command names (relative to the
// workspace root, where bash runs, or absolute) workspace-relative; "" when
// it lies outside or starts at the home directory.
func (env *toolEnv) workspaceRel(p string) string {
	if strings.HasPrefix(p, "~") {
		return ""
	}
	if !path.IsAbs(p) {
		return path.Clean(p)
	}
	if env.dir == "" {
		return ""
	}
	rel, err := filepath.Rel(env.dir, filepath.FromSlash(p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return ""
	}
	return filepath.ToSlash(rel)
}
