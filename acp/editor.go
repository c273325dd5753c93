package acp

import (
	"context"
	"errors"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// The client's file system and terminal (ACP's fs/* and terminal/*), used
// when its initialize offered them: the agent then reads the editor's view
// of a file (unsaved changes included), writes through the editor (its undo
// and dirty state stay right), and runs bash in a terminal the user
// watches and can stop.

// Caps is what the client offered in initialize.
func (p *Peer) Caps() ClientCaps { return p.caps }

// ErrNotOffered is returned for a client method the client did not offer.
var ErrNotOffered = errors.New("the client does not offer this")

func (p *Peer) sessionID() sdk.SessionId {
	p.mu.Lock()
	defer p.mu.Unlock()
	return sdk.SessionId(p.id)
}

// ReadTextFile asks the client for the text of the file at abs
// (fs/read_text_file): the editor's buffer when the file is open in it.
func (p *Peer) ReadTextFile(ctx context.Context, abs string) (string, error) {
	if !p.caps.ReadTextFile || p.conn == nil {
		return "", ErrNotOffered
	}
	r, err := p.conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: p.sessionID(), Path: abs})
	if err != nil {
		return "", err
	}
	return r.Content, nil
}

// WriteTextFile writes content to the file at abs through the client
// (fs/write_text_file).
func (p *Peer) WriteTextFile(ctx context.Context, abs, content string) error {
	if !p.caps.WriteTextFile || p.conn == nil {
		return ErrNotOffered
	}
	_, err := p.conn.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: p.sessionID(), Path: abs, Content: content})
	return err
}

// TerminalCommand is a command to run in the client's terminal.
type TerminalCommand struct {
	// ToolCallID is the tool call the terminal is shown in.
	ToolCallID string
	Command    string
	Args       []string
	Cwd        string
	// OutputLimit bounds the output the client keeps (bytes, from the
	// end).
	OutputLimit int
}

// TerminalResult is how a command in the client's terminal ended.
type TerminalResult struct {
	Output    string
	Truncated bool
	// ExitCode is nil when the command was ended by a signal (Signal) or
	// killed.
	ExitCode *int
	Signal   string
	// Killed is set when ctx ended first and the command was killed.
	Killed bool
}

// cleanupTimeout bounds the kill, output and release requests that follow
// a cancelled command.
const cleanupTimeout = 5 * time.Second

// RunInTerminal runs c in a terminal of the client: terminal/create, the
// tool call shows the terminal ({type: "terminal", terminalId}),
// terminal/wait_for_exit, terminal/output; when ctx ends first (cancel, the
// tool's timeout) terminal/kill; terminal/release always follows.
func (p *Peer) RunInTerminal(ctx context.Context, c TerminalCommand) (TerminalResult, error) {
	if !p.caps.Terminal || p.conn == nil {
		return TerminalResult{}, ErrNotOffered
	}
	sid := p.sessionID()
	req := sdk.CreateTerminalRequest{SessionId: sid, Command: c.Command, Args: c.Args, Env: []sdk.EnvVariable{}}
	if c.Cwd != "" {
		req.Cwd = sdk.Ptr(c.Cwd)
	}
	if c.OutputLimit > 0 {
		req.OutputByteLimit = sdk.Ptr(c.OutputLimit)
	}
	created, err := p.conn.CreateTerminal(ctx, req)
	if err != nil {
		return TerminalResult{}, err
	}
	tid := created.TerminalId
	cleanup := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	}
	defer func() {
		rctx, cancel := cleanup()
		defer cancel()
		_, _ = p.conn.ReleaseTerminal(rctx, sdk.ReleaseTerminalRequest{SessionId: sid, TerminalId: tid})
	}()
	if c.ToolCallID != "" {
		p.send(ctx, sdk.UpdateToolCall(sdk.ToolCallId(c.ToolCallID), sdk.WithUpdateStatus(sdk.ToolCallStatusInProgress),
			sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolTerminalRef(tid)})))
	}
	var res TerminalResult
	exit, err := p.conn.WaitForTerminalExit(ctx, sdk.WaitForTerminalExitRequest{SessionId: sid, TerminalId: tid})
	octx := ctx
	if ctx.Err() != nil {
		res.Killed = true
		kctx, cancel := cleanup()
		defer cancel()
		_, _ = p.conn.KillTerminal(kctx, sdk.KillTerminalRequest{SessionId: sid, TerminalId: tid})
		octx = kctx
	} else if err != nil {
		return TerminalResult{}, err
	} else {
		res.ExitCode = exit.ExitCode
		if exit.Signal != nil {
			res.Signal = *exit.Signal
		}
	}
	out, err := p.conn.TerminalOutput(octx, sdk.TerminalOutputRequest{SessionId: sid, TerminalId: tid})
	if err != nil {
		if res.Killed {
			return res, nil
		}
		return TerminalResult{}, err
	}
	res.Output, res.Truncated = out.Output, out.Truncated
	if res.ExitCode == nil && res.Signal == "" && !res.Killed && out.ExitStatus != nil {
		res.ExitCode = out.ExitStatus.ExitCode
	}
	return res, nil
}
