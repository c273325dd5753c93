package main

import (
	"context"
	"fmt"

	"github.com/soba-agent/soba-lsp/session"
)

// runVerify checks a transcript's integrity and lists the problems, one a
// line; it exits 1 when there are any.
func runVerify(_ context.Context, env *cmdEnv, args []string) int {
	fs := subcommandFlags(env, "verify")
	setUsage(fs, env, "usage: soba-lsp verify <session.jsonl>\n\nChecks that every line is an entry, parents exist, every tool result has its call on its path and\nevery capsule's firstKeptEntryId lies on its path. Lists problems one a line; exits 1 when there are any.")
	if !parseExact(fs, args, 1) {
		return 2
	}
	tf, err := session.ScanFile(fs.Arg(0), nil)
	if err == nil && len(tf.Entries) == 0 {
		// Nothing in it is an entry: say what it is when it is known.
		if ferr := foreignFile(fs.Arg(0)); ferr != nil {
			err = ferr
		}
	}
	if err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp verify:", err)
		return 1
	}
	tf.Check()
	if tf.Unestimated > 0 {
		tf.Notes = append(tf.Notes, fmt.Sprintf("%d entries carry no token estimate (hand-written or foreign lines): the server, budget and compact estimate them each time they read the session", tf.Unestimated))
	}
	for _, p := range tf.Problems {
		fmt.Fprintln(env.stdout, p)
	}
	for _, n := range tf.Notes {
		fmt.Fprintln(env.stderr, "note:", n)
	}
	if len(tf.Problems) > 0 {
		fmt.Fprintf(env.stderr, "soba-lsp verify: %s: %d problems in %d entries\n", tf.Path, len(tf.Problems), len(tf.Entries))
		return 1
	}
	fmt.Fprintf(env.stderr, "soba-lsp verify: %s: ok, %d entries\n", tf.Path, len(tf.Entries))
	return 0
}
