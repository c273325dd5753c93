package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// documentedLine is one command line printed in the docs.
type documentedLine struct {
	where string // file:line
	text  string
}

// documentedCommandLines extracts the command lines README.md and
// docs/*.md print: every line of a code block (fenced or indented) that
// starts with `soba-lsp` or `go run ./cmd/soba-lsp`, and the command
// column of README's subcommand table.
func documentedCommandLines(t *testing.T) []documentedLine {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	files = append([]string{filepath.Join("..", "..", "README.md")}, files...)
	cell := regexp.MustCompile("^\\| `(soba-lsp[^`]*)`")
	var out []documentedLine
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fenced := false
		sc := bufio.NewScanner(bytes.NewReader(data))
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			trimmed := strings.TrimSpace(line)
			where := filepath.Base(f) + ":" + strconv.Itoa(n)
			if strings.HasPrefix(trimmed, "```") {
				fenced = !fenced
				continue
			}
			if m := cell.FindStringSubmatch(line); m != nil && filepath.Base(f) == "README.md" {
				// A cell may hold two forms: "`capsule export …` / `capsule show …`".
				out = append(out, documentedLine{where, strings.ReplaceAll(m[1], `\|`, "|")})
				continue
			}
			if !fenced && !strings.HasPrefix(line, "    ") {
				continue
			}
			trimmed = strings.TrimSpace(strings.SplitN(trimmed, "#", 2)[0])
			if strings.HasPrefix(trimmed, "soba-lsp") || strings.HasPrefix(trimmed, "go run ./cmd/soba-lsp") {
				out = append(out, documentedLine{where, trimmed})
			}
		}
	}
	return out
}

// TestDocumentedCommandLinesRun runs every command line README.md and
// docs/*.md print, as printed, with their placeholders filled on fixtures
// (a SOBA session, a Claude Code transcript, a configuration file): none
// may be a usage error (exit 2). Optional parts are filled in too, so the
// flags' places as printed are what runs.
func TestDocumentedCommandLinesRun(t *testing.T) {
	lines := documentedCommandLines(t)
	if len(lines) < 10 {
		t.Fatalf("found only %d documented command lines: the extraction is broken", len(lines))
	}
	for _, l := range lines {
		t.Run(l.where, func(t *testing.T) {
			ws := t.TempDir()
			writeConfigIn(t, ws)
			session := copySession(t, ws, filepath.Join("..", "..", "testdata", "sessions", "s_basic01.jsonl"), "s_basic01")
			transcript, _ := filepath.Abs(fixturePath("claude-code.jsonl"))
			cfg := filepath.Join(ws, ".soba", "config.json")
			args := fillPlaceholders(l.text, ws, session, transcript, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, args...)
			cmd.Dir = ws
			// A private HOME and TMPDIR: nothing of the user's is read,
			// nothing is left behind (replay's workspace, a log file).
			cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME=", "TMPDIR="+t.TempDir())
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.Stdin = strings.NewReader("") // a server sees its input end at once
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s\n  ran: soba-lsp %s\n  exit %d", l.text, strings.Join(args, " "), code)
			if code == 2 {
				t.Errorf("%s: `%s` is a usage error as printed (ran soba-lsp %s):\n%s", l.where, l.text, strings.Join(args, " "), stderr.String())
			}
		})
	}
}

// fillPlaceholders turns a documented line into arguments: the program
// (`soba-lsp`, `go run ./cmd/soba-lsp`) goes, optional parts `[…]` are
// filled, `<…>` placeholders get fixtures, `/tmp/…` paths move into ws,
// and a second form after " / " is dropped (README's table).
func fillPlaceholders(line, ws, session, transcript, cfg string) []string {
	line, _, _ = strings.Cut(line, "` / `")
	line = regexp.MustCompile(`/tmp/\S+`).ReplaceAllStringFunc(line, func(p string) string { return filepath.Join(ws, filepath.Base(p)) })
	line = strings.TrimPrefix(line, "go run ./cmd/soba-lsp")
	line = strings.TrimPrefix(line, "soba-lsp")
	sub := strings.Fields(line)
	subcommand := ""
	for _, f := range sub {
		if !strings.HasPrefix(f, "-") && !strings.HasPrefix(f, "<") && !strings.HasPrefix(f, "[") && !strings.HasPrefix(f, "/") {
			subcommand = f
			break
		}
	}
	optional := map[string]string{
		"-o PATH":           "-o " + filepath.Join(ws, "imported.jsonl"),
		"--workspace DIR":   "--workspace " + ws,
		"--config FILE":     "--config " + cfg,
		"--trigger T":       "--trigger user",
		"--trigger TRIGGER": "--trigger user",
		"--dry-run":         "--dry-run",
		"--overwrite":       "--overwrite",
		"session.jsonl":     session,
		"DIR":               ws,
	}
	line = regexp.MustCompile(`\[([^\]]*)\]`).ReplaceAllStringFunc(line, func(m string) string {
		inner := m[1 : len(m)-1]
		if v, ok := optional[inner]; ok {
			return v
		}
		if strings.HasPrefix(inner, "--format ") {
			return "--format claude-code"
		}
		return ""
	})
	line = regexp.MustCompile(`<([^>]*)>`).ReplaceAllStringFunc(line, func(m string) string {
		inner := m[1 : len(m)-1]
		switch {
		case strings.Contains(inner, "ck") && strings.Contains(inner, "latest"):
			return "latest"
		case strings.HasPrefix(inner, "out"):
			return filepath.Join(ws, "out.capsule.md")
		case inner == "transcript", inner == "file" && subcommand == "import":
			return transcript
		}
		return session
	})
	return strings.Fields(line)
}
