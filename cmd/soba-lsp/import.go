package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/soba-agent/soba-lsp/importer"
	"github.com/soba-agent/soba-lsp/internal/id"
	"github.com/soba-agent/soba-lsp/internal/text"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/workspace"
)

// runImport converts another agent's transcript (pi, Claude Code, Codex,
// opencode) into a new SOBA session file and prints its path as the last
// line on stdout. The source is only read.
func runImport(_ context.Context, env *cmdEnv, args []string) int {
	defer boundMemory()()
	fs := subcommandFlags(env, "import")
	out := fs.String("o", "", "write the session to `PATH` (must end in .jsonl; default <workspace>/.soba/sessions/<newid>.jsonl)")
	ws := fs.String("workspace", "", "workspace root `DIR` (default: the current directory)")
	format := fs.String("format", "", "source `FORMAT`: "+formatList("or")+" (default: detected from the content)")
	setUsage(fs, env, "usage: soba-lsp import [flags] <transcript>\n\nConverts a pi session, a Claude Code project JSONL, a Codex rollout file or an opencode session\n(an `opencode export` file, or opencode's storage/session/<projectID>/<sessionID>.json) into a SOBA session.\nMalformed lines and files are reported with their line numbers or paths and skipped. The new file's path is the last line on stdout.")
	if !parseExact(fs, args, 1) {
		return 2
	}
	src := fs.Arg(0)
	if *format != "" && !knownFormat(*format) {
		fmt.Fprintf(env.stderr, "soba-lsp import: --format %q: must be %s\n", *format, formatList("or"))
		return 2
	}
	counter := newCounter()
	est := entryTokens(counter)
	var err error
	root := *ws
	if root == "" {
		if root, err = os.Getwd(); err != nil {
			fmt.Fprintln(env.stderr, "soba-lsp import:", err)
			return 1
		}
	}
	if root, err = filepath.Abs(root); err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp import:", err)
		return 1
	}
	dest := *out
	if dest == "" {
		dir := workspace.DefaultConfig().ResolveSessionDir(root)
		if cfg, _, err := workspace.LoadConfig(root, workspace.StandardLayers(root, nil, nil)); err == nil {
			dir = cfg.ResolveSessionDir(root)
		}
		if r, err := workspace.NewRoot(root); err == nil {
			_, _ = workspace.EnsureSobaDir(r) // .soba/.gitignore keeps transcripts out of commits
		}
		dest = filepath.Join(dir, id.Session()+".jsonl")
	}
	abs, _ := filepath.Abs(src)
	header := session.SessionHeader{Version: 1, Workspace: root, ImportedFrom: abs}
	// By path: a pi session is streamed (bounded memory); an opencode
	// storage session file is read with the message and part files around
	// it.
	// ImportFile prefixes ImportedFrom with the format it found.
	res, err := importer.ImportFile(src, dest, header, importer.Options{Format: importer.Format(*format), Estimate: est, Counter: counter}, session.Options{Estimate: est})
	if err != nil {
		if _, named := errors.AsType[*os.PathError](err); named {
			fmt.Fprintln(env.stderr, "soba-lsp import:", err) // the error names the file
		} else {
			fmt.Fprintf(env.stderr, "soba-lsp import: %s: %v\n", src, err)
		}
		return 1
	}
	for _, p := range res.Problems {
		if p.File != "" {
			fmt.Fprintln(env.stderr, p) // names its own file
		} else {
			fmt.Fprintf(env.stderr, "%s: %s\n", src, p)
		}
	}
	s := res.Stats
	read := text.Count(s.Lines, "line", "lines")
	if s.Files > 0 {
		read = text.Count(s.Files, "file", "files")
	}
	fmt.Fprintf(env.stderr, "imported %s (%s, %s): %s, %s, %s, %s (%d renamed to SOBA tools), %s, %s; %s%s\n",
		src, res.Format, read, text.Count(s.UserMessages, "user message", "user messages"), text.Count(s.UserCommands, "user command", "user commands"),
		text.Count(s.Assistants, "assistant response", "assistant responses"), text.Count(s.ToolCalls, "tool call", "tool calls"), s.MappedCalls,
		text.Count(s.ToolResults, "tool result", "tool results"), text.Count(s.Capsules, "capsule", "capsules"),
		text.Count(len(res.Problems), "problem", "problems"), skipped(s.Skipped))
	if *out == "" {
		// The session is in the workspace's session directory: the editor
		// can resume it by id.
		fmt.Fprintf(env.stderr, "continue it in the editor: /session resume %s\n", strings.TrimSuffix(filepath.Base(dest), ".jsonl"))
	}
	fmt.Fprintln(env.stdout, dest)
	return 0
}

// formatList names the formats import reads: "pi, claude-code, codex or
// opencode".
func formatList(last string) string {
	names := make([]string, len(importer.Formats))
	for i, f := range importer.Formats {
		names[i] = string(f)
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + last + " " + names[len(names)-1]
}

func knownFormat(f string) bool {
	for _, k := range importer.Formats {
		if string(k) == f {
			return true
		}
	}
	return false
}

func skipped(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", m[k], k)
	}
	return "; skipped: " + strings.Join(parts, ", ")
}
