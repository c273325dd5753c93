package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/compaction"
)

// TestFlagsStandAnywhere: the command lines as README.md and docs/cli.md
// write them (flags after the file) run as printed, flags first still
// work, and a wrong count of arguments says so before the usage.
func TestFlagsStandAnywhere(t *testing.T) {
	ws := t.TempDir()
	src, err := filepath.Abs("../../testdata/imports/claude-code.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	session := filepath.Join(ws, "s.jsonl")
	cfg := filepath.Join(ws, "config.json")
	if err := os.WriteFile(cfg, []byte(`{"compaction":{"keepRecentTokens":0}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		code     int
		inStdout string
		inStderr string
	}{
		{"import, -o after the file", []string{"import", src, "-o", session}, 0, session, ""},
		{"budget, --config after the file", []string{"budget", session, "--config", cfg}, 0, `"hardLimit"`, ""},
		{"budget, --config first", []string{"budget", "--config", cfg, session}, 0, `"hardLimit"`, ""},
		{"compact, --trigger after the file", []string{"compact", "--dry-run", session, "--trigger", "user"}, 0, "", "user"},
		{"verify, two files", []string{"verify", session, session}, 2, "", "want 1 argument, got 2"},
		{"import, no file", []string{"import"}, 2, "", "want 1 argument, got 0"},
		{"capsule show --help", []string{"capsule", "show", "--help"}, 2, "", "usage: soba-lsp capsule show"},
		{"capsule export, --overwrite before the files", []string{"capsule", "export", "--overwrite", session, "latest", filepath.Join(ws, "a.capsule.md")}, 0, "a.capsule.md", ""},
		{"capsule export, --overwrite last", []string{"capsule", "export", session, "latest", filepath.Join(ws, "a.capsule.md"), "--overwrite"}, 0, "a.capsule.md", ""},
		{"capsule export, no --overwrite", []string{"capsule", "export", session, "latest", filepath.Join(ws, "a.capsule.md")}, 1, "", "exists; pass --overwrite"},
		{"budget of a foreign transcript", []string{"budget", src}, 1, "", "holds a transcript of Claude Code, not a SOBA session: convert it first with `soba-lsp import " + src + "`"},
		{"compact of a foreign transcript", []string{"compact", "--dry-run", src}, 1, "", "convert it first with `soba-lsp import " + src + "`"},
		{"replay of a short session", []string{"replay", session}, 0, "no compaction was needed", ""},
		{"replay with --config after the file", []string{"replay", session, "--config", cfg}, 0, "replayed", ""},
		{"replay, two files", []string{"replay", session, session}, 2, "", "want at most one session file, got 2"},
	}
	for _, tt := range tests {
		out, errs, code := runCLI(t, ws, tt.args...)
		if code != tt.code || !strings.Contains(out, tt.inStdout) || !strings.Contains(errs, tt.inStderr) {
			t.Errorf("%s: soba-lsp %s: exit %d (want %d)\nstdout: %s\nstderr: %s", tt.name, strings.Join(tt.args, " "), code, tt.code, out, errs)
		}
	}
}

// TestReplayWindowKeepsTheKeepShare: a smaller --context-window keeps the
// configured keep window's share of the hard limit instead of failing
// validation (`replay --context-window 30000` runs as docs/cli.md prints it).
func TestReplayWindowKeepsTheKeepShare(t *testing.T) {
	def := compaction.DefaultConfig()
	var out strings.Builder
	cfg := withWindow(def, 30000, &out)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("--context-window 30000: %v", err)
	}
	want := float64(def.KeepRecentTokens) / float64(def.HardLimit())
	if got := float64(cfg.KeepRecentTokens) / float64(cfg.HardLimit()); got > want || want-got > 0.01 {
		t.Errorf("keep share %.3f, want %.3f", got, want)
	}
	if !strings.Contains(out.String(), "keepRecentTokens 20,000 does not fit") {
		t.Errorf("the change is not said: %q", out.String())
	}
	if same := withWindow(def, 200000, &out); same.KeepRecentTokens != def.KeepRecentTokens {
		t.Errorf("a larger window changed keepRecentTokens to %d", same.KeepRecentTokens)
	}
}
