// Command soba-lsp runs SOBA inside an editor: with no subcommand it serves
// the Language Server Protocol on stdin/stdout (PROTOCOL.md "Process").
// Other subcommands work offline on a workspace's files.
//
// Usage:
//
//	soba-lsp [--log-file FILE] [--version] [SUBCOMMAND [ARGS...]]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// otherwise the module version from the build info is used.
var version = ""

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// subcommand is one entry of the dispatcher: adding a subcommand (replay,
// budget, compact, capsule, verify, import, …) is one entry in subcommands.
type subcommand struct {
	name    string
	summary string
	// run gets the arguments after the subcommand's name. It returns the
	// process exit code (2 for bad usage).
	run func(ctx context.Context, env *cmdEnv, args []string) int
}

// cmdEnv is what every subcommand gets: the standard streams and the logger.
type cmdEnv struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger
}

// subcommands is the dispatcher's table. The first entry is the default.
var subcommands = []subcommand{
	{name: "serve", summary: "serve LSP on stdin/stdout (the default)", run: runServe},
	{name: "acp", summary: "serve the Agent Client Protocol on stdin/stdout (docs/acp.md)", run: runACP},
	{name: "replay", summary: "re-run a recorded session (default: the built-in sample) through the agent and compaction engine; needs no model server", run: runReplay},
	{name: "import", summary: "convert a pi, Claude Code, Codex or opencode transcript into a new SOBA session; prints its path", run: runImport},
	{name: "budget", summary: "print a session file's Budget as JSON", run: runBudget},
	{name: "compact", summary: "compact a session file with the deterministic capsule (--dry-run: print only)", run: runCompact},
	{name: "capsule", summary: "capsule export <session.jsonl> <ck|latest> <out> | capsule show <file>: capsules without an editor", run: runCapsule},
	{name: "verify", summary: "check a session file's integrity; lists problems, exits 1 when there are any", run: runVerify},
	{name: "trust", summary: "trust a workspace's .soba/config.json until it changes (--revoke, --list); untrusted, a repository's settings may only tighten", run: runTrust},
}

func findSubcommand(name string) (subcommand, bool) {
	for _, c := range subcommands {
		if c.name == name {
			return c, true
		}
	}
	return subcommand{}, false
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("soba-lsp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	showVersion := fs.Bool("version", false, "print the version and exit")
	logFile := fs.String("log-file", "", "write logs to `FILE` (appending) instead of stderr")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	// Many LSP clients pass --stdio; stdio is the only transport, so it is
	// accepted and means nothing more.
	_ = fs.Bool("stdio", false, "serve on stdin/stdout (the default and only transport; accepted for clients that pass it)")
	fs.Usage = func() { usage(fs) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, "soba-lsp", versionString())
		return 0
	}

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "soba-lsp: --log-level %q: must be debug, info, warn or error\n", *logLevel)
		return 2
	}
	logOut := stderr
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintf(stderr, "soba-lsp: --log-file: %v\n", err)
			return 2
		}
		defer f.Close()
		logOut = f
	}
	env := &cmdEnv{
		stdin: stdin, stdout: stdout, stderr: stderr,
		log: slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: level})),
	}
	// A panic recovered in a background goroutine is logged on the
	// default logger (internal/background): make it this one.
	slog.SetDefault(env.log)

	rest := fs.Args()
	cmd := subcommands[0]
	help := false
	if len(rest) > 0 {
		if rest[0] == "help" {
			if len(rest) == 1 {
				fs.SetOutput(stdout)
				usage(fs)
				return 0
			}
			// `help budget` is `budget --help`.
			rest, help = rest[1:], true
		}
		c, ok := findSubcommand(rest[0])
		if !ok {
			fmt.Fprintf(stderr, "soba-lsp: unknown subcommand %q (known: %s)\n", rest[0], subcommandNames())
			return 2
		}
		cmd, rest = c, rest[1:]
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if help || wantsHelp(rest) {
		// Asked for, help is the answer: the usage on stdout, exit 0. Each
		// subcommand prints its usage when its flags meet -help; its exit
		// code for that (2, a usage error otherwise) does not apply.
		helpEnv := *env
		helpEnv.stderr = stdout
		if help {
			rest = append(rest, "--help")
		}
		cmd.run(ctx, &helpEnv, rest)
		return 0
	}
	return cmd.run(ctx, env, rest)
}

// wantsHelp reports whether a subcommand's arguments ask for help (-h,
// -help or --help before any `--`).
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// subcommandFlags is the flag set of a subcommand, reporting on stderr.
func subcommandFlags(env *cmdEnv, name string) *flag.FlagSet {
	fs := flag.NewFlagSet("soba-lsp "+name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	return fs
}

// setUsage makes fs print text (a usage line and what the command does),
// then its flags.
func setUsage(fs *flag.FlagSet, env *cmdEnv, text string) {
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, text)
		fs.PrintDefaults()
	}
}

// parseArgs parses a subcommand's flags wherever they stand on the line
// (`import x.jsonl -o out.jsonl` as well as `import -o out.jsonl x.jsonl`);
// everything after `--` is positional. The positional arguments are left in
// fs.Args().
func parseArgs(fs *flag.FlagSet, args []string) error {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			positional = append(positional, rest...) // the flag package consumed the --
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	return fs.Parse(append([]string{"--"}, positional...))
}

// parseExact parses a subcommand's arguments and requires n positional
// ones, saying what is wrong and printing the usage otherwise.
func parseExact(fs *flag.FlagSet, args []string, n int) bool {
	if err := parseArgs(fs, args); err != nil {
		return false
	}
	if fs.NArg() != n {
		what := "argument"
		if n != 1 {
			what += "s"
		}
		fmt.Fprintf(fs.Output(), "%s: want %d %s, got %d: %s\n", fs.Name(), n, what, fs.NArg(), strings.Join(quoteAll(fs.Args()), " "))
		fs.Usage()
		return false
	}
	return true
}

// quoteAll quotes each argument for an error line.
func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strconv.Quote(a)
	}
	return out
}

func subcommandNames() string {
	names := make([]string, len(subcommands))
	for i, c := range subcommands {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

func usage(fs *flag.FlagSet) {
	out := fs.Output()
	fmt.Fprintln(out, "usage: soba-lsp [flags] [subcommand [args...]]")
	fmt.Fprintln(out, "\nsubcommands:")
	for _, c := range subcommands {
		fmt.Fprintf(out, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(out, "\nflags:")
	fs.PrintDefaults()
}

// versionString is the version: the one set at link time, else the
// module version of the build info (`go install …@v1.2.3`), else the VCS
// revision the binary was built from (`go build` in a checkout), else
// "dev".
func versionString() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return buildVersion(bi)
}

func buildVersion(bi *debug.BuildInfo) string {
	if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	var rev, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	v := "dev (revision " + rev[:min(12, len(rev))]
	if at != "" {
		v += " of " + at
	}
	if modified {
		v += ", with uncommitted changes"
	}
	return v + ")"
}
