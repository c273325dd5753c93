package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
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
		{"capsule show --help", []string{"capsule", "show", "--help"}, 0, "usage: soba-lsp capsule show", ""},
		{"capsule export, --overwrite before the files", []string{"capsule", "export", "--overwrite", session, "latest", filepath.Join(ws, "a.capsule.md")}, 0, "a.capsule.md", ""},
		{"capsule export, --overwrite last", []string{"capsule", "export", session, "latest", filepath.Join(ws, "a.capsule.md"), "--overwrite"}, 0, "a.capsule.md", ""},
		{"capsule export, no --overwrite", []string{"capsule", "export", session, "latest", filepath.Join(ws, "a.capsule.md")}, 1, "", "exists; pass --overwrite"},
		{"budget of a foreign transcript", []string{"budget", src}, 1, "", "holds a transcript of Claude Code, not a SOBA session: convert it first with `soba-lsp import " + src + "`"},
		{"compact of a foreign transcript", []string{"compact", "--dry-run", src}, 1, "", "convert it first with `soba-lsp import " + src + "`"},
		{"capsule show of a foreign transcript", []string{"capsule", "show", src}, 1, "", "convert it first with `soba-lsp import " + src + "`"},
		{"capsule export of a foreign transcript", []string{"capsule", "export", src, "latest", filepath.Join(ws, "b.capsule.md")}, 1, "", "convert it first with `soba-lsp import " + src + "`"},
		{"replay of a foreign transcript", []string{"replay", src}, 1, "", "convert it first with `soba-lsp import " + src + "`"},
		{"verify of a foreign transcript", []string{"verify", src}, 1, "", "convert it first with `soba-lsp import " + src + "`"},
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

// TestHelpOnEverySubcommand: help asked for (`--help`, `-h` anywhere
// before `--`, `help <subcommand>`) is the usage on stdout and exit 0 for
// every subcommand, and runs nothing; a usage error still exits 2.
func TestHelpOnEverySubcommand(t *testing.T) {
	ws := t.TempDir()
	for _, c := range subcommands {
		forms := [][]string{{c.name, "--help"}, {c.name, "-h"}, {"help", c.name}, {c.name, "file.jsonl", "--help"}}
		want := "usage: soba-lsp "
		if c.name == "capsule" {
			forms = append(forms, []string{"capsule", "export", "--help"}, []string{"capsule", "show", "-h"})
		}
		for _, args := range forms {
			out, errs, code := runCLI(t, ws, args...)
			if code != 0 || !strings.HasPrefix(out, want) || errs != "" {
				t.Errorf("soba-lsp %s: exit %d, stdout %q, stderr %q; want the usage on stdout and exit 0", strings.Join(args, " "), code, out, errs)
			}
		}
	}
	if out, _, code := runCLI(t, ws, "help"); code != 0 || !strings.Contains(out, "subcommands:") {
		t.Errorf("soba-lsp help: exit %d, stdout %q", code, out)
	}
	if _, errs, code := runCLI(t, ws, "serve", "extra"); code != 2 || !strings.Contains(errs, "want 0 arguments, got 1") {
		t.Errorf("soba-lsp serve extra: exit %d, stderr %q; want a usage error", code, errs)
	}
	if entries, _ := os.ReadDir(ws); len(entries) != 0 {
		t.Errorf("help ran something: the workspace holds %v", entries)
	}
}

// TestVersionFromBuildInfo: the version is the module version of a
// published build, else the VCS revision a checkout was built from, else
// "dev".
func TestVersionFromBuildInfo(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef0123"},
		{Key: "vcs.time", Value: "2026-12-03T06:00:00Z"}}
	tests := []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"module version", debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: rev}, "v1.2.3"},
		{"checkout", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: rev}, "dev (revision 0123456789ab of 2026-12-03T06:00:00Z)"},
		{"modified checkout", debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: append(rev[:3:3], debug.BuildSetting{Key: "vcs.modified", Value: "true"})},
			"dev (revision 0123456789ab of 2026-12-03T06:00:00Z, with uncommitted changes)"},
		{"nothing known", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
	}
	for _, tt := range tests {
		if got := buildVersion(&tt.bi); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
