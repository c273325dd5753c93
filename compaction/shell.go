package compaction

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// A shell command line is understood from its syntax tree (mvdan.cc/sh, the
// parser behind shfmt), never by regular expressions over its text: words in
// quotes, heredocs and commit messages are never commands, and the exit
// status of the line is traced to the command it belongs to (R-C5).

// statusKind says whose exit status a command line reports for one of its
// commands.
type statusKind int

const (
	// statusOwn: the line's exit status is the command's own (it is the
	// last command run, or a failure of it ends the line: `a && b`).
	statusOwn statusKind = iota
	// statusPiped: the command feeds a pipeline whose status is the last
	// stage's (no pipefail).
	statusPiped
	// statusPipefail: as statusPiped, under pipefail: a 0 says every stage
	// passed.
	statusPipefail
	// statusMasked: the line's status is not the command's at all (`|| true`,
	// `; echo $?`, a background `&`, `!`, a loop, a later command).
	statusMasked
)

// cmdKind is what a command is to the capsule.
type cmdKind int

const (
	kindNone cmdKind = iota
	// kindCheck verifies the work: tests, builds, type checks, linters,
	// formatters in check mode (Verification).
	kindCheck
	// kindConsequential is not a check, but its failure blocks the work:
	// publish, deploy, push, a commit refused by its hook, a migration.
	kindConsequential
)

// shellCmd is one simple command of a line that the capsule cares about.
type shellCmd struct {
	kind cmdKind
	// dir is the directory it ran in relative to the line's start (`cd X
	// &&`, `-C X`, `--prefix X`), cleaned; "" for the starting directory.
	dir string
	// words are the command's words without wrappers (`timeout 60`, `env`,
	// `time`), variable assignments, redirections and directory options.
	words []string
	// text is words as written in the source (quotes kept).
	text   string
	status statusKind
	// filter names what hides the status, for the capsule's note: "| tail",
	// "|| true", "; echo $?", "&".
	filter string
}

// display is the command as the capsule shows it: its directory, if any,
// as a leading `cd DIR && `.
func (c shellCmd) display() string {
	if c.dir == "" {
		return c.text
	}
	return "cd " + quoteWord(c.dir) + " && " + c.text
}

// shellLine is what a command line runs, as far as the capsule cares.
type shellLine struct {
	cmds []shellCmd
	// ok is false when the line does not parse: nothing is taken from it.
	ok bool
}

// checks returns the line's checks.
func (l shellLine) ofKind(k cmdKind) []shellCmd {
	var out []shellCmd
	for _, c := range l.cmds {
		if c.kind == k {
			out = append(out, c)
		}
	}
	return out
}

// parseShell reads a command line. A line that does not parse (another
// shell's syntax, a truncated paste) yields nothing.
func parseShell(line string) shellLine {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		return shellLine{}
	}
	w := &shellWalker{src: line}
	w.stmts(f.Stmts, walkCtx{status: statusOwn})
	return shellLine{cmds: w.out, ok: true}
}

type walkCtx struct {
	status   statusKind
	filter   string
	dir      string
	pipefail bool
	errexit  bool
}

type shellWalker struct {
	src string
	out []shellCmd
	// files collects file effects when FilesOfCommand asks for them.
	files *ShellFiles
}

// mask returns ctx with the status masked by what, unless it is already
// masked (the outermost reason is the one to name).
func (ctx walkCtx) mask(s statusKind, what string) walkCtx {
	if ctx.status == statusMasked || ctx.status > s && s != statusMasked {
		return ctx
	}
	ctx.status, ctx.filter = s, what
	return ctx
}

// stmts walks a statement list: only the last statement's status is the
// list's (unless errexit stops at the first failure); a `cd` changes the
// directory of what follows; `set -e`/`set -o pipefail` take effect for
// what follows.
func (w *shellWalker) stmts(list []*syntax.Stmt, ctx walkCtx) walkCtx {
	for i, st := range list {
		c := ctx
		if i < len(list)-1 && !ctx.errexit {
			c = c.mask(statusMasked, "; "+w.firstWord(list[i+1]))
		}
		ctx = w.stmt(st, c, ctx)
	}
	return ctx
}

// stmt walks one statement; after is the context for the statements that
// follow it (cd and set change it), returned updated.
func (w *shellWalker) stmt(st *syntax.Stmt, ctx, after walkCtx) walkCtx {
	if st == nil || st.Cmd == nil {
		return after
	}
	switch {
	case st.Background:
		ctx = ctx.mask(statusMasked, "&")
	case st.Negated:
		ctx = ctx.mask(statusMasked, "!")
	}
	w.redirs(st.Redirs, ctx.dir)
	switch x := st.Cmd.(type) {
	case *syntax.CallExpr:
		words := w.literalWords(x.Args)
		if len(words) == 0 {
			return after
		}
		if start := unwrap(words); start < len(words) {
			w.callFiles(words[start:], ctx.dir)
		}
		switch words[0] {
		case "cd", "pushd":
			if !st.Background {
				after.dir = joinDir(after.dir, argOr(words, 1, ""))
			}
			return after
		case "set":
			for _, a := range words[1:] {
				if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "e") {
					after.errexit = true
				}
				if a == "pipefail" || a == "errexit" {
					after.pipefail = after.pipefail || a == "pipefail"
					after.errexit = after.errexit || a == "errexit"
				}
			}
			return after
		}
		w.call(x, words, ctx)
	case *syntax.BinaryCmd:
		switch x.Op {
		case syntax.AndStmt:
			// `a && b`: a failure of a ends the list with a's status; a
			// `cd` on the left moves b.
			left := w.stmt(x.X, ctx, ctx)
			right := ctx
			right.dir = left.dir
			right.errexit, right.pipefail = left.errexit, left.pipefail
			end := w.stmt(x.Y, right, right)
			after.dir, after.pipefail, after.errexit = end.dir, end.pipefail, end.errexit
		case syntax.OrStmt:
			w.stmt(x.X, ctx.mask(statusMasked, "|| "+w.firstWord(x.Y)), ctx)
			w.stmt(x.Y, ctx, ctx)
		case syntax.Pipe, syntax.PipeAll:
			k := statusPiped
			if ctx.pipefail {
				k = statusPipefail
			}
			w.stmt(x.X, ctx.mask(k, "| "+w.firstWord(x.Y)), ctx)
			w.stmt(x.Y, ctx, ctx)
		}
	case *syntax.Subshell:
		w.stmts(x.Stmts, ctx)
	case *syntax.Block:
		end := w.stmts(x.Stmts, ctx)
		after.dir = end.dir
	case *syntax.TimeClause:
		return w.stmt(x.Stmt, ctx, after)
	case *syntax.IfClause:
		for c := x; c != nil; c = c.Else {
			w.stmts(c.Cond, ctx.mask(statusMasked, "if"))
			w.stmts(c.Then, ctx.mask(statusMasked, "if"))
		}
	case *syntax.WhileClause:
		w.stmts(x.Cond, ctx.mask(statusMasked, "a loop"))
		w.stmts(x.Do, ctx.mask(statusMasked, "a loop"))
	case *syntax.ForClause:
		w.stmts(x.Do, ctx.mask(statusMasked, "a loop"))
	}
	return after
}

// firstWord is the first word of a statement, for naming a filter.
func (w *shellWalker) firstWord(st *syntax.Stmt) string {
	if st == nil {
		return ""
	}
	switch x := st.Cmd.(type) {
	case *syntax.CallExpr:
		words := w.literalWords(x.Args)
		if len(words) > 0 {
			if len(words) > 1 && words[0] == "echo" && strings.Contains(words[1], "$?") {
				return "echo $?"
			}
			return path.Base(words[0])
		}
	case *syntax.BinaryCmd:
		return w.firstWord(x.X)
	}
	return "…"
}

// call classifies one simple command.
func (w *shellWalker) call(x *syntax.CallExpr, words []string, ctx walkCtx) {
	start := unwrap(words)
	if start >= len(words) {
		return
	}
	// `bash -c 'script'`: the script is the command.
	if n := len(words) - start; n >= 3 && isShell(words[start]) && (words[start+1] == "-c" || words[start+1] == "-lc") {
		inner := parseShell(words[start+2])
		for _, c := range inner.cmds {
			c.dir = joinDir(ctx.dir, c.dir)
			if ctx.status != statusOwn {
				if c.status == statusOwn || ctx.status == statusMasked {
					c.status, c.filter = ctx.status, ctx.filter
				}
			}
			w.out = append(w.out, c)
		}
		return
	}
	words, srcArgs := words[start:], x.Args[start:]
	dir, keep := dirOptions(words)
	kind := classify(pick(words, keep))
	if kind == kindNone {
		return
	}
	var text []string
	for _, i := range keep {
		text = append(text, w.source(srcArgs[i]))
	}
	w.out = append(w.out, shellCmd{
		kind:   kind,
		dir:    joinDir(ctx.dir, dir),
		words:  pick(words, keep),
		text:   strings.Join(text, " "),
		status: ctx.status,
		filter: ctx.filter,
	})
}

// source is a word as written.
func (w *shellWalker) source(word *syntax.Word) string {
	a, b := int(word.Pos().Offset()), int(word.End().Offset())
	if a < 0 || b > len(w.src) || a > b {
		return word.Lit()
	}
	return w.src[a:b]
}

// literalWords returns each word's value with quotes removed; a word with
// expansions keeps its source text.
func (w *shellWalker) literalWords(args []*syntax.Word) []string {
	out := make([]string, 0, len(args))
	for _, a := range args {
		out = append(out, w.wordValue(a))
	}
	return out
}

func (w *shellWalker) wordValue(word *syntax.Word) string {
	var b strings.Builder
	for _, p := range word.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			b.WriteString(x.Value)
		case *syntax.SglQuoted:
			b.WriteString(x.Value)
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					b.WriteString(l.Value)
				} else {
					return w.source(word)
				}
			}
		default:
			return w.source(word)
		}
	}
	return b.String()
}

// unwrap returns the index of the command proper after wrappers that run it
// unchanged: `timeout 60`, `env A=1`, `time`, `nice -n 5`, `command`,
// `exec`, `nohup`, `xvfb-run`, `stdbuf -oL`.
func unwrap(words []string) int {
	i := 0
	for i < len(words) {
		switch path.Base(words[i]) {
		case "time", "command", "exec", "nohup", "xvfb-run", "caffeinate":
			i++
		case "env":
			i++
			for i < len(words) && (strings.Contains(words[i], "=") || strings.HasPrefix(words[i], "-")) {
				i++
			}
		case "timeout", "gtimeout":
			i++
			for i < len(words) && strings.HasPrefix(words[i], "-") {
				i++
			}
			i++ // the duration
		case "nice", "stdbuf", "ionice":
			i++
			for i < len(words) && strings.HasPrefix(words[i], "-") {
				if words[i] == "-n" {
					i++
				}
				i++
			}
		default:
			return i
		}
	}
	return i
}

func isShell(w string) bool {
	switch path.Base(w) {
	case "bash", "sh", "zsh", "dash":
		return true
	}
	return false
}

// dirOptions finds the options that set the directory a command works in
// (`make -C dir`, `git -C dir`, `go -C dir`, `npm --prefix dir`, `pnpm --dir
// dir`, `yarn --cwd dir`, `cargo --manifest-path dir/Cargo.toml`) and
// returns the directory and the indexes of the other words.
func dirOptions(words []string) (dir string, keep []int) {
	tool := path.Base(words[0])
	for i := 0; i < len(words); i++ {
		w := words[i]
		if i > 0 {
			name, val, hasVal := strings.Cut(w, "=")
			var isDir bool
			switch tool {
			case "make", "git", "go", "pnpm", "ninja", "tar":
				isDir = name == "-C" || (tool == "pnpm" && name == "--dir") || (tool == "make" && name == "--directory")
			case "npm":
				isDir = name == "--prefix" || name == "-C"
			case "yarn", "bun":
				isDir = name == "--cwd"
			}
			if isDir {
				if !hasVal && i+1 < len(words) {
					val = words[i+1]
					i++
				}
				dir = joinDir(dir, val)
				continue
			}
		}
		keep = append(keep, i)
	}
	return dir, keep
}

func pick(words []string, idx []int) []string {
	out := make([]string, 0, len(idx))
	for _, i := range idx {
		out = append(out, words[i])
	}
	return out
}

// joinDir is dir after `cd to` from base, cleaned; "" is the start.
func joinDir(base, to string) string {
	switch to {
	case "", "~", "-":
		return base
	}
	var d string
	if path.IsAbs(to) || base == "" {
		d = path.Clean(to)
	} else {
		d = path.Join(base, to)
	}
	if d == "." {
		return ""
	}
	return d
}

func argOr(words []string, i int, def string) string {
	if i < len(words) {
		return words[i]
	}
	return def
}

// quoteWord quotes a word for display when it needs it.
func quoteWord(s string) string {
	if q, err := syntax.Quote(s, syntax.LangBash); err == nil {
		return q
	}
	return s
}
