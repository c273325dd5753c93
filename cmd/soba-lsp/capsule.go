package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/soba-agent/soba-lsp/agent"
	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/workspace"
)

// runCapsule is the offline capsule command (issue: capsules work without
// an editor):
//
//	soba-lsp capsule export <session.jsonl> <ck|latest> <out.capsule.md> [--overwrite]
//	soba-lsp capsule show <file.capsule.md | session.jsonl>
func runCapsule(_ context.Context, env *cmdEnv, args []string) int {
	usage := func() int {
		fmt.Fprintln(env.stderr, "usage: soba-lsp capsule export <session.jsonl> <ck|latest> <out.capsule.md> [--overwrite]\n       soba-lsp capsule show <file.capsule.md | session.jsonl>")
		return 2
	}
	if len(args) == 0 {
		return usage()
	}
	switch args[0] {
	case "export":
		fs := subcommandFlags(env, "capsule export")
		overwriteFlag := fs.Bool("overwrite", false, "replace an existing output file")
		setUsage(fs, env, "usage: soba-lsp capsule export <session.jsonl> <ck|latest> <out.capsule.md> [--overwrite]")
		if !parseExact(fs, args[1:], 3) {
			return 2
		}
		rest, overwrite := fs.Args(), *overwriteFlag
		doc, code := sessionCapsule(env, rest[0], rest[1])
		if code != 0 {
			return code
		}
		out := rest[2]
		if _, err := os.Stat(out); err == nil && !overwrite {
			fmt.Fprintf(env.stderr, "soba-lsp capsule export: %s exists; pass --overwrite to replace it\n", out)
			return 1
		}
		if err := os.WriteFile(out, capsule.Render(doc), 0o644); err != nil {
			fmt.Fprintln(env.stderr, "soba-lsp capsule export:", err)
			return 1
		}
		fmt.Fprintln(env.stdout, out)
		return 0
	case "show":
		fs := subcommandFlags(env, "capsule show")
		setUsage(fs, env, "usage: soba-lsp capsule show <file.capsule.md | session.jsonl>")
		if !parseExact(fs, args[1:], 1) {
			return 2
		}
		file := fs.Arg(0)
		if strings.HasSuffix(file, ".jsonl") {
			doc, code := sessionCapsule(env, file, "latest")
			if code != 0 {
				return code
			}
			env.stdout.Write(capsule.Render(doc))
			return 0
		}
		// A non-blocking open of a regular file, bounded: a .capsule.md that
		// links to /dev/zero or is a FIFO is refused, never read (R-W1).
		data, err := workspace.ReadRegularFile(file, capsule.MaxSize)
		if err != nil {
			fmt.Fprintln(env.stderr, "soba-lsp capsule show:", err)
			return 1
		}
		doc, warnings, err := capsule.ParseFile(file, data)
		if err != nil {
			fmt.Fprintln(env.stderr, "soba-lsp capsule show:", err)
			return 1
		}
		for _, w := range warnings {
			fmt.Fprintln(env.stderr, "warning:", w)
		}
		env.stdout.Write(capsule.Render(doc))
		return 0
	}
	return usage()
}

// sessionCapsule opens a session file and finds a capsule ("latest" or ""
// is the newest on the leaf path).
func sessionCapsule(env *cmdEnv, path, ck string) (capsule.Document, int) {
	if err := foreignFile(path); err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp capsule:", err)
		return capsule.Document{}, 1
	}
	s, _, err := session.Open(path, session.Options{})
	if err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp capsule:", err)
		return capsule.Document{}, 1
	}
	defer s.Close()
	if ck == "latest" {
		ck = ""
	}
	doc, err := agent.SessionCapsule(s, ck)
	if err != nil {
		fmt.Fprintf(env.stderr, "soba-lsp capsule: %s: %v\n", path, err)
		return capsule.Document{}, 1
	}
	return doc, 0
}
