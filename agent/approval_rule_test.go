package agent

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/tool"
	"github.com/soba-agent/soba-lsp/workspace"
)

var updateDocs = flag.Bool("update", false, "rewrite docs/security.md's protected-path table from AskPaths")

// TestApprovalRule_RW3_RW6: the one rule that decides run, ask, ask every
// time or refuse, as a table of (tool, paths, settings, session answer).
func TestApprovalRule_RW3_RW6(t *testing.T) {
	receipts := protectedPaths("/ws", "/ws/.soba/sessions", "/ws/.soba/flight")
	tests := []struct {
		name     string
		c        approvalCase
		want     Verdict
		wantPath string
	}{
		{"read needs nothing", approvalCase{Tool: tool.ReadFile, Approval: "ask"}, VerdictRun, ""},
		{"write asked under ask", approvalCase{Tool: tool.WriteFile, Paths: []string{"a.go"}, Approval: "ask"}, VerdictAsk, ""},
		{"write runs under auto", approvalCase{Tool: tool.WriteFile, Paths: []string{"a.go"}, Approval: "auto"}, VerdictRun, ""},
		{"write allowed for the session", approvalCase{Tool: tool.WriteFile, Paths: []string{"a.go"}, Approval: "ask", SessionAllowed: true}, VerdictRun, ""},
		{"bash asked under ask", approvalCase{Tool: tool.Bash, Approval: "ask"}, VerdictAsk, ""},
		{"git hook after allow for session", approvalCase{Tool: tool.WriteFile, Paths: []string{".git/hooks/pre-commit"}, Approval: "ask", SessionAllowed: true}, VerdictAskEveryTime, ".git/hooks/pre-commit"},
		{"git config under auto", approvalCase{Tool: tool.EditFile, Paths: []string{".git/config"}, Approval: "auto"}, VerdictAskEveryTime, ".git/config"},
		{"a .git file", approvalCase{Tool: tool.WriteFile, Paths: []string{"sub/.git"}, Approval: "auto"}, VerdictAskEveryTime, "sub/.git"},
		{"upper case .GIT", approvalCase{Tool: tool.WriteFile, Paths: []string{".GIT/hooks/post-checkout"}, Approval: "auto"}, VerdictAskEveryTime, ".GIT/hooks/post-checkout"},
		{"vscode tasks", approvalCase{Tool: tool.WriteFile, Paths: []string{".vscode/tasks.json"}, Approval: "auto"}, VerdictAskEveryTime, ".vscode/tasks.json"},
		{"nested vscode", approvalCase{Tool: tool.WriteFile, Paths: []string{"pkg/.vscode/settings.json"}, Approval: "auto"}, VerdictAskEveryTime, "pkg/.vscode/settings.json"},
		{"idea", approvalCase{Tool: tool.WriteFile, Paths: []string{".idea/workspace.xml"}, Approval: "auto"}, VerdictAskEveryTime, ".idea/workspace.xml"},
		{"envrc", approvalCase{Tool: tool.WriteFile, Paths: []string{".envrc"}, Approval: "auto"}, VerdictAskEveryTime, ".envrc"},
		{"env.local", approvalCase{Tool: tool.WriteFile, Paths: []string{"app/.env.local"}, Approval: "auto"}, VerdictAskEveryTime, "app/.env.local"},
		{"workflow", approvalCase{Tool: tool.WriteFile, Paths: []string{".github/workflows/ci.yml"}, Approval: "auto"}, VerdictAskEveryTime, ".github/workflows/ci.yml"},
		{"other .github file", approvalCase{Tool: tool.WriteFile, Paths: []string{".github/CODEOWNERS"}, Approval: "auto"}, VerdictRun, ""},
		{"husky", approvalCase{Tool: tool.WriteFile, Paths: []string{".husky/pre-push"}, Approval: "auto"}, VerdictAskEveryTime, ".husky/pre-push"},
		{"skill", approvalCase{Tool: tool.WriteFile, Paths: []string{".soba/skills/x/SKILL.md"}, Approval: "auto"}, VerdictAskEveryTime, ".soba/skills/x/SKILL.md"},
		{"a link's target counts", approvalCase{Tool: tool.WriteFile, Paths: []string{"hook", ".git/hooks/pre-commit"}, Approval: "ask", SessionAllowed: true}, VerdictAskEveryTime, ".git/hooks/pre-commit"},
		{"bash writing a hook", approvalCase{Tool: tool.Bash, Paths: []string{".git/hooks/pre-commit"}, Approval: "auto"}, VerdictAskEveryTime, ".git/hooks/pre-commit"},
		{"receipt refused for write_file", approvalCase{Tool: tool.WriteFile, Paths: []string{".soba/config.json"}, Approval: "auto", Receipts: receipts}, VerdictRefuse, ".soba/config.json"},
		{"receipt asked every time for bash", approvalCase{Tool: tool.Bash, Paths: []string{".soba/sessions/s.jsonl"}, Approval: "auto", Receipts: receipts}, VerdictAskEveryTime, ".soba/sessions/s.jsonl"},
		{"user's autoApprovePaths under auto", approvalCase{Tool: tool.WriteFile, Paths: []string{".vscode/settings.json"}, Approval: "auto", AutoApprovePaths: []string{".vscode/**"}}, VerdictRun, ""},
		{"user's autoApprovePaths and session", approvalCase{Tool: tool.WriteFile, Paths: []string{".vscode/settings.json"}, Approval: "ask", SessionAllowed: true, AutoApprovePaths: []string{".vscode/settings.json"}}, VerdictRun, ""},
		{"autoApprovePaths still asks under ask", approvalCase{Tool: tool.WriteFile, Paths: []string{".vscode/settings.json"}, Approval: "ask", AutoApprovePaths: []string{".vscode/**"}}, VerdictAsk, ""},
		{"autoApprovePaths names another path", approvalCase{Tool: tool.WriteFile, Paths: []string{".vscode/tasks.json"}, Approval: "auto", AutoApprovePaths: []string{".vscode/settings.json"}}, VerdictAskEveryTime, ".vscode/tasks.json"},
		{"MCP server's ask over auto", approvalCase{Tool: "mcp__s__t", MCP: true, ServerApproval: "ask", Approval: "auto"}, VerdictAsk, ""},
		{"MCP server's auto over ask", approvalCase{Tool: "mcp__s__t", MCP: true, ServerApproval: "auto", Approval: "ask"}, VerdictRun, ""},
		{"MCP follows tools.approval", approvalCase{Tool: "mcp__s__t", MCP: true, Approval: "ask"}, VerdictAsk, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := decideApproval(tc.c)
			if got.Verdict != tc.want || got.Path != tc.wantPath {
				t.Fatalf("decideApproval = %+v, want verdict %d on %q", got, tc.want, tc.wantPath)
			}
			if (got.Verdict == VerdictAskEveryTime || got.Verdict == VerdictRefuse) && got.Why == "" {
				t.Fatal("no reason given")
			}
		})
	}
}

// TestWrittenPaths_RW6: the paths a call writes, as the approval rule sees
// them: a write's path and its link's target, and what the shell parser
// reads a command line to write, delete or rename, relative to the
// workspace.
func TestWrittenPaths_RW6(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".git/hooks", filepath.Join(dir, "hooks")); err != nil {
		t.Fatal(err)
	}
	root, err := workspace.NewRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	env := &toolEnv{root: root, dir: root.Dir()}
	call := func(name string, args any) session.ToolCall {
		b, _ := json.Marshal(args)
		return session.ToolCall{Name: name, Arguments: b}
	}
	tests := []struct {
		call session.ToolCall
		want string
	}{
		{call(tool.WriteFile, map[string]any{"path": "a.go", "content": ""}), "a.go"},
		{call(tool.WriteFile, map[string]any{"path": "hooks/pre-commit", "content": ""}), "hooks/pre-commit .git/hooks/pre-commit"},
		{call(tool.EditFile, map[string]any{"path": filepath.Join(root.Dir(), ".git", "config"), "old_text": "a", "new_text": "b"}), ".git/config"},
		{call(tool.Bash, map[string]any{"command": "echo 'exec evil' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit"}), ".git/hooks/pre-commit"},
		{call(tool.Bash, map[string]any{"command": "cd .git && git config core.fsmonitor evil >> config"}), ".git/config"},
		{call(tool.Bash, map[string]any{"command": "printf 'eval x' | tee .envrc"}), ".envrc"},
		{call(tool.Bash, map[string]any{"command": "sed -i s/a/b/ .vscode/tasks.json"}), ".vscode/tasks.json"},
		{call(tool.Bash, map[string]any{"command": "cp evil.yml .github/workflows/ci.yml"}), ".github/workflows/ci.yml"},
		{call(tool.Bash, map[string]any{"command": "mv x .husky/pre-push"}), "x .husky/pre-push"},
		{call(tool.Bash, map[string]any{"command": "echo hi > " + filepath.Join(root.Dir(), ".env")}), ".env"},
		{call(tool.Bash, map[string]any{"command": "echo hi > hooks/post-merge"}), "hooks/post-merge .git/hooks/post-merge"},
		{call(tool.Bash, map[string]any{"command": "echo hi > ../outside.txt; echo > ~/.bashrc"}), ""},
		{call(tool.Bash, map[string]any{"command": "go test ./..."}), ""},
	}
	for _, tc := range tests {
		if got := strings.Join(env.writtenPaths(tc.call), " "); got != tc.want {
			t.Errorf("%s %s: written = %q, want %q", tc.call.Name, tc.call.Arguments, got, tc.want)
		}
	}
}

// TestAskPathsDoc_RW6: docs/security.md lists AskPaths as they are; `go
// test ./agent -run TestAskPathsDoc_RW6 -args -update` rewrites the table.
func TestAskPathsDoc_RW6(t *testing.T) {
	const (
		file  = "../docs/security.md"
		begin = "<!-- BEGIN protected-path table generated from agent/askpaths.go by `go test ./agent -run TestAskPathsDoc_RW6 -args -update`; do not edit by hand -->"
		end   = "<!-- END protected-path table -->"
	)
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q … %q block", file, begin, end)
	}
	want := s[:i+len(begin)] + "\n\n" + AskPathsMarkdown() + "\n" + s[j:]
	if want == s {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(file, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's protected-path table differs from AskPaths; run go test ./agent -run TestAskPathsDoc_RW6 -args -update", file)
}
