package main

import (
	"context"
	"fmt"

	"github.com/soba-agent/soba-lsp/internal/text"
	"github.com/soba-agent/soba-lsp/session"
)

// runVerify checks a transcript's integrity and lists the problems, one a
// line; it exits 1 when there are any.
func runVerify(_ context.Context, env *cmdEnv, args []string) int {
	defer boundMemory()()
	fs := subcommandFlags(env, "verify")
	setUsage(fs, env, "usage: soba-lsp verify <session.jsonl>\n\nChecks that every line is an entry, parents exist, every tool result has its call on its path and\nevery capsule's firstKeptEntryId lies on its path. Lists problems one a line; exits 1 when there are any.")
	if !parseExact(fs, args, 1) {
		return 2
	}
	v, err := session.VerifyFile(fs.Arg(0))
	if err == nil && v.Entries == 0 {
		// Nothing in it is an entry: say what it is when it is known.
		if ferr := foreignFile(fs.Arg(0)); ferr != nil {
			err = ferr
		}
	}
	if err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp verify:", err)
		return 1
	}
	if v.Unestimated > 0 {
		v.Notes = append(v.Notes, fmt.Sprintf("%s no token estimate (hand-written or foreign lines): the server, budget and compact estimate them each time they read the session",
			text.Count(v.Unestimated, "entry carries", "entries carry")))
	}
	for _, p := range v.Problems {
		fmt.Fprintln(env.stdout, p)
	}
	if more := v.ProblemCount - len(v.Problems); more > 0 {
		fmt.Fprintf(env.stdout, "… and %s more\n", text.Count(more, "problem", "problems"))
	}
	for _, n := range v.Notes {
		fmt.Fprintln(env.stderr, "note:", n)
	}
	if v.ProblemCount > 0 {
		fmt.Fprintf(env.stderr, "soba-lsp verify: %s: %s in %s\n", v.Path, text.Count(v.ProblemCount, "problem", "problems"),
			text.Count(v.Entries, "entry", "entries"))
		return 1
	}
	fmt.Fprintf(env.stderr, "soba-lsp verify: %s: ok, %s\n", v.Path, text.Count(v.Entries, "entry", "entries"))
	return 0
}
