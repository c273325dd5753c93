package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/soba-agent/soba-lsp/session"
)

// Editor is the editor's side of the tools, when its client offers it (ACP's
// fs and terminal capabilities): read_file reads the editor's view of a
// file (its unsaved changes included), write_file and edit_file write
// through the editor (its undo and dirty state stay right), and bash runs
// in a terminal the user watches and can stop. The workspace door's rules
// are checked on every path first (R-W1, R-W2); the artifacts record the
// files as they do for the disk.
type Editor interface {
	// CanRead, CanWrite, CanRun say what the client offers.
	CanRead() bool
	CanWrite() bool
	CanRun() bool
	// ReadTextFile returns the editor's text of the file at abs.
	ReadTextFile(ctx context.Context, abs string) (string, error)
	// WriteTextFile writes content to the file at abs.
	WriteTextFile(ctx context.Context, abs, content string) error
	// Run runs a command line in the editor's terminal, shown in the tool
	// call callID; it kills the command when ctx ends.
	Run(ctx context.Context, callID string, c Command) (CommandResult, error)
}

// Command is a bash command line run in the editor's terminal.
type Command struct {
	Line string
	// Dir is the workspace root.
	Dir string
	// OutputLimit is the bytes of output kept (the tool's bound).
	OutputLimit int
}

// CommandResult is how a command in the editor's terminal ended.
type CommandResult struct {
	Output    string
	Truncated bool
	// ExitCode is nil when a signal ended the command or it was killed.
	ExitCode *int
	Signal   string
	Killed   bool
}

// maxEditorRead is the largest file (its size on disk) read through the
// editor: the client's answer is one JSON-RPC line, and the SDK's reader
// refuses a line over 10 MiB. A larger file is read from the disk.
const maxEditorRead = 4 << 20

// editorWriteTimeout bounds a write through the editor: a write is never
// abandoned on cancel (its result must say what happened), but an editor
// that never answers must not hold the turn forever.
const editorWriteTimeout = time.Minute

// readFromEditor reads rel through the editor when it offers reads and the
// file is small enough (or only in the editor); ok is false when the disk
// should be read instead.
func (env *toolEnv) readFromEditor(ctx context.Context, rel string) (text string, ok bool, err error) {
	if env.editor == nil || !env.editor.CanRead() {
		return "", false, nil
	}
	if fi, err := env.root.Stat(rel); err == nil && (fi.IsDir() || fi.Size() > maxEditorRead) {
		return "", false, nil
	}
	abs, err := env.absReal(rel)
	if err != nil {
		return "", true, err
	}
	text, err = env.editor.ReadTextFile(ctx, abs)
	return text, true, err
}

// absReal is rel's absolute path with its symlinks resolved inside the
// workspace, as the editor gets it: a link that leads out is refused by
// the door.
func (env *toolEnv) absReal(rel string) (string, error) {
	real, err := env.root.Real(rel)
	if err != nil {
		return "", err
	}
	abs, _, err := env.root.Resolve(real)
	return abs, err
}

// writeThroughEditor writes data to rel through the editor when it offers
// writes; ok is false when the disk should be written instead.
func (env *toolEnv) writeThroughEditor(ctx context.Context, rel, data string) (ok bool, err error) {
	if env.editor == nil || !env.editor.CanWrite() {
		return false, nil
	}
	abs, err := env.absReal(rel)
	if err != nil {
		return true, err
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), editorWriteTimeout)
	defer cancel()
	if err := env.editor.WriteTextFile(wctx, abs, data); err != nil {
		return true, fmt.Errorf("the editor did not write %s: %v", rel, err)
	}
	return true, nil
}

// bashInEditor runs a bash command line in the editor's terminal, under
// the same pipefail and bounds as a local run, and words its result the
// same way.
func (env *toolEnv) bashInEditor(ctx, cctx context.Context, callID, command string, timeout time.Duration) toolRun {
	r, err := env.editor.Run(cctx, callID, Command{Line: command, Dir: env.dir, OutputLimit: maxToolOutput})
	if err != nil && !r.Killed {
		return fail("bash: the editor's terminal: %v", err)
	}
	exit := -1
	output := r.Output
	if r.Truncated {
		output = "[output cut: the beginning is not shown]\n" + output
	}
	switch {
	case r.Killed && ctx.Err() == nil:
		output += fmt.Sprintf("\n[timed out after %v]", timeout)
	case r.Killed:
		output += "\n[interrupted]"
	case r.ExitCode != nil:
		exit = *r.ExitCode
	case r.Signal != "":
		output += "\n[ended by signal " + r.Signal + "]"
	}
	art := &session.Artifacts{Command: command, Pipefail: true}
	if exit >= 0 {
		art.ExitCode = &exit
	}
	out := output
	if exit != 0 {
		out += fmt.Sprintf("\n[exit code %d]", exit)
	}
	return toolRun{ok: exit == 0, content: out, summary: bashSummary(exit, strings.TrimRight(output, "\n")), artifacts: art}
}
