package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/soba-agent/soba-lsp/workspace"
)

// runTrust trusts a workspace's own .soba/config.json (SPEC R-W5), as
// `direnv allow` does: it records the file's SHA-256 in the user's state
// directory, and the file applies in full (for the language server, `acp`
// and the subcommands) until its content changes.
func runTrust(_ context.Context, env *cmdEnv, args []string) int {
	fset := subcommandFlags(env, "trust")
	revoke := fset.Bool("revoke", false, "take the trust back")
	list := fset.Bool("list", false, "list the trusted files and whether each is unchanged")
	setUsage(fset, env, "usage: soba-lsp trust [--revoke | --list] [DIR]\n\n"+
		"Trusts DIR/.soba/config.json (DIR: the current directory by default): its settings apply in full until\n"+
		"the file changes. Untrusted, a repository's configuration may only tighten (docs/security.md).\n"+
		"The trust is kept in $XDG_STATE_HOME/soba/trust.json (default ~/.local/state/soba/trust.json).")
	if err := parseArgs(fset, args); err != nil {
		return 2
	}
	if fset.NArg() > 1 || (*revoke && *list) || (*list && fset.NArg() > 0) {
		fmt.Fprintln(env.stderr, "soba-lsp trust: want at most one DIR, and --revoke or --list, not both (--list takes no DIR)")
		fset.Usage()
		return 2
	}
	store, err := workspace.TrustStoreFile(os.Getenv)
	if err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp trust:", err)
		return 1
	}
	if *list {
		return trustList(env, store)
	}
	dir := fset.Arg(0)
	if dir == "" {
		dir = "."
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp trust:", err)
		return 1
	}
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	file := workspace.WorkspaceConfigFile(root)
	if *revoke {
		found, err := workspace.RevokeConfig(store, file)
		switch {
		case err != nil:
			fmt.Fprintln(env.stderr, "soba-lsp trust:", err)
			return 1
		case !found:
			fmt.Fprintf(env.stdout, "%s was not trusted\n", file)
		default:
			fmt.Fprintf(env.stdout, "%s is no longer trusted\n", file)
		}
		return 0
	}
	// What the trust will let apply, read as the server reads it untrusted.
	cfg, _, lerr := workspace.LoadConfig(root, workspace.Layers{WorkspaceFile: file})
	e, err := workspace.TrustConfig(store, root, file, time.Now())
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(env.stderr, "soba-lsp trust: %s does not exist: nothing to trust\n", file)
		return 1
	}
	if err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp trust:", err)
		return 1
	}
	fmt.Fprintf(env.stdout, "trusted %s (sha256 %s); it applies in full until it changes\n", e.File, e.SHA256)
	switch {
	case lerr != nil:
		fmt.Fprintf(env.stdout, "note: it does not load as it is: %v\n", lerr)
	case len(cfg.RepositoryIgnored) > 0:
		fmt.Fprintf(env.stdout, "settings it applies now that were ignored: %s\n", strings.Join(cfg.RepositoryIgnored, ", "))
	}
	return 0
}

// trustList prints each trusted file and whether its content is still the
// trusted one.
func trustList(env *cmdEnv, store string) int {
	entries, err := workspace.ListTrusted(store)
	if err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp trust:", err)
		return 1
	}
	for _, e := range entries {
		state := "trusted"
		data, err := workspace.ReadRegularFile(e.File, workspace.MaxConfigBytes)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			state = "missing"
		case err != nil:
			state = "unreadable: " + err.Error()
		case workspace.SumConfig(data) != e.SHA256:
			state = "changed since it was trusted: untrusted"
		}
		fmt.Fprintf(env.stdout, "%s\t%s\t%s\n", e.File, e.TrustedAt.Format(time.RFC3339), state)
	}
	return 0
}
