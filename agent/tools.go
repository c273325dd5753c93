package agent

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/sourcegraph/conc/panics"

	"github.com/soba-agent/soba-lsp/internal/background"
	"github.com/soba-agent/soba-lsp/internal/text"

	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/tool"
	"github.com/soba-agent/soba-lsp/workspace"
)

// ToolSpec is a tool as the model sees it.
type ToolSpec struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// Tools are the agent's tools (PROTOCOL.md "Agent tools").
var Tools = []ToolSpec{
	{tool.ReadFile, "Read a text file of the workspace. offset is the first line (1-based), limit the number of lines.",
		json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"integer","minimum":1},"limit":{"type":"integer","minimum":1}},"required":["path"]}`)},
	{tool.WriteFile, "Create or overwrite a file of the workspace with content.",
		json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`)},
	{tool.EditFile, "Replace the one occurrence of old_text in a file with new_text.",
		json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"old_text":{"type":"string"},"new_text":{"type":"string"}},"required":["path","old_text","new_text"]}`)},
	{tool.ListFiles, "List files under a directory of the workspace (default the root), optionally filtered by a glob pattern on the file name. Paths the workspace's .gitignore ignores are left out unless you name one.",
		json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"pattern":{"type":"string"}}}`)},
	{tool.Grep, "Search files for a regular expression; prints path:line: text. Paths the workspace's .gitignore ignores are left out unless you name one.",
		json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"}},"required":["pattern"]}`)},
	{tool.Bash, "Run a shell command in the workspace root. Output is capped; the exit code is reported.",
		json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"},"timeoutMs":{"type":"integer","minimum":1}},"required":["command"]}`)},
	{tool.Checkpoint, "Record a checkpoint: kind milestone (a piece of work is done) or plan_pivot (the plan changed direction), with a short note.",
		json.RawMessage(`{"type":"object","properties":{"kind":{"type":"string","enum":["milestone","plan_pivot"]},"note":{"type":"string"}},"required":["kind","note"]}`)},
	{tool.ActivateSkill, "Load a skill's instructions by name; it stays active for the session.",
		json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)},
}

// Tool limits.
const (
	maxToolOutput      = 64 << 10 // bytes of a result kept whole in the transcript
	maxReadLines       = 2000
	maxListEntries     = 1000
	maxGrepMatches     = 10000    // the result is fitted to its share; the rest is saved
	maxGrepFileBytes   = 8 << 20  // grep skips larger files and says so
	maxCountBytes      = 16 << 20 // read_file counts a file's lines to this size
	maxEditBytes       = 8 << 20  // edit_file reads the file whole, up to this
	defaultBashTimeout = 2 * time.Minute
	maxBashTimeout     = 30 * time.Minute
	// defaultToolTimeout is the deadline of a tool other than bash (R-W4).
	defaultToolTimeout = time.Minute
)

// toolRun is the outcome of one tool call.
type toolRun struct {
	ok      bool
	content string
	// summary says what the call did in a few words, for the editor's
	// tool card ("lines 1-40 of 212", "exit 1 · 38 lines · FAIL ./x");
	// empty: the content's first line says it (errors, writes).
	summary   string
	artifacts *session.Artifacts
	// checkpoint is set by the checkpoint tool: the turn records it under
	// the state's lock.
	checkpoint *session.Checkpoint
	skill      string
	// approval is the user's answer when the call was asked about
	// (session.ApprovalOnce, …), recorded with the result.
	approval string
	// raw is the whole output when content holds only part of it (a
	// command's output over the byte bound): it is saved beside the
	// session and named in the result (sizer.fit).
	raw string
}

// toolEnv is what tools run against.
type toolEnv struct {
	root   *workspace.Root // the door (R-W1); nil offline
	dir    string          // absolute workspace root
	skills *skillSet
	// protected are the paths the tools never write (R-W2).
	protected protected
	// timeout is the deadline of a non-bash tool; zero means
	// defaultToolTimeout.
	timeout time.Duration
	mcp     *MCP // the workspace's MCP tools; nil when there are none
	// counter and share size read_file's pages: whole lines up to share
	// tokens (resultShare); share 0 means no share (the byte bounds only).
	counter compaction.Counter
	share   int
	// editor is the client's file system and terminal; nil for the disk
	// and a local bash.
	editor Editor
}

func fail(format string, args ...any) toolRun {
	return toolRun{content: fmt.Sprintf(format, args...)}
}

// decodeArgs decodes a call's arguments strictly, naming the bad field.
func decodeArgs(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{}`)
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("bad arguments: %v", err)
	}
	return nil
}

// run runs one call under its own deadline and the turn's context (R-W4).
// The reading tools (read_file, list_files, grep, activate_skill) run
// aside: when the deadline passes or the turn is cancelled the call ends at
// once with a result saying so, and the read, bounded by the door, finishes
// unobserved. The writing tools are never abandoned, so their result
// always says what happened to the file; they are bounded by the door
// (non-blocking opens, regular files only). bash ends its process group on
// the context (its own timeout is its argument).
func (env *toolEnv) run(ctx context.Context, call session.ToolCall) toolRun {
	if env.root == nil && call.Name != tool.Checkpoint {
		return fail("%s: no workspace", call.Name)
	}
	switch call.Name {
	case tool.WriteFile:
		return env.writeFile(ctx, call.Arguments)
	case tool.EditFile:
		return env.editFile(ctx, call.Arguments)
	case tool.Bash:
		return env.bash(ctx, call.ID, call.Arguments)
	case tool.Checkpoint:
		return checkpointTool(call.Arguments)
	case tool.ReadFile, tool.ListFiles, tool.Grep, tool.ActivateSkill:
	default:
		if IsMCPTool(call.Name) {
			return env.mcp.call(ctx, call.Name, call.Arguments, env.root)
		}
		return fail("unknown tool %q", call.Name)
	}
	timeout := cmp.Or(env.timeout, defaultToolTimeout)
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan toolRun, 1)
	// Abandoned at its deadline (the select below), so no one waits for it.
	background.Go(func() { done <- env.read(tctx, call) },
		func(r *panics.Recovered) { done <- fail("%s: %v", call.Name, background.Error(r)) })
	select {
	case run := <-done:
		return run
	case <-tctx.Done():
		if ctx.Err() != nil {
			return fail("%s: interrupted", call.Name)
		}
		return fail("%s: timed out after %v", call.Name, timeout)
	}
}

func (env *toolEnv) read(ctx context.Context, call session.ToolCall) toolRun {
	switch call.Name {
	case tool.ReadFile:
		return env.readFile(ctx, call.Arguments)
	case tool.ListFiles:
		return env.listFiles(ctx, call.Arguments)
	case tool.Grep:
		return env.grep(ctx, call.Arguments)
	}
	return env.activateSkill(call.Arguments)
}

// readFile streams the file through the door: it holds at most the lines
// it shows (never the whole file), skips to offset line by line, and stops
// at limit or at the output bound. The total line count is given when the
// file is small enough to count.
func (env *toolEnv) readFile(ctx context.Context, raw json.RawMessage) toolRun {
	var a struct {
		Path   string `json:"path"`
		Offset int    `json:"offset"`
		Limit  int    `json:"limit"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return fail("read_file: %v", err)
	}
	_, rel, err := env.root.Resolve(a.Path)
	if err != nil {
		return fail("read_file: %v", err)
	}
	var src io.Reader
	size := int64(-1)
	if text, ok, err := env.readFromEditor(ctx, rel); ok {
		// The editor's view: what the user sees, unsaved changes included.
		if err != nil {
			return fail("read_file: %v", err)
		}
		src, size = strings.NewReader(text), int64(len(text))
	} else {
		f, err := env.root.Open(rel)
		if err != nil {
			return fail("read_file: %v", err)
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil {
			size = fi.Size()
		}
		src = f
	}
	br := bufio.NewReaderSize(src, 64<<10)
	if head, _ := br.Peek(8000); bytes.IndexByte(head, 0) >= 0 {
		return fail("read_file: %s is a binary file", rel)
	}
	start := max(a.Offset, 1)
	limit := a.Limit
	if limit <= 0 || limit > maxReadLines {
		limit = maxReadLines
	}
	var out bytes.Buffer
	line, partial := 1, false // partial: the current line has bytes
	cut, eof := false, false
	// full: the next whole line would take the page over its share of the
	// context; the page ends before it.
	full, fullLine, used := false, false, 0
	budget := env.share - 64 // the footer's room
	for n := 0; ; n++ {
		if n&1023 == 0 && ctx.Err() != nil {
			return fail("read_file: interrupted")
		}
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if line >= start && line < start+limit {
				if env.counter != nil && env.share > 0 {
					n := env.counter.Count(string(chunk))
					if used+n > budget && (out.Len() > 0 || n > budget) {
						if out.Len() > 0 {
							full, fullLine = true, chunk[len(chunk)-1] == '\n'
							break
						}
						// One line alone is over the share: its start.
						out.WriteString(cutToTokens(env.counter, string(chunk), budget, false))
						cut, partial = true, true
						break
					}
					used += n
					if out.Len()+len(chunk) > maxToolResultChars-512 && out.Len() > 0 {
						// The model input's byte bound: the page ends here too,
						// so the model sees the page the transcript keeps.
						full, fullLine = true, chunk[len(chunk)-1] == '\n'
						break
					}
				}
				if out.Len()+len(chunk) > maxToolOutput {
					out.Write(chunk[:maxToolOutput-out.Len()])
					cut = true
					break
				}
				out.Write(chunk)
			}
			partial = true
			if chunk[len(chunk)-1] == '\n' {
				line++
				partial = false
				if line >= start+limit {
					break
				}
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			eof = true
			break
		}
		if err != nil {
			return fail("read_file: read %s: %v", rel, err)
		}
	}
	shownEnd := line - 1
	if partial {
		shownEnd = line
	}
	total := -1
	if eof {
		total = shownEnd
	} else if !cut && size >= 0 && size <= maxCountBytes {
		total = line - 1 + countLines(ctx, br)
		if fullLine {
			total++ // the line that did not fit was read whole
		}
	}
	if eof && start > total && size > 0 {
		return fail("read_file: %s has %d lines, offset %d is past the end", rel, total, a.Offset)
	}
	s := out.String()
	switch {
	case cut && env.share > 0 && out.Len() < maxToolOutput:
		s += fmt.Sprintf("\n[%s: line %d alone is longer than this result's share of the context (%d tokens): its start is shown; continue with offset %d]", rel, shownEnd, env.share, shownEnd+1)
	case cut:
		s += fmt.Sprintf("\n[%s: output cut at %d bytes in line %d; use offset and limit to read on]", rel, maxToolOutput, shownEnd)
	case full && total >= 0:
		s += fmt.Sprintf("\n[%s: showing lines %d-%d of %d, as many as fit this result's share of the context (%d tokens); continue with offset %d]", rel, start, shownEnd, total, env.share, shownEnd+1)
	case full:
		s += fmt.Sprintf("\n[%s: showing lines %d-%d of more, as many as fit this result's share of the context (%d tokens); continue with offset %d]", rel, start, shownEnd, env.share, shownEnd+1)
	case total >= 0 && shownEnd < total:
		s += fmt.Sprintf("\n[%s: showing lines %d-%d of %d; continue with offset %d]", rel, start, shownEnd, total, shownEnd+1)
	case total < 0:
		s += fmt.Sprintf("\n[%s: showing lines %d-%d of more; continue with offset %d]", rel, start, shownEnd, shownEnd+1)
	}
	return toolRun{ok: true, content: s, summary: readSummary(start, shownEnd, total), artifacts: &session.Artifacts{FilesRead: []string{rel}}}
}

// readSummary says which lines a read showed.
func readSummary(start, end, total int) string {
	switch {
	case end < start:
		return "empty"
	case start == 1 && end == total:
		return text.Count(total, "line", "lines")
	case total >= 0:
		return fmt.Sprintf("lines %d-%d of %d", start, end, total)
	}
	return fmt.Sprintf("lines %d-%d", start, end)
}

// countLines counts the lines left in br (a last line without a newline
// counts), stopping early when ctx ends.
func countLines(ctx context.Context, br *bufio.Reader) int {
	n, partial := 0, false
	buf := make([]byte, 64<<10)
	for i := 0; ; i++ {
		if i&63 == 0 && ctx.Err() != nil {
			return n
		}
		k, err := br.Read(buf)
		if k > 0 {
			n += bytes.Count(buf[:k], []byte{'\n'})
			partial = buf[k-1] != '\n'
		}
		if err != nil {
			break
		}
	}
	if partial {
		n++
	}
	return n
}

// writeTarget resolves a write's path and refuses a protected one (R-W2),
// naming it.
func (env *toolEnv) writeTarget(name, path string) (rel string, err error) {
	_, rel, err = env.root.Resolve(path)
	if err != nil {
		return "", err
	}
	real, err := env.root.Real(rel)
	if err != nil {
		return "", err
	}
	if err := env.protected.check(rel); err != nil {
		return "", err
	}
	if err := env.protected.check(real); err != nil {
		return "", err
	}
	return rel, nil
}

func (env *toolEnv) writeFile(ctx context.Context, raw json.RawMessage) toolRun {
	var a struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return fail("write_file: %v", err)
	}
	rel, err := env.writeTarget(tool.WriteFile, a.Path)
	if err != nil {
		return fail("write_file: %v", err)
	}
	if ok, err := env.writeThroughEditor(ctx, rel, a.Content); ok {
		if err != nil {
			return fail("write_file: %v", err)
		}
	} else if err := env.root.WriteFileGuarded(rel, []byte(a.Content), 0o644, env.protected.check); err != nil {
		return fail("write_file: %v", err)
	}
	return toolRun{ok: true, content: fmt.Sprintf("wrote %d bytes to %s", len(a.Content), rel), artifacts: &session.Artifacts{FilesModified: []string{rel}}}
}

func (env *toolEnv) editFile(ctx context.Context, raw json.RawMessage) toolRun {
	var a struct {
		Path    string `json:"path"`
		OldText string `json:"old_text"`
		NewText string `json:"new_text"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return fail("edit_file: %v", err)
	}
	rel, err := env.writeTarget(tool.EditFile, a.Path)
	if err != nil {
		return fail("edit_file: %v", err)
	}
	var data []byte
	if text, ok, err := env.readFromEditor(ctx, rel); ok {
		if err != nil {
			return fail("edit_file: %v", err)
		}
		data = []byte(text)
	} else if data, err = env.root.ReadFile(rel, maxEditBytes); err != nil {
		return fail("edit_file: %v", err)
	}
	if a.OldText == "" {
		return fail("edit_file: old_text is empty")
	}
	switch n := strings.Count(string(data), a.OldText); n {
	case 0:
		return fail("edit_file: old_text not found in %s", rel)
	case 1:
	default:
		return fail("edit_file: old_text occurs %d times in %s; give more context so it is unique", n, rel)
	}
	out := strings.Replace(string(data), a.OldText, a.NewText, 1)
	if ok, err := env.writeThroughEditor(ctx, rel, out); ok {
		if err != nil {
			return fail("edit_file: %v", err)
		}
	} else if err := env.root.WriteFileGuarded(rel, []byte(out), 0o644, env.protected.check); err != nil {
		return fail("edit_file: %v", err)
	}
	return toolRun{ok: true, content: "edited " + rel, artifacts: &session.Artifacts{FilesModified: []string{rel}}}
}

// skippedDirs are never listed or searched.
var skippedDirs = map[string]bool{".git": true, ".soba": true, "node_modules": true}

// walkFilter decides what list_files and grep leave out below the path rel
// they were given: the directories never listed, and what the workspace's
// root .gitignore ignores (read at each call: it may have changed). A path
// the model names explicitly is searched even when it is ignored, as
// ripgrep does; then only skippedDirs apply below it.
func (env *toolEnv) walkFilter(rel string) func(p string, isDir bool) bool {
	var match func(rel string, isDir bool) bool
	if ig, err := workspace.NewIgnore(env.root); err == nil {
		match = ig.Match
	}
	if match != nil && match(rel, true) {
		match = nil // named explicitly
	}
	return func(p string, isDir bool) bool {
		if p == rel {
			return false
		}
		if isDir && skippedDirs[path.Base(p)] {
			return true
		}
		return match != nil && match(p, isDir)
	}
}

func (env *toolEnv) listFiles(ctx context.Context, raw json.RawMessage) toolRun {
	var a struct {
		Path    string `json:"path"`
		Pattern string `json:"pattern"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return fail("list_files: %v", err)
	}
	if a.Path == "" {
		a.Path = "."
	}
	_, rel, err := env.root.Resolve(a.Path)
	if err != nil {
		return fail("list_files: %v", err)
	}
	if a.Pattern != "" {
		if _, err := filepath.Match(a.Pattern, ""); err != nil {
			return fail("list_files: bad pattern %q: %v", a.Pattern, err)
		}
	}
	var out []string
	truncated := false
	skip := env.walkFilter(rel)
	err = env.root.Walk(ctx, rel, func(p string, d fs.DirEntry) error {
		if skip(p, d.IsDir()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if a.Pattern != "" {
			if ok, _ := filepath.Match(a.Pattern, d.Name()); !ok {
				return nil
			}
		}
		if len(out) >= maxListEntries {
			truncated = true
			return fs.SkipAll
		}
		out = append(out, p)
		return nil
	})
	if ctx.Err() != nil {
		return fail("list_files: interrupted")
	}
	if err != nil {
		return fail("list_files: %v", err)
	}
	slices.Sort(out)
	s := strings.Join(out, "\n")
	if truncated {
		s += fmt.Sprintf("\n[list truncated at %d entries]", maxListEntries)
	}
	sum := text.Count(len(out), "file", "files")
	if truncated {
		sum += " (list truncated)"
	}
	if s == "" {
		s = "(no files)"
	}
	return toolRun{ok: true, content: s, summary: sum}.capped()
}

// grep searches the regular files under a path through the door: symlinks
// are not followed (a link to /etc/passwd or /dev/stdin is skipped), FIFOs
// and devices are never opened for reading, and files over
// maxGrepFileBytes are skipped and listed in the result.
func (env *toolEnv) grep(ctx context.Context, raw json.RawMessage) toolRun {
	var a struct {
		Pattern string `json:"pattern"`
		Path    string `json:"path"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return fail("grep: %v", err)
	}
	re, err := regexp.Compile(a.Pattern)
	if err != nil {
		return fail("grep: bad pattern: %v", err)
	}
	if a.Path == "" {
		a.Path = "."
	}
	_, rel, err := env.root.Resolve(a.Path)
	if err != nil {
		return fail("grep: %v", err)
	}
	var out, read, large []string
	skip := env.walkFilter(rel)
	err = env.root.Walk(ctx, rel, func(p string, d fs.DirEntry) error {
		if len(out) >= maxGrepMatches {
			return fs.SkipAll
		}
		if skip(p, d.IsDir()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || (p != rel && !d.Type().IsRegular()) {
			return nil // symlinks, FIFOs, devices, sockets
		}
		f, err := env.root.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.Size() > maxGrepFileBytes {
			large = append(large, p)
			return nil
		}
		sc := bufio.NewScanner(io.LimitReader(f, maxGrepFileBytes))
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		matched := false
		for n := 1; sc.Scan(); n++ {
			if n&1023 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			line := sc.Bytes()
			if bytes.IndexByte(line, 0) >= 0 {
				break // binary
			}
			if re.Match(line) {
				matched = true
				out = append(out, fmt.Sprintf("%s:%d: %s", p, n, text.Clip(string(line), 300+len("…"))))
				if len(out) >= maxGrepMatches {
					break
				}
			}
		}
		if matched {
			read = append(read, p)
		}
		return nil
	})
	if ctx.Err() != nil {
		return fail("grep: interrupted")
	}
	if err != nil {
		return fail("grep: %v", err)
	}
	s := strings.Join(out, "\n")
	if len(out) >= maxGrepMatches {
		s += fmt.Sprintf("\n[stopped after %d matches]", maxGrepMatches)
	}
	if s == "" {
		s = "(no matches)"
	}
	if len(large) > 0 {
		s += fmt.Sprintf("\n[skipped %d files over %d bytes: %s]", len(large), maxGrepFileBytes, text.Clip(strings.Join(large, ", "), 500))
	}
	return toolRun{ok: true, content: s, summary: grepSummary(len(out), len(read), len(large)), artifacts: &session.Artifacts{FilesRead: read}}.capped()
}

func (env *toolEnv) bash(ctx context.Context, callID string, raw json.RawMessage) toolRun {
	var a struct {
		Command   string `json:"command"`
		TimeoutMs int    `json:"timeoutMs"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return fail("bash: %v", err)
	}
	if strings.TrimSpace(a.Command) == "" {
		return fail("bash: command is empty")
	}
	timeout := defaultBashTimeout
	if a.TimeoutMs > 0 {
		timeout = min(time.Duration(a.TimeoutMs)*time.Millisecond, maxBashTimeout)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if env.editor != nil && env.editor.CanRun() {
		return env.bashInEditor(ctx, cctx, callID, a.Command, timeout)
	}
	// pipefail: `go test ./... | tail` must report the tests' exit code, not
	// tail's, or the capsule would record a failing run as passing.
	cmd := exec.CommandContext(cctx, "bash", "-o", "pipefail", "-c", a.Command)
	cmd.Dir = env.dir
	inProcessGroup(cmd) // a cancel ends the whole group
	cmd.WaitDelay = 2 * time.Second
	var buf cappedBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	exit := 0
	var ee *exec.ExitError
	switch {
	case cctx.Err() == context.DeadlineExceeded && ctx.Err() == nil:
		exit = -1
		buf.WriteString(fmt.Sprintf("\n[timed out after %v]", timeout))
	case ctx.Err() != nil:
		exit = -1
		buf.WriteString("\n[interrupted]")
	case errors.As(err, &ee):
		exit = ee.ExitCode()
	case err != nil:
		return fail("bash: %v", err)
	}
	art := &session.Artifacts{Command: a.Command, Pipefail: true}
	if exit >= 0 {
		art.ExitCode = &exit
	}
	output := buf.String()
	out := output
	if exit != 0 {
		out += fmt.Sprintf("\n[exit code %d]", exit)
	}
	run := toolRun{ok: exit == 0, content: out, summary: bashSummary(exit, output), artifacts: art}
	if buf.dropped > 0 {
		run.raw = string(buf.all)
	}
	return run
}

// grepSummary counts a search's matches and the files they are in.
func grepSummary(matches, files, skipped int) string {
	s := "no matches"
	if matches > 0 {
		s = text.Count(matches, "match", "matches") + " in " + text.Count(files, "file", "files")
	}
	if matches >= maxGrepMatches {
		s += " (stopped)"
	}
	if skipped > 0 {
		s += fmt.Sprintf(" · %s skipped as too large", text.Count(skipped, "file", "files"))
	}
	return s
}

// bashSummary gives a command's exit status, its output's length and its
// last line, where test runners and compilers put their verdict.
func bashSummary(exit int, out string) string {
	status := fmt.Sprintf("exit %d", exit)
	if exit < 0 {
		status = "stopped"
	}
	out = strings.TrimRight(out, " \t\r\n")
	if out == "" {
		return status + " · no output"
	}
	lines := strings.Count(out, "\n") + 1
	last := strings.TrimSpace(out[strings.LastIndexByte(out, '\n')+1:])
	return status + " · " + text.Count(lines, "line", "lines") + " · " + text.Clip(last, 120+len("…"))
}

func checkpointTool(raw json.RawMessage) toolRun {
	var a struct {
		Kind string `json:"kind"`
		Note string `json:"note"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return fail("checkpoint: %v", err)
	}
	if a.Kind != compaction.TriggerMilestone && a.Kind != compaction.TriggerPlanPivot {
		return fail(`checkpoint: kind must be "milestone" or "plan_pivot", got %q`, a.Kind)
	}
	return toolRun{ok: true, checkpoint: &session.Checkpoint{Kind: a.Kind, Note: a.Note}}
}

func (env *toolEnv) activateSkill(raw json.RawMessage) toolRun {
	var a struct {
		Name string `json:"name"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return fail("activate_skill: %v", err)
	}
	sk, err := env.skills.load(a.Name)
	if err != nil {
		return fail("activate_skill: %v", err)
	}
	return toolRun{ok: true, content: sk.Body, skill: sk.Name, artifacts: &session.Artifacts{Skill: sk.Name}}
}

// cappedBuffer keeps the head and the tail of a long output, and the
// whole of it up to maxSavedOutput to be saved beside the session.
type cappedBuffer struct {
	head    bytes.Buffer
	tail    []byte
	dropped int
	all     []byte
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := maxSavedOutput + 1 - len(c.all); room > 0 {
		c.all = append(c.all, p[:min(room, len(p))]...)
	}
	if room := maxToolOutput/2 - c.head.Len(); room > 0 {
		k := min(room, len(p))
		c.head.Write(p[:k])
		p = p[k:]
	}
	if len(p) > 0 {
		c.tail = append(c.tail, p...)
		if over := len(c.tail) - maxToolOutput/2; over > 0 {
			c.dropped += over
			c.tail = append(c.tail[:0], c.tail[over:]...)
		}
	}
	return n, nil
}

func (c *cappedBuffer) WriteString(s string) { c.Write([]byte(s)) }

func (c *cappedBuffer) String() string {
	if c.dropped == 0 {
		return c.head.String() + string(c.tail)
	}
	return fmt.Sprintf("%s\n[… %d bytes of output omitted …]\n%s", c.head.String(), c.dropped, c.tail)
}

// capped bounds the content to maxToolOutput bytes, head and tail, keeping
// the whole as raw to be saved beside the session.
func (r toolRun) capped() toolRun {
	if len(r.content) <= maxToolOutput {
		return r
	}
	var c cappedBuffer
	c.WriteString(r.content)
	r.raw, r.content = r.content, c.String()
	return r
}
