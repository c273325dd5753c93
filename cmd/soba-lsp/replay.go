package main

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/soba-agent/soba-lsp/agent"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/workspace"
)

// sampleJSONL is the long sample session `replay` runs without an argument.
//
//go:embed sample/session.jsonl
var sampleJSONL []byte

// runReplay re-runs a recorded session through the real agent loop and
// compaction engine with the deterministic summarizer; it needs no model
// server.
func runReplay(ctx context.Context, env *cmdEnv, args []string) int {
	fs := subcommandFlags(env, "replay")
	out := fs.String("workspace", "", "write the replayed session under `DIR` (default: a new temporary directory)")
	window := fs.Int("context-window", 0, "model context window in tokens (default 65000)")
	setUsage(fs, env, "usage: soba-lsp replay [flags] [session.jsonl]\n\nWith no file, replays the sample session built into the binary.")
	if err := parseArgs(fs, args); err != nil {
		return 2
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(env.stderr, "soba-lsp replay: want at most one session file, got %d: %s\n", fs.NArg(), strings.Join(quoteAll(fs.Args()), " "))
		fs.Usage()
		return 2
	}
	dir := *out
	if dir == "" {
		d, err := os.MkdirTemp("", "soba-replay-")
		if err != nil {
			fmt.Fprintln(env.stderr, "soba-lsp replay:", err)
			return 1
		}
		dir = d
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp replay:", err)
		return 1
	}
	recording := fs.Arg(0)
	if recording == "" {
		recording = filepath.Join(dir, "sample-recording.jsonl")
		if err := os.WriteFile(recording, sampleJSONL, 0o644); err != nil {
			fmt.Fprintln(env.stderr, "soba-lsp replay:", err)
			return 1
		}
	}
	root, err := workspace.NewRoot(dir)
	if err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp replay:", err)
		return 1
	}
	cfg := compaction.DefaultConfig()
	if *window > 0 {
		cfg.ContextWindow = *window
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp replay:", err)
		return 2
	}
	counter := newCounter()
	_, err = agent.Replay(ctx, recording, agent.ReplayOptions{Workspace: root.Dir(), Compaction: cfg, Counter: counter,
		EntryTokens: entryTokens(counter), Resolver: root, Out: env.stdout})
	if err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp replay:", err)
		return 1
	}
	return 0
}
