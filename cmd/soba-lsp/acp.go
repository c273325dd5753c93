package main

import (
	"context"

	"github.com/soba-agent/soba-lsp/acp"
	"github.com/soba-agent/soba-lsp/app"
)

// runACP serves the Agent Client Protocol on stdin/stdout (docs/acp.md):
// newline-delimited JSON-RPC; logs go to stderr or --log-file.
func runACP(ctx context.Context, env *cmdEnv, args []string) int {
	fs := subcommandFlags(env, "acp")
	setUsage(fs, env, "usage: soba-lsp [--log-file FILE] [--log-level LEVEL] acp\n\nServes the Agent Client Protocol on stdin/stdout (docs/acp.md); ACP clients such as Zed start it.")
	if !parseExact(fs, args, 0) {
		return 2
	}
	c := newCounter()
	backend := &app.ACPBackend{Load: app.LoadSettings, Counter: c, EntryTokens: entryTokens(c)}
	env.log.Info("serving ACP on stdin/stdout", "version", versionString())
	if err := acp.Serve(ctx, backend, env.stdin, env.stdout, versionString(), env.log); err != nil {
		env.log.Error("acp server", "error", err)
		return 1
	}
	return 0
}
