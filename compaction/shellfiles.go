package compaction

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// ShellFiles is what a shell command line did to files, read from its
// syntax tree (R-C6): files it read (`cat`, `head`, `tail`, `sed -n`,
// `less`, `nl`, `<`), wrote (`>`, `>>`, `tee`, `touch`, `cp`, `sed -i`),
// renamed (`mv`, `git mv`) and deleted (`rm`, `git rm`). Paths are as
// written, joined to the directory a `cd` moved to; expansions and /dev
// files are left out.
type ShellFiles struct {
	Read, Written, Deleted []string
	Renamed                [][2]string // old, new
}

// FilesOfCommand reads the file effects of a command line; a line that does
// not parse has none.
func FilesOfCommand(line string) ShellFiles {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		return ShellFiles{}
	}
	w := &shellWalker{src: line, files: &ShellFiles{}}
	w.stmts(f.Stmts, walkCtx{status: statusOwn})
	return *w.files
}

// redirs records the files a statement's redirections write and read.
func (w *shellWalker) redirs(rs []*syntax.Redirect, dir string) {
	if w.files == nil {
		return
	}
	for _, r := range rs {
		if r.Word == nil {
			continue
		}
		p, ok := w.pathWord(r.Word, dir)
		if !ok {
			continue
		}
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.ClbOut:
			w.files.Written = appendNew(w.files.Written, p)
		case syntax.RdrIn:
			w.files.Read = appendNew(w.files.Read, p)
		}
	}
}

// pathWord is a redirection's or argument's file path: a literal word, not
// a descriptor (`&1`), not under /dev.
func (w *shellWalker) pathWord(word *syntax.Word, dir string) (string, bool) {
	lit := w.wordValue(word)
	if lit == "" || lit != word.Lit() && strings.ContainsAny(w.source(word), "$`*?") {
		return "", false
	}
	return filePath(lit, dir)
}

func filePath(p, dir string) (string, bool) {
	if p == "" || p == "-" || strings.HasPrefix(p, "&") || strings.HasPrefix(p, "/dev/") || strings.ContainsAny(p, "$`*?{}\n") {
		return "", false
	}
	if !path.IsAbs(p) && strings.ContainsAny(dir, "$`*?{}\n") {
		// Relative to a directory the command names by an unexpanded
		// variable (`cd "$tmpdir" && … > f`): not a path we know.
		return "", false
	}
	if !path.IsAbs(p) && dir != "" && !strings.HasPrefix(p, "~") {
		p = path.Join(dir, p)
	}
	return path.Clean(p), true
}

// callFiles records the files a simple command reads, writes, renames or
// deletes.
func (w *shellWalker) callFiles(words []string, dir string) {
	if w.files == nil || len(words) == 0 {
		return
	}
	fs := w.files
	name := path.Base(words[0])
	args := words[1:]
	paths := func(xs []string) []string {
		var out []string
		for _, x := range xs {
			if p, ok := filePath(x, dir); ok {
				out = append(out, p)
			}
		}
		return out
	}
	pos := fileArgs(args)
	switch name {
	case "cat", "less", "more", "nl", "bat":
		for _, p := range paths(pos) {
			fs.Read = appendNew(fs.Read, p)
		}
	case "head", "tail":
		for _, p := range paths(skipValues(args, "-n", "-c")) {
			fs.Read = appendNew(fs.Read, p)
		}
	case "sed":
		inPlace := false
		for _, a := range args {
			if a == "-i" || strings.HasPrefix(a, "-i") && !strings.HasPrefix(a, "--") || a == "--in-place" {
				inPlace = true
			}
		}
		var files []string
		for _, a := range skipValues(args, "-e", "-f") {
			if a != "" { // BSD sed's `-i ''`
				files = append(files, a)
			}
		}
		if !containsString(args, "-e") && len(files) > 0 {
			files = files[1:] // the script
		}
		for _, p := range paths(files) {
			if inPlace {
				fs.Written = appendNew(fs.Written, p)
			} else {
				fs.Read = appendNew(fs.Read, p)
			}
		}
	case "rg", "grep", "egrep", "fgrep":
		// A search of a named file reads it (`rg -n loadConfig src/app.ts`);
		// a search of a directory or a file listing reads no file by name.
		if containsString(args, "--files") || containsString(args, "-r") && name != "rg" || containsString(args, "-R") {
			break
		}
		ps := skipValues(args, "-e", "-f", "-g", "--glob", "-t", "--type", "-T", "--type-not", "-A", "-B", "-C", "-m", "--max-count", "-M", "-j", "--context", "--after-context", "--before-context")
		if !slices.ContainsFunc(args, func(a string) bool { return a == "-e" || a == "-f" || strings.HasPrefix(a, "--regexp") }) && len(ps) > 0 {
			ps = ps[1:] // the pattern
		}
		for _, x := range ps {
			if b := path.Base(x); strings.Contains(strings.TrimPrefix(b, "."), ".") {
				if p, ok := filePath(x, dir); ok {
					fs.Read = appendNew(fs.Read, p)
				}
			}
		}
	case "tee", "touch":
		for _, p := range paths(pos) {
			fs.Written = appendNew(fs.Written, p)
		}
	case "cp", "install":
		ps := paths(pos)
		if len(ps) >= 2 {
			dst := ps[len(ps)-1]
			if len(ps) > 2 || strings.HasSuffix(pos[len(pos)-1], "/") {
				for _, src := range ps[:len(ps)-1] {
					fs.Written = appendNew(fs.Written, path.Join(dst, path.Base(src)))
				}
			} else {
				fs.Written = appendNew(fs.Written, dst)
			}
		}
	case "mv":
		w.moves(paths(pos), strings.HasSuffix(last(pos), "/"))
	case "rm", "unlink":
		for _, p := range paths(pos) {
			fs.Deleted = appendNew(fs.Deleted, p)
		}
	case "git":
		if len(pos) > 0 {
			switch pos[0] {
			case "mv":
				w.moves(paths(pos[1:]), strings.HasSuffix(last(pos), "/"))
			case "rm":
				for _, p := range paths(pos[1:]) {
					fs.Deleted = appendNew(fs.Deleted, p)
				}
			}
		}
	}
}

func (w *shellWalker) moves(ps []string, intoDir bool) {
	if len(ps) < 2 {
		return
	}
	dst := ps[len(ps)-1]
	for _, src := range ps[:len(ps)-1] {
		to := dst
		if intoDir || len(ps) > 2 {
			to = path.Join(dst, path.Base(src))
		}
		w.files.Renamed = append(w.files.Renamed, [2]string{src, to})
	}
}

// fileArgs are a command's arguments that are not options (after `--`,
// every argument is one).
func fileArgs(args []string) []string {
	var out []string
	for i, a := range args {
		if a == "--" {
			return append(out, args[i+1:]...)
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			continue
		}
		out = append(out, a)
	}
	return out
}

// skipValues is fileArgs with the values of the named options left out.
func skipValues(args []string, opts ...string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if containsString(opts, a) {
			i++
			continue
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			continue
		}
		out = append(out, a)
	}
	return out
}

func containsString(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func last(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return xs[len(xs)-1]
}

func appendNew(xs []string, x string) []string {
	if containsString(xs, x) {
		return xs
	}
	return append(xs, x)
}
