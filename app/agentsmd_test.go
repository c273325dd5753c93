package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/compaction/tokens"
	"github.com/soba-agent/soba-lsp/workspace"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func getenvOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// The nearest AGENTS.md: the workspace's own wins over a parent's; without
// one, the closest parent's is used; the user's comes first in both cases.
func TestAgentsInstructionsNearestAndUser(t *testing.T) {
	top := t.TempDir()
	xdg := filepath.Join(top, "xdg")
	writeFile(t, filepath.Join(xdg, "soba", "AGENTS.md"), "user rule: answer in English")
	writeFile(t, filepath.Join(top, "AGENTS.md"), "parent rule: use tabs")
	ws := filepath.Join(top, "repo", "ws")
	writeFile(t, filepath.Join(ws, "main.go"), "package main")
	env := getenvOf(map[string]string{"XDG_CONFIG_HOME": xdg})

	root, _ := workspace.NewRoot(ws)
	got, warns := agentsInstructions(root, env)
	if len(warns) != 0 || !strings.Contains(got, "user rule") || !strings.Contains(got, "parent rule") ||
		strings.Index(got, "user rule") > strings.Index(got, "parent rule") {
		t.Fatalf("without a workspace AGENTS.md: %q, %q", got, warns)
	}

	writeFile(t, filepath.Join(ws, "AGENTS.md"), "workspace rule: run go test")
	got, _ = agentsInstructions(root, env)
	if !strings.Contains(got, "workspace rule") || strings.Contains(got, "parent rule") {
		t.Fatalf("the workspace's AGENTS.md must be the one used: %q", got)
	}
}

// A FIFO named AGENTS.md is refused with a warning, never read (R-W1).
func TestAgentsInstructionsRefusesFIFO_RW1(t *testing.T) {
	ws := t.TempDir()
	if err := mkfifo(filepath.Join(ws, "AGENTS.md")); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	root, _ := workspace.NewRoot(ws)
	done := make(chan struct{})
	var warns []string
	go func() {
		defer close(done)
		_, warns = agentsInstructions(root, getenvOf(map[string]string{"XDG_CONFIG_HOME": t.TempDir()}))
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO AGENTS.md blocked")
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "not a regular file") {
		t.Fatalf("warnings = %q", warns)
	}
}

// AGENTS.md is part of the system prompt the model gets, and the budget
// counts it before the first request (R-O1).
func TestAgentsMDInSystemPromptAndBudget_RO1(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	open := func(dir string) (*Workspace, *providertest.Server) {
		srv := providertest.NewOpenAI(t, providertest.Text("ok"))
		load := func(root string, init, change json.RawMessage) (Settings, []string, error) {
			return Settings{Model: ModelSettings{Provider: "openai", BaseURL: srv.URL, Name: "m", ContextWindow: 65000, MaxOutputTokens: 8000},
				Compaction: compaction.DefaultConfig(), Approval: "auto", SessionDir: filepath.Join(root, ".soba", "sessions")}, nil, nil
		}
		counter := tokens.Default()
		ws, _, err := OpenWorkspace(WorkspaceOptions{Root: dir, Load: load, Notifier: &turnEnds{ended: make(chan string, 4)}, Counter: counter,
			EntryTokens: tokens.Estimator{Counter: counter}.EntryTokens})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.Close() })
		return ws, srv
	}
	plainDir, rulesDir := t.TempDir(), t.TempDir()
	rules := "Always run the tests before you say done.\n" + strings.Repeat("Keep functions short and named for what they do. ", 80)
	writeFile(t, filepath.Join(rulesDir, "AGENTS.md"), rules)
	plain, _ := open(plainDir)
	withRules, srv := open(rulesDir)
	b0, _ := plain.Agent().Budget()
	b1, _ := withRules.Agent().Budget()
	if diff := b1.EffectiveTokens - b0.EffectiveTokens; diff < 300 {
		t.Fatalf("the budget counts AGENTS.md as %d tokens (%d vs %d)", diff, b1.EffectiveTokens, b0.EffectiveTokens)
	}
	if _, _, err := withRules.Agent().Prompt("hello"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(srv.Requests()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if reqs := srv.Requests(); len(reqs) == 0 || !strings.Contains(reqs[0].System, "Always run the tests before you say done.") {
		t.Fatalf("the system prompt lacks AGENTS.md")
	}
}

// TestAgentsMDThroughTheDoor_RW1_RW5: AGENTS.md, the workspace's own or one
// above it, comes through the door: a link leading out of the directory
// that holds it is not followed (its target never reaches the prompt, a
// warning says so), a link within that directory is, and a file over the
// bound is cut with a warning.
func TestAgentsMDThroughTheDoor_RW1_RW5(t *testing.T) {
	const secret = "SECRET-OUTSIDE-THE-REPOSITORY"
	for _, tc := range []struct {
		name     string
		setup    func(t *testing.T, top, repo, ws string)
		want     string // in the instructions
		warning  string // in the one warning, "" for none
		mustLack string
	}{
		{"link above the workspace leading out of its folder",
			func(t *testing.T, top, repo, ws string) {
				writeFile(t, filepath.Join(top, "outside", "notes.txt"), secret)
				symlink(t, filepath.Join(top, "outside", "notes.txt"), filepath.Join(repo, "AGENTS.md"))
			}, "", "is a link leading out of", secret},
		{"relative link above the workspace leading out of its folder",
			func(t *testing.T, top, repo, ws string) {
				writeFile(t, filepath.Join(top, "outside", "notes.txt"), secret)
				symlink(t, "../outside/notes.txt", filepath.Join(repo, "AGENTS.md"))
			}, "", "is a link leading out of", secret},
		{"link in the workspace leading out of it",
			func(t *testing.T, top, repo, ws string) {
				writeFile(t, filepath.Join(top, "outside", "notes.txt"), secret)
				symlink(t, filepath.Join(top, "outside", "notes.txt"), filepath.Join(ws, "AGENTS.md"))
			}, "", "is a link leading out of", secret},
		{"link above the workspace within its folder",
			func(t *testing.T, top, repo, ws string) {
				writeFile(t, filepath.Join(repo, "docs", "rules.md"), "repo rule: small commits")
				symlink(t, "docs/rules.md", filepath.Join(repo, "AGENTS.md"))
			}, "repo rule: small commits", "", ""},
		{"directory named AGENTS.md above the workspace",
			func(t *testing.T, top, repo, ws string) {
				if err := os.MkdirAll(filepath.Join(repo, "AGENTS.md"), 0o755); err != nil {
					t.Fatal(err)
				}
			}, "", "is not a regular file", ""},
		{"file over the bound",
			func(t *testing.T, top, repo, ws string) {
				writeFile(t, filepath.Join(ws, "AGENTS.md"), "first rule\n"+strings.Repeat("x", maxAgentsMD)+"LAST-RULE")
			}, "first rule", "only its first 65536 bytes", "LAST-RULE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top := t.TempDir()
			repo := filepath.Join(top, "repo")
			ws := filepath.Join(repo, "sub")
			writeFile(t, filepath.Join(ws, "main.go"), "package main")
			tc.setup(t, top, repo, ws)
			root, err := workspace.NewRoot(ws)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			got, warns := agentsInstructions(root, getenvOf(map[string]string{"XDG_CONFIG_HOME": filepath.Join(top, "xdg")}))
			if tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("instructions %q lack %q", got, tc.want)
			}
			if tc.mustLack != "" && strings.Contains(got, tc.mustLack) {
				t.Errorf("instructions carry %q", tc.mustLack)
			}
			switch {
			case tc.warning == "" && len(warns) != 0:
				t.Errorf("warnings %q, want none", warns)
			case tc.warning != "" && (len(warns) != 1 || !strings.Contains(warns[0], tc.warning)):
				t.Errorf("warnings %q, want one saying %q", warns, tc.warning)
			}
		})
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
