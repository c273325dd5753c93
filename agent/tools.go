package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/soba-agent/soba-lsp/internal/text"

	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/tool"
	"github.com/soba-agent/soba-lsp/workspace"
)

// Resolver confines paths to the workspace root (workspace.Root implements
// it): relative paths resolve against the root; `..`, absolute paths outside
// and symlink escapes are refused with an error naming the path.
type Resolver interface {
	Resolve(path string) (abs, rel string, err error)
}

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
	maxGrepMatches     = 500
	defaultBashTimeout = 2 * time.Minute
	maxBashTimeout     = 30 * time.Minute
)

// toolRun is the outcome of one tool call.
type toolRun struct {
	ok        bool
	content   string
	artifacts *session.Artifacts
	// checkpoint is set by the checkpoint tool: the turn records it under
	// the state's lock.
	checkpoint *session.Checkpoint
	skill      string
}

// toolEnv is what tools run against.
type toolEnv struct {
	root   Resolver
	dir    string // absolute workspace root
	skills *skillSet
	mcp    *MCP // the workspace's MCP tools; nil when there are none
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

func (env *toolEnv) run(ctx context.Context, call session.ToolCall) toolRun {
	switch call.Name {
	case tool.ReadFile:
		return env.readFile(call.Arguments)
	case tool.WriteFile:
		return env.writeFile(call.Arguments)
	case tool.EditFile:
		return env.editFile(call.Arguments)
	case tool.ListFiles:
		return env.listFiles(call.Arguments)
	case tool.Grep:
		return env.grep(ctx, call.Arguments)
	case tool.Bash:
		return env.bash(ctx, call.Arguments)
	case tool.Checkpoint:
		return checkpointTool(call.Arguments)
	case tool.ActivateSkill:
		return env.activateSkill(call.Arguments)
	}
	if IsMCPTool(call.Name) {
		return env.mcp.call(ctx, call.Name, call.Arguments, env.root)
	}
	return fail("unknown tool %q", call.Name)
}

func (env *toolEnv) readFile(raw json.RawMessage) toolRun {
	var a struct {
		Path   string `json:"path"`
		Offset int    `json:"offset"`
		Limit  int    `json:"limit"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return fail("read_file: %v", err)
	}
	abs, rel, err := env.root.Resolve(a.Path)
	if err != nil {
		return fail("read_file: %v", err)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return fail("read_file: %v", relErr(err, rel))
	}
	if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
		return fail("read_file: %s is a binary file", rel)
	}
	lines := strings.SplitAfter(string(data), "\n")
	start := max(a.Offset, 1) - 1
	if start >= len(lines) && len(data) > 0 {
		return fail("read_file: %s has %d lines, offset %d is past the end", rel, len(lines), a.Offset)
	}
	limit := a.Limit
	if limit <= 0 || limit > maxReadLines {
		limit = maxReadLines
	}
	end := min(start+limit, len(lines))
	out := strings.Join(lines[start:end], "")
	if end < len(lines) {
		out += fmt.Sprintf("\n[%s: showing lines %d-%d of %d; use offset to read more]", rel, start+1, end, len(lines))
	}
	return toolRun{ok: true, content: capOutput(out), artifacts: &session.Artifacts{FilesRead: []string{rel}}}
}

func (env *toolEnv) writeFile(raw json.RawMessage) toolRun {
	var a struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return fail("write_file: %v", err)
	}
	abs, rel, err := env.root.Resolve(a.Path)
	if err != nil {
		return fail("write_file: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return fail("write_file: %v", relErr(err, rel))
	}
	if err := os.WriteFile(abs, []byte(a.Content), 0o644); err != nil {
		return fail("write_file: %v", relErr(err, rel))
	}
	return toolRun{ok: true, content: fmt.Sprintf("wrote %d bytes to %s", len(a.Content), rel), artifacts: &session.Artifacts{FilesModified: []string{rel}}}
}

func (env *toolEnv) editFile(raw json.RawMessage) toolRun {
	var a struct {
		Path    string `json:"path"`
		OldText string `json:"old_text"`
		NewText string `json:"new_text"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return fail("edit_file: %v", err)
	}
	abs, rel, err := env.root.Resolve(a.Path)
	if err != nil {
		return fail("edit_file: %v", err)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return fail("edit_file: %v", relErr(err, rel))
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
	info, _ := os.Stat(abs)
	mode := fs.FileMode(0o644)
	if info != nil {
		mode = info.Mode().Perm()
	}
	if err := os.WriteFile(abs, []byte(out), mode); err != nil {
		return fail("edit_file: %v", relErr(err, rel))
	}
	return toolRun{ok: true, content: "edited " + rel, artifacts: &session.Artifacts{FilesModified: []string{rel}}}
}

// skippedDirs are never listed or searched.
var skippedDirs = map[string]bool{".git": true, ".soba": true, "node_modules": true}

// walkFilter decides what list_files and grep leave out below the path they
// were given: the directories never listed, and what the workspace's root
// .gitignore ignores (read at each call: it may have changed). A path the
// model names explicitly is searched even when it is ignored, as ripgrep
// does; then only skippedDirs apply below it.
func (env *toolEnv) walkFilter(abs string) func(p string, isDir bool) bool {
	var match func(rel string, isDir bool) bool
	if r, ok := env.root.(*workspace.Root); ok {
		if ig, err := workspace.NewIgnore(r); err == nil {
			match = ig.Match
		}
	}
	relOf := func(p string) string {
		r, _ := filepath.Rel(env.dir, p)
		return filepath.ToSlash(r)
	}
	if match != nil && match(relOf(abs), true) {
		match = nil // named explicitly
	}
	return func(p string, isDir bool) bool {
		if p == abs {
			return false
		}
		if isDir && skippedDirs[filepath.Base(p)] {
			return true
		}
		return match != nil && match(relOf(p), isDir)
	}
}

func (env *toolEnv) listFiles(raw json.RawMessage) toolRun {
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
	abs, rel, err := env.root.Resolve(a.Path)
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
	skip := env.walkFilter(abs)
	err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable entries are left out
		}
		if skip(p, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
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
			return filepath.SkipAll
		}
		r, _ := filepath.Rel(env.dir, p)
		out = append(out, filepath.ToSlash(r))
		return nil
	})
	if err != nil {
		return fail("list_files: %v", relErr(err, rel))
	}
	sort.Strings(out)
	s := strings.Join(out, "\n")
	if truncated {
		s += fmt.Sprintf("\n[list truncated at %d entries]", maxListEntries)
	}
	if s == "" {
		s = "(no files)"
	}
	return toolRun{ok: true, content: s}
}

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
	abs, _, err := env.root.Resolve(a.Path)
	if err != nil {
		return fail("grep: %v", err)
	}
	var out []string
	var read []string
	skip := env.walkFilter(abs)
	_ = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		if err != nil || ctx.Err() != nil || len(out) >= maxGrepMatches {
			if ctx.Err() != nil || len(out) >= maxGrepMatches {
				return filepath.SkipAll
			}
			return nil
		}
		if skip(p, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		r, _ := filepath.Rel(env.dir, p)
		r = filepath.ToSlash(r)
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		matched := false
		for n := 1; sc.Scan(); n++ {
			line := sc.Bytes()
			if bytes.IndexByte(line, 0) >= 0 {
				break // binary
			}
			if re.Match(line) {
				matched = true
				out = append(out, fmt.Sprintf("%s:%d: %s", r, n, text.Clip(string(line), 300+len("…"))))
				if len(out) >= maxGrepMatches {
					break
				}
			}
		}
		if matched {
			read = append(read, r)
		}
		return nil
	})
	if ctx.Err() != nil {
		return fail("grep: interrupted")
	}
	s := strings.Join(out, "\n")
	if len(out) >= maxGrepMatches {
		s += fmt.Sprintf("\n[stopped after %d matches]", maxGrepMatches)
	}
	if s == "" {
		s = "(no matches)"
	}
	return toolRun{ok: true, content: capOutput(s), artifacts: &session.Artifacts{FilesRead: read}}
}

func (env *toolEnv) bash(ctx context.Context, raw json.RawMessage) toolRun {
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
	// pipefail: `go test ./... | tail` must report the tests' exit code, not
	// tail's, or the capsule would record a failing run as passing.
	cmd := exec.CommandContext(cctx, "bash", "-o", "pipefail", "-c", a.Command)
	cmd.Dir = env.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) } // the whole group
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
	out := buf.String()
	if exit != 0 {
		out += fmt.Sprintf("\n[exit code %d]", exit)
	}
	return toolRun{ok: exit == 0, content: out, artifacts: art}
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

// cappedBuffer keeps the head and the tail of a long output.
type cappedBuffer struct {
	head    bytes.Buffer
	tail    []byte
	dropped int
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	n := len(p)
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

func capOutput(s string) string {
	if len(s) <= maxToolOutput {
		return s
	}
	var c cappedBuffer
	c.WriteString(s)
	return c.String()
}

// relErr replaces absolute paths in file errors with the workspace path.
func relErr(err error, rel string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s %s: %v", pe.Op, rel, pe.Err)
	}
	return err
}
