package acp

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/soba-agent/soba-lsp/lsp/slash"
)

// Peer is the client side of one session, as the backend sees it: the
// session/update stream and session/request_permission. Updates are sent in
// the order the methods are called; every method returns once its message
// is written (or the connection is gone).
type Peer struct {
	conn *sdk.AgentSideConnection
	// raw writes whole lines beside the SDK's (compaction_update);
	// compaction says whether the client opted in to it.
	raw        io.Writer
	compaction *atomic.Bool
	// caps is what the client offered when the session was opened.
	caps ClientCaps

	mu       sync.Mutex // guards id, lastUsed, early; serializes sends
	id       string
	lastUsed [2]int
	// early holds what was sent while a new session was being made (its
	// start warnings: an MCP server that did not start), before it had an
	// id; flushEarly sends them once it has one.
	early []sdk.SessionUpdate
}

// maxEarly bounds the updates kept before a session has its id.
const maxEarly = 64

func (p *Peer) setID(id string) {
	p.mu.Lock()
	p.id = id
	p.mu.Unlock()
}

func (p *Peer) send(ctx context.Context, u sdk.SessionUpdate) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn == nil {
		return
	}
	if p.id == "" {
		if len(p.early) < maxEarly {
			p.early = append(p.early, u)
		}
		return
	}
	_ = p.conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: sdk.SessionId(p.id), Update: u})
}

// flushEarly sends what was sent before the session had its id.
func (p *Peer) flushEarly(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	early := p.early
	p.early = nil
	if p.id == "" || p.conn == nil {
		return
	}
	for _, u := range early {
		_ = p.conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: sdk.SessionId(p.id), Update: u})
	}
}

// Text streams a piece of the agent's answer (agent_message_chunk).
func (p *Peer) Text(ctx context.Context, delta string) {
	if delta != "" {
		p.send(ctx, sdk.UpdateAgentMessageText(delta))
	}
}

// Thought streams a piece of the model's reasoning
// (agent_thought_chunk), apart from the answer (R-C9).
func (p *Peer) Thought(ctx context.Context, delta string) {
	if delta != "" {
		p.send(ctx, sdk.UpdateAgentThoughtText(delta))
	}
}

// UserText replays a user message (user_message_chunk), for session/load.
func (p *Peer) UserText(ctx context.Context, text string) {
	p.send(ctx, sdk.UpdateUserMessageText(text))
}

// ToolKind is ACP's tool kind: read, edit, delete, move, search, execute,
// think, fetch, other.
type ToolKind string

// ToolStatus is a tool call's status: pending, in_progress, completed, failed.
type ToolStatus string

// Tool call statuses.
const (
	ToolPending    ToolStatus = "pending"
	ToolInProgress ToolStatus = "in_progress"
	ToolCompleted  ToolStatus = "completed"
	ToolFailed     ToolStatus = "failed"
)

// ToolContent is one piece of a tool call's content: text, or a diff of a
// file (OldText nil for a new file).
type ToolContent struct {
	Text    string
	Path    string
	OldText *string
	NewText string
	IsDiff  bool
}

// ToolCall is a tool call as the client shows it.
type ToolCall struct {
	ID        string
	Title     string
	Kind      ToolKind
	Status    ToolStatus
	RawInput  any
	Locations []string // absolute paths
	Content   []ToolContent
}

func content(cs []ToolContent) []sdk.ToolCallContent {
	var out []sdk.ToolCallContent
	for _, c := range cs {
		if c.IsDiff {
			if c.OldText != nil {
				out = append(out, sdk.ToolDiffContent(c.Path, c.NewText, *c.OldText))
			} else {
				out = append(out, sdk.ToolDiffContent(c.Path, c.NewText))
			}
			continue
		}
		out = append(out, sdk.ToolContent(sdk.TextBlock(c.Text)))
	}
	return out
}

func locations(paths []string) []sdk.ToolCallLocation {
	var out []sdk.ToolCallLocation
	for _, p := range paths {
		out = append(out, sdk.ToolCallLocation{Path: p})
	}
	return out
}

// ToolCall announces a tool call (tool_call).
func (p *Peer) ToolCall(ctx context.Context, t ToolCall) {
	opts := []sdk.ToolCallStartOpt{sdk.WithStartKind(sdk.ToolKind(t.Kind)), sdk.WithStartStatus(sdk.ToolCallStatus(t.Status))}
	if t.RawInput != nil {
		opts = append(opts, sdk.WithStartRawInput(t.RawInput))
	}
	if len(t.Locations) > 0 {
		opts = append(opts, sdk.WithStartLocations(locations(t.Locations)))
	}
	if len(t.Content) > 0 {
		opts = append(opts, sdk.WithStartContent(content(t.Content)))
	}
	p.send(ctx, sdk.StartToolCall(sdk.ToolCallId(t.ID), t.Title, opts...))
}

// ToolCallUpdate reports a tool call's progress or result (tool_call_update);
// the content, when given, is appended to what the client shows.
func (p *Peer) ToolCallUpdate(ctx context.Context, id string, status ToolStatus, cs []ToolContent) {
	opts := []sdk.ToolCallUpdateOpt{sdk.WithUpdateStatus(sdk.ToolCallStatus(status))}
	if len(cs) > 0 {
		opts = append(opts, sdk.WithUpdateContent(content(cs)))
	}
	p.send(ctx, sdk.UpdateToolCall(sdk.ToolCallId(id), opts...))
}

// Usage reports the context in use against its size (usage_update); an
// unchanged pair is not sent again, so budget changes that do not move the
// numbers (a phase change) cost nothing on the wire.
func (p *Peer) Usage(ctx context.Context, used, size int) {
	p.mu.Lock()
	same := p.lastUsed == [2]int{used, size}
	p.lastUsed = [2]int{used, size}
	p.mu.Unlock()
	if same {
		return
	}
	p.send(ctx, sdk.SessionUpdate{UsageUpdate: &sdk.SessionUsageUpdate{Used: used, Size: size}})
}

// Commands announces SOBA's slash commands (available_commands_update),
// from the server's one grammar (lsp/slash).
func (p *Peer) Commands(ctx context.Context) {
	p.send(ctx, sdk.SessionUpdate{AvailableCommandsUpdate: &sdk.SessionAvailableCommandsUpdate{AvailableCommands: AvailableCommands()}})
}

// AvailableCommands are the slash commands as ACP lists them: one per
// command word (`/capsule` once, its forms in the hint), the description of
// its first form.
func AvailableCommands() []sdk.AvailableCommand {
	var out []sdk.AvailableCommand
	index := map[string]int{}
	for _, c := range slash.Commands {
		if strings.HasPrefix(c.Usage, "//") {
			continue // not a command: how to send a leading / to the model
		}
		word, rest, _ := strings.Cut(strings.TrimPrefix(c.Usage, "/"), " ")
		if i, ok := index[word]; ok {
			if rest != "" {
				if in := out[i].Input; in != nil && in.Unstructured != nil {
					in.Unstructured.Hint += " | " + rest
				} else {
					out[i].Input = &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: rest}}
				}
			}
			continue
		}
		ac := sdk.AvailableCommand{Name: word, Description: c.Summary}
		if rest != "" {
			ac.Input = &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: rest}}
		}
		index[word] = len(out)
		out = append(out, ac)
	}
	return out
}

// Decision is the user's answer to a permission request.
type Decision int

// Decisions, as ACP's permission option kinds.
const (
	RejectOnce Decision = iota
	RejectAlways
	AllowOnce
	AllowAlways
)

// decisionOptions are the four answers; scope names what the "this
// session" answers cover ("file edits", "the tools of MCP server x"). A call
// asked every time (a protected path, R-W6) gets allow once and reject only:
// an answer for the session would not hold for it.
func decisionOptions(scope string, everyTime bool) []sdk.PermissionOption {
	if everyTime {
		return []sdk.PermissionOption{
			{OptionId: "allow_once", Name: "Allow once", Kind: sdk.PermissionOptionKindAllowOnce},
			{OptionId: "reject_once", Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce},
		}
	}
	if scope == "" {
		scope = "this tool"
	}
	return []sdk.PermissionOption{
		{OptionId: "allow_once", Name: "Allow once", Kind: sdk.PermissionOptionKindAllowOnce},
		{OptionId: "allow_always", Name: "Allow " + scope + " for this session", Kind: sdk.PermissionOptionKindAllowAlways},
		{OptionId: "reject_once", Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce},
		{OptionId: "reject_always", Name: "Reject " + scope + " for this session", Kind: sdk.PermissionOptionKindRejectAlways},
	}
}

// ErrPermissionCancelled is returned when the client answered a permission
// request with the cancelled outcome (the turn was cancelled).
var ErrPermissionCancelled = errors.New("permission request cancelled")

// Asking is what a permission request says besides the tool call.
type Asking struct {
	// Scope names what the answers for the session cover.
	Scope string
	// EveryTime marks a call asked every time (a write to a protected
	// path, a skill's file, R-W6): only allow once and reject are offered.
	EveryTime bool
	// Why is the reason it is asked every time ("Asked every time:
	// .git/hooks/pre-commit — git runs commands from it …"), the first
	// content of the request, before the diff or command, as the LSP
	// approval puts it first.
	Why string
}

// Permission asks the user whether the tool call t may run
// (session/request_permission), showing t's title, content and input.
func (p *Peer) Permission(ctx context.Context, t ToolCall, a Asking) (Decision, error) {
	p.mu.Lock()
	id := p.id
	p.mu.Unlock()
	shown := content(t.Content)
	if a.Why != "" {
		shown = append([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(a.Why))}, shown...)
	}
	req := sdk.RequestPermissionRequest{SessionId: sdk.SessionId(id), Options: decisionOptions(a.Scope, a.EveryTime),
		ToolCall: sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId(t.ID), Title: sdk.Ptr(t.Title), Kind: sdk.Ptr(sdk.ToolKind(t.Kind)),
			Status: sdk.Ptr(sdk.ToolCallStatusPending), RawInput: t.RawInput, Locations: locations(t.Locations), Content: shown}}
	resp, err := p.conn.RequestPermission(ctx, req)
	if err != nil {
		return RejectOnce, err
	}
	if resp.Outcome.Selected == nil {
		return RejectOnce, ErrPermissionCancelled
	}
	switch resp.Outcome.Selected.OptionId {
	case "allow_once":
		return AllowOnce, nil
	case "allow_always":
		return AllowAlways, nil
	case "reject_always":
		return RejectAlways, nil
	}
	return RejectOnce, nil
}
