package importer

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"

	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/internal/jsondec"
	"github.com/soba-agent/soba-lsp/internal/lazyregexp"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/tool"
)

// toolKind is what a tool call leaves as artifacts (R-C2).
type toolKind int

const (
	kindOther  toolKind = iota
	kindRead            // reads its path
	kindModify          // writes or edits its path(s)
	kindShell           // runs a command
)

// mappedCall is a foreign tool call in SOBA's terms: renamed to a SOBA tool
// with SOBA's argument names when the call matches one exactly, else kept
// verbatim; with the facts its result needs for artifacts.
type mappedCall struct {
	name    string
	args    json.RawMessage
	mapped  bool
	kind    toolKind
	paths   []string
	command string
	// pending marks a command still running when its call returned: its
	// result records no outcome (empty artifacts), a later poll does.
	pending bool
	// shellRead and shellModified are the files the command reads and
	// changes (renames as "old → new", deletions as "path (deleted)"),
	// recorded when it succeeds (R-C6).
	shellRead, shellModified []string
	// subRead and subModified are the files a Claude Code Task call's
	// subagent read and modified with its own successful calls.
	subRead, subModified []string
}

// shellFiles reads a command's file effects, paths relative to the
// session's directory.
func (b *builder) shellFiles(cmd string) (read, modified []string) {
	fs := compaction.FilesOfCommand(cmd)
	// Only files in the session's directory: scratch files in /tmp or the
	// home directory are not the work.
	in := func(p string) (string, bool) {
		r := b.rel(p)
		return r, r != "" && !filepath.IsAbs(r) && !strings.HasPrefix(r, "~") && !strings.HasPrefix(r, "../")
	}
	// A file read in the directory the agent ran the command in (Codex's
	// workdir, given as a leading `cd`: a worktree beside the repository)
	// is read too, by its absolute path. Changes there are not taken from
	// the command line: a false "modified" is worse than a missing read.
	workdir := ""
	if rest, ok := strings.CutPrefix(cmd, "cd /"); ok {
		if end := strings.IndexAny(rest, " ;&|\n'\""); end > 0 {
			workdir = filepath.Clean("/" + rest[:end])
		}
	}
	scratch := workdir == "" || workdir == "/" || workdir == "/tmp" || strings.HasPrefix(workdir, "/tmp/") || strings.HasPrefix(workdir, "/var/")
	for _, p := range fs.Read {
		if r, ok := in(p); ok {
			read = append(read, r)
		} else if c := filepath.Clean(p); !scratch && strings.HasPrefix(c, workdir+"/") {
			read = append(read, c)
		}
	}
	for _, p := range fs.Written {
		if r, ok := in(p); ok {
			modified = append(modified, r)
		}
	}
	for _, mv := range fs.Renamed {
		from, ok1 := in(mv[0])
		to, ok2 := in(mv[1])
		if ok1 && ok2 {
			modified = append(modified, from+compaction.RenameSep+to)
		}
	}
	for _, p := range fs.Deleted {
		if r, ok := in(p); ok {
			modified = append(modified, r+compaction.DeletedSuffix)
		}
	}
	return read, modified
}

// artifacts are the result's artifacts: files read or modified when the call
// succeeded, the command and its exit code (nil when the source does not
// tell it or the command was interrupted).
func (c *mappedCall) artifacts(ok bool, exit *int) *session.Artifacts {
	if c.pending {
		return &session.Artifacts{}
	}
	if len(c.subRead)+len(c.subModified) > 0 {
		// Whatever the Task's own outcome, its subagent's edits were made.
		return &session.Artifacts{FilesRead: c.subRead, FilesModified: c.subModified}
	}
	switch c.kind {
	case kindRead:
		if ok && len(c.paths) > 0 {
			return &session.Artifacts{FilesRead: c.paths}
		}
	case kindModify:
		if ok && len(c.paths) > 0 {
			return &session.Artifacts{FilesModified: c.paths}
		}
	case kindShell:
		if c.command != "" {
			a := &session.Artifacts{Command: c.command, ExitCode: exit}
			if ok && exit != nil && *exit == 0 {
				a.FilesRead, a.FilesModified = c.shellRead, c.shellModified
			}
			return a
		}
	}
	return nil
}

// unexpandedVar matches a shell variable left unexpanded in a path.
var unexpandedVar = lazyregexp.New(`\$\{?[A-Za-z_]`)

// toolSpec maps one foreign tool onto a SOBA tool.
type toolSpec struct {
	// name is the SOBA tool; "" keeps the call verbatim (artifacts only).
	name string
	kind toolKind
	// fields renames source arguments to SOBA's; an argument not listed
	// (and not droppable) keeps the whole call verbatim.
	fields map[string]string
	// required source arguments; a call without one stays verbatim.
	required []string
	// drop lists arguments that only label or tune the call (a
	// description, an output limit) and may be left out of the mapped call.
	drop []string
	// scale multiplies numeric arguments (seconds → milliseconds).
	scale map[string]float64
	// path and command name the source arguments holding the file path and
	// the shell command, for artifacts.
	path, command string
}

var (
	piTools = map[string]toolSpec{
		"read":  {name: tool.ReadFile, kind: kindRead, fields: map[string]string{"path": "path", "offset": "offset", "limit": "limit"}, required: []string{"path"}, path: "path"},
		"write": {name: tool.WriteFile, kind: kindModify, fields: map[string]string{"path": "path", "content": "content"}, required: []string{"path", "content"}, path: "path"},
		"edit":  {name: tool.EditFile, kind: kindModify, fields: map[string]string{"path": "path", "oldText": "old_text", "newText": "new_text"}, required: []string{"path", "oldText", "newText"}, path: "path"},
		"bash":  {name: tool.Bash, kind: kindShell, fields: map[string]string{"command": "command", "timeout": "timeoutMs"}, required: []string{"command"}, scale: map[string]float64{"timeout": 1000}, command: "command"},
		"ls":    {name: tool.ListFiles, fields: map[string]string{"path": "path"}, drop: []string{"limit"}},
		"find":  {name: tool.ListFiles, fields: map[string]string{"path": "path", "pattern": "pattern"}, required: []string{"pattern"}, drop: []string{"limit"}},
		"grep":  {name: tool.Grep, fields: map[string]string{"path": "path", "pattern": "pattern"}, required: []string{"pattern"}, drop: []string{"limit"}},
	}
	claudeTools = map[string]toolSpec{
		"Read":         {name: tool.ReadFile, kind: kindRead, fields: map[string]string{"file_path": "path", "offset": "offset", "limit": "limit"}, required: []string{"file_path"}, path: "file_path"},
		"Write":        {name: tool.WriteFile, kind: kindModify, fields: map[string]string{"file_path": "path", "content": "content"}, required: []string{"file_path", "content"}, path: "file_path"},
		"Edit":         {name: tool.EditFile, kind: kindModify, fields: map[string]string{"file_path": "path", "old_string": "old_text", "new_string": "new_text"}, required: []string{"file_path", "old_string", "new_string"}, path: "file_path"},
		"MultiEdit":    {kind: kindModify, path: "file_path"},
		"NotebookEdit": {kind: kindModify, path: "notebook_path"},
		"Bash":         {name: tool.Bash, kind: kindShell, fields: map[string]string{"command": "command", "timeout": "timeoutMs"}, required: []string{"command"}, drop: []string{"description"}, command: "command"},
		"Glob":         {name: tool.ListFiles, fields: map[string]string{"pattern": "pattern", "path": "path"}, required: []string{"pattern"}},
		"LS":           {name: tool.ListFiles, fields: map[string]string{"path": "path"}},
		"Grep":         {name: tool.Grep, fields: map[string]string{"pattern": "pattern", "path": "path"}, required: []string{"pattern"}},
	}
	opencodeTools = map[string]toolSpec{
		"read":      {name: tool.ReadFile, kind: kindRead, fields: map[string]string{"filePath": "path", "offset": "offset", "limit": "limit"}, required: []string{"filePath"}, path: "filePath"},
		"write":     {name: tool.WriteFile, kind: kindModify, fields: map[string]string{"filePath": "path", "content": "content"}, required: []string{"filePath", "content"}, path: "filePath"},
		"edit":      {name: tool.EditFile, kind: kindModify, fields: map[string]string{"filePath": "path", "oldString": "old_text", "newString": "new_text"}, required: []string{"filePath", "oldString", "newString"}, path: "filePath"},
		"multiedit": {kind: kindModify, path: "filePath"},
		// bash's timeout is in milliseconds already.
		"bash": {name: tool.Bash, kind: kindShell, fields: map[string]string{"command": "command", "timeout": "timeoutMs"}, required: []string{"command"}, drop: []string{"description"}, command: "command"},
		"glob": {name: tool.ListFiles, fields: map[string]string{"pattern": "pattern", "path": "path"}, required: []string{"pattern"}},
		"list": {name: tool.ListFiles, fields: map[string]string{"path": "path"}},
		"grep": {name: tool.Grep, fields: map[string]string{"pattern": "pattern", "path": "path"}, required: []string{"pattern"}},
	}
	codexTools = map[string]toolSpec{
		// shell's command is an argv; mapCodexShell turns it into a line.
		"shell":        {name: tool.Bash, kind: kindShell, fields: map[string]string{"command": "command", "timeout_ms": "timeoutMs"}, required: []string{"command"}, drop: []string{"workdir"}, command: "command"},
		"exec_command": {name: tool.Bash, kind: kindShell, fields: map[string]string{"cmd": "command"}, required: []string{"cmd"}, drop: []string{"workdir", "yield_time_ms", "max_output_tokens", "login", "shell"}, command: "cmd"},
	}
)

// mapCall maps one call by spec; raw is the source's argument object.
func (b *builder) mapCall(specs map[string]toolSpec, name string, raw json.RawMessage) *mappedCall {
	c := &mappedCall{name: name, args: raw}
	if len(bytes.TrimSpace(raw)) == 0 {
		c.args = json.RawMessage(`{}`)
	}
	spec, known := specs[name]
	if !known {
		return c
	}
	var args map[string]json.RawMessage
	if jsondec.Unmarshal(raw, &args) != nil {
		return c // not an object: verbatim, no artifacts
	}
	c.kind = spec.kind
	if p := jsonString(args[spec.path]); p != "" && !unexpandedVar.MatchString(p) {
		// A path naming an unexpanded variable ("$tmpdir/x") is no file
		// we know of.
		c.paths = []string{b.rel(p)}
	}
	c.command = commandInCwd(b.res.Cwd, jsonString(args["workdir"]), jsonString(args[spec.command]))
	if c.command != "" {
		c.shellRead, c.shellModified = b.shellFiles(c.command)
	}
	if spec.name == "" {
		return c
	}
	for _, r := range spec.required {
		if _, ok := args[r]; !ok {
			return c
		}
	}
	out := make(map[string]any, len(args))
	for k, v := range args {
		to, ok := spec.fields[k]
		switch {
		case ok:
		case slices.Contains(spec.drop, k), (k == "replace_all" || k == "replaceAll") && string(v) == "false":
			continue
		default:
			return c // an argument SOBA's tool does not take: keep the call as it was
		}
		if to == "path" {
			if s, isStr := stringValue(v); isStr {
				out[to] = b.rel(s)
				continue
			}
		}
		if f, ok := spec.scale[k]; ok {
			var n float64
			if jsondec.Unmarshal(v, &n) == nil {
				out[to] = int64(n * f)
				continue
			}
		}
		out[to] = v
	}
	c.name, c.args, c.mapped = spec.name, marshal(out), true
	return c
}

// commandInCwd is a shell command as run from the session's directory cwd,
// for its artifacts: a command given its own working directory (Codex's
// workdir) gets a leading `cd DIR && `, and a leading `cd` to an absolute
// path under cwd is made relative (`cd /repo && npm test` is `npm test` in
// /repo), so one check run both ways is one check (R-C5). The call itself
// keeps the command as the agent ran it.
func commandInCwd(cwd, workdir, cmd string) string {
	if cmd == "" || cwd == "" {
		return cmd
	}
	cwd = filepath.Clean(cwd)
	if workdir != "" && filepath.IsAbs(workdir) && filepath.Clean(workdir) != cwd && !strings.HasPrefix(cmd, "cd ") {
		cmd = "cd " + workdir + " && " + cmd
	}
	rest, ok := strings.CutPrefix(cmd, "cd ")
	if !ok {
		return cmd
	}
	end := strings.IndexAny(rest, " ;&|\n'\"")
	if end < 0 {
		end = len(rest)
	}
	dir, tail := rest[:end], rest[end:]
	if !filepath.IsAbs(dir) {
		return cmd
	}
	r, err := filepath.Rel(cwd, filepath.Clean(dir))
	if err != nil || r == ".." || strings.HasPrefix(r, "../") {
		return cmd
	}
	if r != "." {
		return "cd " + r + tail
	}
	for _, sep := range []string{" && ", "; ", ";", "\n"} {
		if t, ok := strings.CutPrefix(tail, sep); ok && strings.TrimSpace(t) != "" {
			return strings.TrimLeft(t, " ")
		}
	}
	return cmd
}

// jsonString returns a JSON string's value, or "" for anything else.
func jsonString(raw json.RawMessage) string {
	s, _ := stringValue(raw)
	return s
}

func stringValue(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if jsondec.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// marshal encodes v as compact JSON without HTML escapes, as the store
// writes lines.
func marshal(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return json.RawMessage(`{}`)
	}
	return json.RawMessage(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// Exit codes in tool output text.
var (
	piExitPattern     = lazyregexp.New(`(?:Command exited with code|exit code:?)\s+(-?\d+)\s*$`)
	claudeExitPattern = lazyregexp.New(`(?m)^(?:Error: )?Exit code (-?\d+)\b`)
	codexExitPattern  = lazyregexp.New(`(?m)^(?:Exit code:|Process exited with code)\s*(-?\d+)\b`)
)

// exitFrom returns the first submatch of pattern in s as a number.
func exitFrom(pattern *lazyregexp.Regexp, s string) (int, bool) {
	m := pattern.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	n := 0
	neg := strings.HasPrefix(m[1], "-")
	for _, c := range strings.TrimPrefix(m[1], "-") {
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

func intPtr(n int) *int { return &n }

// shellLine turns an argv into one shell command line: the script of
// `bash -lc SCRIPT` (or sh -c), else the words quoted where needed.
func shellLine(argv []string) string {
	if len(argv) == 3 && (argv[1] == "-lc" || argv[1] == "-c") {
		switch strings.TrimPrefix(argv[0], "/bin/") {
		case "bash", "sh", "zsh", "/usr/bin/bash", "/usr/bin/zsh":
			return argv[2]
		}
	}
	words := make([]string, len(argv))
	for i, w := range argv {
		if w == "" || strings.ContainsAny(w, " \t\n'\"\\$`|&;<>()*?[]{}~#!") {
			w = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		words[i] = w
	}
	return strings.Join(words, " ")
}

// patchPaths lists what an apply_patch input did, for Files modified
// (R-C6): a file added or updated by its path, a file moved as "old → new",
// a file deleted as "path (deleted)"; paths relative to the session's
// directory.
func (b *builder) patchPaths(patch string) []string {
	var out []string
	var last string // the file of the latest Update, which a Move renames
	for _, m := range patchOp.FindAllStringSubmatch(patch, -1) {
		op, p := m[1], b.rel(strings.TrimSpace(m[2]))
		switch op {
		case "Add File", "Update File":
			out = append(out, p)
			last = p
		case "Delete File":
			out = append(out, p+compaction.DeletedSuffix)
		case "Move to":
			if last != "" && len(out) > 0 && out[len(out)-1] == last {
				out[len(out)-1] = last + compaction.RenameSep + p
			} else {
				out = append(out, p)
			}
		}
	}
	return out
}

var patchOp = lazyregexp.New(`(?m)^\*\*\* (Add File|Update File|Delete File|Move to): (.+?)\s*$`)

// patchFiles lists the files an apply_patch input adds, updates, deletes or
// moves to.
var patchFilePattern = lazyregexp.New(`(?m)^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$`)

func patchFiles(patch string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range patchFilePattern.FindAllStringSubmatch(patch, -1) {
		p := m[1]
		if p == "" {
			p = m[2]
		}
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// decodeEach decodes a JSON array of content blocks. When the array does not
// decode whole (a block with a field of an unexpected type), it decodes the
// blocks one by one and skips only the odd ones, so one block never loses
// its neighbours. ok is false when raw is not an array at all.
func decodeEach[T any](raw json.RawMessage) (out []T, ok bool) {
	if jsondec.Unmarshal(raw, &out) == nil {
		return out, true
	}
	var elems []json.RawMessage
	if err := jsondec.Unmarshal(raw, &elems); err != nil {
		return nil, false
	}
	out = make([]T, 0, len(elems))
	for _, e := range elems {
		var v T
		if jsondec.Unmarshal(e, &v) == nil {
			out = append(out, v)
		}
	}
	return out, true
}
