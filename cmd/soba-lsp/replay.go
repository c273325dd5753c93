package main

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/soba-agent/soba-lsp/agent"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/internal/text"
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
	window := fs.Int("context-window", 0, "model context window in tokens (default 65000, or the --config file's)")
	cfgFile := fs.String("config", "", "configuration `FILE` whose compaction keys and model limits apply (over the defaults and the user's ~/.config/soba/config.json)")
	setUsage(fs, env, "usage: soba-lsp replay [flags] [session.jsonl]\n\nWith no file, replays the sample session built into the binary.")
	if err := parseArgs(fs, args); err != nil {
		return 2
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(env.stderr, "soba-lsp replay: want at most one session file, got %d: %s\n", fs.NArg(), strings.Join(quoteAll(fs.Args()), " "))
		fs.Usage()
		return 2
	}
	if fs.NArg() == 1 {
		if err := foreignFile(fs.Arg(0)); err != nil {
			fmt.Fprintln(env.stderr, "soba-lsp replay:", err)
			return 1
		}
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
	recording, sample := fs.Arg(0), fs.Arg(0) == ""
	if sample {
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
	if *cfgFile != "" {
		if _, err := os.Stat(*cfgFile); err != nil {
			fmt.Fprintln(env.stderr, "soba-lsp replay: --config:", err)
			return 2
		}
		layers := workspace.StandardLayers(root.Dir(), nil, nil)
		layers.WorkspaceFile, layers.WorkspaceFileIsUsers = *cfgFile, true
		c, warnings, err := workspace.LoadConfig(root.Dir(), layers)
		for _, w := range warnings {
			fmt.Fprintln(env.stderr, "warning:", w)
		}
		if err != nil {
			fmt.Fprintln(env.stderr, "soba-lsp replay:", err)
			return 2
		}
		cfg = c.EngineConfig()
	}
	if *window > 0 {
		cfg = withWindow(cfg, *window, env.stdout)
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp replay:", err)
		return 2
	}
	counter := newCounter()
	rep, err := agent.Replay(ctx, recording, agent.ReplayOptions{Workspace: root.Dir(), Compaction: cfg, Counter: counter,
		EntryTokens: entryTokens(counter), Resolver: root, Out: env.stdout})
	if err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp replay:", err)
		return 1
	}
	if rep.Compactions == 0 {
		if sample {
			// The sample is long enough to compact under the defaults:
			// none means the engine is broken.
			fmt.Fprintln(env.stderr, "soba-lsp replay: the built-in sample completed no compaction")
			return 1
		}
		fmt.Fprintf(env.stdout, "no compaction was needed: the session stayed under the soft limit %s\n", text.Thousands(cfg.SoftLimit()))
	}
	return 0
}

// withWindow sets the model's context window for a replay. When the
// configured keep window no longer fits under the smaller hard limit, it
// keeps the same share of the hard limit (and says so), so
// `--context-window 30000` runs without a config file of its own.
func withWindow(cfg compaction.Config, window int, out io.Writer) compaction.Config {
	hardBefore := cfg.HardLimit()
	cfg.ContextWindow = window
	if h := cfg.HardLimit(); h > 0 && hardBefore > 0 && cfg.KeepRecentTokens >= h {
		keep := int(float64(cfg.KeepRecentTokens) / float64(hardBefore) * float64(h))
		fmt.Fprintf(out, "keepRecentTokens %s does not fit under the hard limit %s of a %s-token window: keeping %s (the same share)\n",
			text.Thousands(cfg.KeepRecentTokens), text.Thousands(h), text.Thousands(window), text.Thousands(keep))
		cfg.KeepRecentTokens = keep
	}
	return cfg
}
