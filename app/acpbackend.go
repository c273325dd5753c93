package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/conc"
	"github.com/sourcegraph/conc/panics"

	"github.com/soba-agent/soba-lsp/acp"
	"github.com/soba-agent/soba-lsp/agent"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/internal/text"
	"github.com/soba-agent/soba-lsp/lsp"
	"github.com/soba-agent/soba-lsp/lsp/protocol"
	"github.com/soba-agent/soba-lsp/lsp/slash"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/tool"
	"github.com/soba-agent/soba-lsp/workspace"
)

// ACPBackend serves ACP sessions (docs/acp.md) with the real agent: each
// session is a Workspace at the session's cwd, with the same configuration
// layers as the LSP mode, and the ACP session id is the SOBA session id.
type ACPBackend struct {
	Load        SettingsLoader
	Counter     compaction.Counter
	EntryTokens func(*session.Entry) int
}

var _ acp.Backend = (*ACPBackend)(nil)

// NewSession opens the workspace at opt.Cwd with a new SOBA session.
func (b *ACPBackend) NewSession(_ context.Context, opt acp.SessionOptions) (acp.Session, error) {
	return b.open(opt)
}

// LoadSession opens the workspace at opt.Cwd with opt.SessionID resumed
// (R-T4) and, for session/load, replays it.
func (b *ACPBackend) LoadSession(_ context.Context, opt acp.SessionOptions) (acp.Session, error) {
	s, err := b.open(opt)
	if err != nil {
		return nil, err
	}
	if opt.Replay {
		if err := s.replay(); err != nil {
			_ = s.Close()
			return nil, err
		}
	}
	return s, nil
}

// ListSessions lists the sessions of the workspace at cwd, from its
// configured session directory.
func (b *ACPBackend) ListSessions(_ context.Context, cwd string) ([]acp.SessionSummary, error) {
	dir, err := b.sessionDir(cwd)
	if err != nil {
		return nil, err
	}
	list, err := session.List(dir)
	if err != nil {
		return nil, err
	}
	out := make([]acp.SessionSummary, 0, len(list))
	for _, l := range list {
		out = append(out, acp.SessionSummary{ID: l.SessionID, UpdatedAt: l.UpdatedAt, Title: l.Title})
	}
	return out, nil
}

// sessionDir is the configured session directory of the workspace at cwd.
func (b *ACPBackend) sessionDir(cwd string) (string, error) {
	root, err := workspace.NewRoot(cwd)
	if err != nil {
		return "", err
	}
	defer root.Close()
	settings, _, err := b.Load(root.Dir(), nil, nil)
	if err != nil {
		return "", err
	}
	return settings.SessionDir, nil
}

// DeleteSession moves session id of the workspace at cwd out of its list,
// into the session directory's deleted/ folder (with its index): nothing
// is lost, and moving the file back restores it. A session another
// process has open is refused, naming the reason.
func (b *ACPBackend) DeleteSession(_ context.Context, cwd, id string) (bool, error) {
	if id != filepath.Base(id) || strings.ContainsAny(id, `/\`) || id == "." || id == ".." {
		return false, fmt.Errorf("session/delete: %q is not a session id", id)
	}
	dir, err := b.sessionDir(cwd)
	if err != nil {
		return false, err
	}
	return session.Delete(dir, id)
}

// replay sends the session's leaf path as session/updates (session/load):
// user messages, the agent's text, its tool calls with their results, and
// each capsule's result line; then the budget.
func (s *acpSession) replay() error {
	entries, err := s.ws.Agent().History()
	if err != nil {
		return err
	}
	bg := context.Background()
	for _, e := range entries {
		switch {
		case e.User != nil:
			text := e.User.Text
			s.post(func() { s.peer.UserText(bg, text) })
		case e.Assistant != nil:
			a := e.Assistant
			// The thinking replays as thought, apart from the answer (R-C9).
			s.post(func() { s.peer.Thought(bg, a.Thinking) })
			s.post(func() { s.peer.Text(bg, a.Text) })
			for _, c := range a.ToolCalls {
				t := s.toolCall(c.ID, c.Name, c.Arguments, true)
				s.post(func() { s.peer.ToolCall(bg, t) })
			}
		case e.ToolResult != nil:
			r := e.ToolResult
			st := acp.ToolCompleted
			if !r.OK {
				st = acp.ToolFailed
			}
			shown := resultContent(r.ToolName, firstLine(r.Content), r.Content)
			s.post(func() { s.peer.ToolCallUpdate(bg, r.ToolCallID, st, []acp.ToolContent{{Text: shown}}) })
		case e.Capsule != nil:
			c := e.Capsule
			line := fmt.Sprintf("Compacted context · %s · %d → %d tokens · %s", c.Trigger, c.TokensBefore, c.TokensAfter, c.CheckpointID)
			s.post(func() { s.peer.Text(bg, "\n_"+line+"_\n\n") })
		}
	}
	if b, err := s.ws.Agent().Budget(); err == nil {
		s.post(func() { s.peer.Usage(bg, b.EffectiveTokens, b.HardLimit) })
	}
	s.flush()
	return nil
}

func (b *ACPBackend) open(opt acp.SessionOptions) (*acpSession, error) {
	s := &acpSession{peer: opt.Peer, queue: make(chan func(), 1024), ends: map[string]chan turnEnd{}, rejected: map[string]bool{}, callNames: map[string]string{}, chunked: map[string]bool{}}
	s.work.Go(s.drain)
	var servers []agent.MCPServer
	for _, m := range opt.MCPServers {
		servers = append(servers, agent.MCPServer{Name: m.Name, Command: m.Command, Args: m.Args, Env: m.Env, URL: m.URL, Headers: m.Headers, SSE: m.SSE})
	}
	var editor agent.Editor
	if c := opt.Peer.Caps(); c.ReadTextFile || c.WriteTextFile || c.Terminal {
		editor = acpEditor{s}
	}
	ws, warnings, err := OpenWorkspace(WorkspaceOptions{Root: opt.Cwd, Load: b.Load, Notifier: acpNotifier{s}, Approver: acpApprover{s},
		Counter: b.Counter, EntryTokens: b.EntryTokens, MCPServers: servers, SessionID: opt.SessionID,
		NewSession: opt.SessionID == "", Editor: editor})
	if err != nil {
		close(s.queue)
		s.work.Wait()
		return nil, err
	}
	s.ws = ws
	s.lsp = &LSPBackend{ws: ws, notify: acpLSPNotifier{s}}
	for _, w := range warnings {
		s.warn(w)
	}
	return s, nil
}

type turnEnd struct {
	outcome, err string
	usage        *agent.TurnUsage
}

// acpSession is one ACP session over a Workspace. Updates go through one
// ordered queue drained by one goroutine, so the agent's notifier never
// blocks on the client and the prompt's answer follows its last update.
type acpSession struct {
	ws    *Workspace
	lsp   *LSPBackend
	peer  *acp.Peer
	queue chan func()
	work  conc.WaitGroup // runs drain

	mu       sync.Mutex // guards the fields below
	ends     map[string]chan turnEnd
	inTurn   bool
	lastCall acp.ToolCall
	// lastCallName and lastCallArgs are lastCall's tool and arguments, for
	// the diff its permission request shows.
	lastCallName string
	lastCallArgs json.RawMessage
	rejected     map[string]bool // approval scopes rejected for the session
	// callNames are the tool names of this session's calls by id, so a
	// result is shown as its tool's kind wants.
	callNames map[string]string
	// chunked are the running compactions whose summary streamed to the
	// client (compaction_summary_chunk), by operation id.
	chunked map[string]bool
	closed  bool
	// pending are config option changes made during a turn, applied when
	// it ends (a change applies from the next turn), by option id.
	pending map[string]any
	// usage is the latest budget not yet queued; usageSent when the last
	// was; usageTimer the scheduled trailing send.
	usage      *compaction.Budget
	usageSent  time.Time
	usageTimer *time.Timer
}

func (s *acpSession) drain() {
	for f := range s.queue {
		if r := panics.Try(f); r != nil {
			fmt.Fprintln(os.Stderr, "soba-lsp acp: update:", r.Value)
		}
	}
}

// post queues f after every update queued so far.
func (s *acpSession) post(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.queue <- f
	}
}

// flush waits until every update queued so far is written.
func (s *acpSession) flush() {
	done := make(chan struct{})
	s.post(func() { close(done) })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
}

func (s *acpSession) warn(m string) {
	s.post(func() { s.peer.Text(context.Background(), "\n> **Warning:** "+m+"\n") })
}

func (s *acpSession) endOf(turnID string) chan turnEnd {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.ends[turnID]
	if c == nil {
		c = make(chan turnEnd, 1)
		s.ends[turnID] = c
	}
	return c
}

func (s *acpSession) ID() string {
	i, err := s.ws.Agent().Info()
	if err != nil {
		return ""
	}
	return i.SessionID
}

// Prompt runs a slash command through the server's grammar (lsp/slash, the
// same handlers as soba.run) or one turn of the agent.
func (s *acpSession) Prompt(ctx context.Context, text string) (acp.TurnResult, error) {
	stop, usage, err := s.prompt(ctx, text)
	s.applyPending()
	r := acp.TurnResult{Stop: stop}
	if usage != nil {
		r.Usage = &acp.Usage{Input: usage.Input, Output: usage.Output, Cached: usage.Cached}
	}
	return r, err
}

func (s *acpSession) prompt(ctx context.Context, text string) (acp.StopReason, *agent.TurnUsage, error) {
	p := slash.Parse(text)
	if p.Kind != slash.Prompt {
		stop, err := s.command(ctx, p, text)
		return stop, nil, err
	}
	s.mu.Lock()
	s.inTurn = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inTurn = false
		s.mu.Unlock()
	}()
	turnID, _, err := s.ws.Agent().Prompt(p.Text)
	if _, tooLarge := errors.AsType[*agent.PromptTooLargeError](err); tooLarge {
		return "", nil, acp.InvalidInput(err)
	}
	if err != nil {
		return "", nil, err
	}
	end := s.endOf(turnID)
	defer func() {
		s.mu.Lock()
		delete(s.ends, turnID)
		s.mu.Unlock()
	}()
	var e turnEnd
	select {
	case e = <-end:
	case <-ctx.Done():
		_, _, _ = s.ws.Agent().Cancel()
		select {
		case e = <-end:
		case <-time.After(10 * time.Second):
			return acp.Cancelled, nil, nil
		}
		if e.outcome != "failed" {
			return acp.Cancelled, e.usage, nil
		}
	}
	switch e.outcome {
	case "cancelled":
		return acp.Cancelled, e.usage, nil
	case "failed":
		if e.err == agent.ErrTooManyModelCalls.Error() {
			return acp.MaxTurnRequests, e.usage, nil
		}
		return "", e.usage, errors.New(e.err)
	}
	return acp.EndTurn, e.usage, nil
}

// command runs a slash command and shows its lines as the agent's message.
func (s *acpSession) command(ctx context.Context, p slash.Parsed, text string) (acp.StopReason, error) {
	if p.Kind == slash.Command && strings.HasPrefix(p.Command, "soba.session.") {
		s.post(func() {
			s.peer.Text(ctx, "/session is not available over ACP: the editor lists, opens and loads sessions (session/new, session/load)\n")
		})
		s.flush()
		return acp.EndTurn, nil
	}
	r, err := lsp.RunText(ctx, s.lsp, text)
	if err != nil {
		return "", err
	}
	var lines []string
	if c, ok := r.(protocol.RunCommandResult); ok {
		lines = c.Lines
	}
	out := strings.Join(lines, "\n") + "\n"
	s.post(func() { s.peer.Text(context.Background(), out) })
	s.flush()
	return acp.EndTurn, nil
}

func (s *acpSession) Cancel() { _, _, _ = s.ws.Agent().Cancel() }

func (s *acpSession) Close() error {
	err := s.ws.Close()
	s.flush()
	s.mu.Lock()
	if s.usageTimer != nil {
		s.usageTimer.Stop()
		s.usageTimer = nil
	}
	if !s.closed {
		s.closed = true
		close(s.queue)
	}
	s.mu.Unlock()
	s.work.Wait()
	return err
}

// maxDiffFileBytes bounds the file a diff of write_file or edit_file shows
// whole (through the door, R-W1): a larger one, a FIFO or a link out of the
// workspace is shown as the change alone.
const maxDiffFileBytes = 4 << 20

// toolArgs are the arguments of SOBA's tools that the client is shown.
type toolArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	OldText string `json:"old_text"`
	NewText string `json:"new_text"`
	Command string `json:"command"`
	Pattern string `json:"pattern"`
}

// toolCall is how the client shows a call of one of SOBA's tools: its kind,
// the file it touches, and for an approval exactly what will run (R-W3):
// the whole command of bash, the diff of write_file and edit_file. A
// replayed call (session/load) shows what the transcript recorded, never
// the disk as it is now: an edit's replaced text, a write's text.
func (s *acpSession) toolCall(id, name string, args json.RawMessage, replayed bool) acp.ToolCall {
	t := acp.ToolCall{ID: id, Title: name, Kind: "other", Status: acp.ToolPending}
	var a toolArgs
	var raw any
	if json.Unmarshal(args, &raw) == nil {
		t.RawInput = raw
	}
	_ = json.Unmarshal(args, &a)
	abs := ""
	if a.Path != "" {
		if p, _, err := s.ws.Root().Resolve(a.Path); err == nil {
			abs = p
			t.Locations = []string{p}
		}
	}
	switch name {
	case tool.ReadFile:
		t.Kind, t.Title = "read", "Read "+a.Path
	case tool.ListFiles:
		t.Kind, t.Title = "search", "List "+a.Path
	case tool.Grep:
		t.Kind, t.Title = "search", "Grep "+a.Pattern
	case tool.Bash:
		t.Kind, t.Title = "execute", "Run `"+firstLine(a.Command)+"`"
		t.Content = []acp.ToolContent{{Text: "```sh\n" + visiblePadding(a.Command) + "\n```"}}
	case tool.WriteFile, tool.EditFile:
		t.Kind, t.Title = "edit", "Write "+a.Path
		if name == tool.EditFile {
			t.Title = "Edit " + a.Path
		}
		switch {
		case replayed && name == tool.WriteFile:
			// The file before the write is not recorded, and the disk now
			// holds a later state: the written text, not a diff.
			t.Content = []acp.ToolContent{{Text: fence(a.Content)}}
		case replayed:
			// The replaced text and its replacement, as recorded.
			t.Content = []acp.ToolContent{fileDiff(name, abs, a, nil)}
		default:
			var current *string
			if data, err := s.ws.Root().ReadFile(abs, maxDiffFileBytes); err == nil && abs != "" {
				c := string(data)
				current = &c
			}
			t.Content = []acp.ToolContent{fileDiff(name, abs, a, current)}
		}
	case tool.Checkpoint, tool.ActivateSkill:
		t.Kind = "think"
	}
	return t
}

// fileDiff is the diff a write_file or edit_file call shows, given the
// file's current text (nil when it does not exist or cannot be read whole):
// the whole file before and after; for an edit whose old_text is not found
// exactly once in it, the replaced text alone.
func fileDiff(name, abs string, a toolArgs, current *string) acp.ToolContent {
	if name == tool.WriteFile {
		return acp.ToolContent{IsDiff: true, Path: abs, OldText: current, NewText: a.Content}
	}
	old, nw := a.OldText, a.NewText
	if current != nil && a.OldText != "" && strings.Count(*current, a.OldText) == 1 {
		old = *current
		nw = strings.Replace(old, a.OldText, a.NewText, 1)
	}
	return acp.ToolContent{IsDiff: true, Path: abs, OldText: &old, NewText: nw}
}

// editorDiff is the diff of a write_file or edit_file call against the
// editor's text of the file, unsaved changes included, when the client
// reads files for the agent (fs.readTextFile): that text is what the tool
// will change, so it is what the permission request shows. ok is false
// otherwise, or when the editor does not answer within editorDiffTimeout
// (the diff against the disk stands then).
func (s *acpSession) editorDiff(ctx context.Context, name string, args json.RawMessage) (acp.ToolContent, bool) {
	if (name != tool.WriteFile && name != tool.EditFile) || !s.peer.Caps().ReadTextFile {
		return acp.ToolContent{}, false
	}
	var a toolArgs
	if json.Unmarshal(args, &a) != nil || a.Path == "" {
		return acp.ToolContent{}, false
	}
	abs, rel, err := s.ws.Root().Resolve(a.Path)
	if err != nil {
		return acp.ToolContent{}, false
	}
	// The tool reads a larger file from the disk (agent.maxEditorRead), and
	// so does this diff.
	if fi, err := s.ws.Root().Stat(rel); err == nil && (fi.IsDir() || fi.Size() > maxDiffFileBytes) {
		return acp.ToolContent{}, false
	}
	rctx, cancel := context.WithTimeout(ctx, editorDiffTimeout)
	defer cancel()
	text, err := s.peer.ReadTextFile(rctx, abs)
	if err != nil {
		return acp.ToolContent{}, false
	}
	return fileDiff(name, abs, a, &text), true
}

// editorDiffTimeout bounds the editor's answer for a permission's diff.
const editorDiffTimeout = 10 * time.Second

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// visiblePadding shows trailing blanks and control characters of a command
// so what is approved is what runs (R-W3).
func visiblePadding(cmd string) string {
	var b strings.Builder
	for _, r := range cmd {
		switch {
		case r == '\n' || r == ' ':
			b.WriteRune(r)
		case r == '\t':
			b.WriteString("\\t")
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x200b || r == 0x202e || r == 0xfeff:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	out := b.String()
	if trimmed := strings.TrimRight(out, " \n"); len(trimmed) != len(out) {
		out = trimmed + fmt.Sprintf(" ⟨%d trailing blank characters⟩", len(out)-len(trimmed))
	}
	return out
}

// acpNotifier puts the agent's reports on the session's update queue.
type acpNotifier struct{ s *acpSession }

func (n acpNotifier) Event(e agent.Event) {
	s := n.s
	bg := context.Background()
	switch e.Type {
	case "text":
		s.post(func() { s.peer.Text(bg, e.Delta) })
	case "thinking":
		// agent_thought_chunk (R-C9). A moved piece was sent as message
		// chunks already, which ACP cannot take back: it is sent again as
		// thought so the client has the thinking whole.
		s.post(func() { s.peer.Thought(bg, e.Delta) })
	case "tool_call":
		t := s.toolCall(e.ID, e.Name, e.Arguments, false)
		s.mu.Lock()
		s.lastCall, s.lastCallName, s.lastCallArgs = t, e.Name, e.Arguments
		s.callNames[e.ID] = e.Name
		s.mu.Unlock()
		s.post(func() { s.peer.ToolCall(bg, t) })
	case "tool_result":
		st := acp.ToolCompleted
		if e.OK != nil && !*e.OK {
			st = acp.ToolFailed
		}
		shown := resultContent(s.callName(e.ID), e.Summary, e.Output)
		s.post(func() { s.peer.ToolCallUpdate(bg, e.ID, st, []acp.ToolContent{{Text: shown}}) })
	case "turn_end":
		end := s.endOf(e.TurnID)
		// The turn's last budget goes before its answer. (turn_end is sent
		// before the agent publishes the idle budget, so that one may
		// follow the answer.)
		s.flushUsage()
		s.post(func() {
			if e.Outcome == "failed" && e.Error != "" {
				s.peer.Text(bg, "\n> **Error:** "+e.Error+"\n")
			}
			end <- turnEnd{outcome: e.Outcome, err: e.Error, usage: e.Usage}
		})
	}
}

// Budget is a usage_update: used = the effective tokens, size = the hard
// limit (the most SOBA will ever send, R-G4), so a client's gauge fills up
// exactly when a compaction is forced.
//
// Budgets are coalesced like soba/budget: at most one usage_update per
// usageInterval, the latest always sent (a trailing one when budgets came
// faster), and any pending one before a turn's answer.
func (n acpNotifier) Budget(b compaction.Budget) {
	s := n.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.usage = &b
	if s.usageTimer != nil {
		return // a trailing send is scheduled and will take the latest
	}
	wait := usageInterval - time.Since(s.usageSent)
	if wait <= 0 {
		s.queueUsageLocked()
		return
	}
	s.usageTimer = time.AfterFunc(wait, func() {
		_ = panics.Try(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.usageTimer = nil
			s.queueUsageLocked()
		})
	})
}

// usageInterval is the least time between two usage_updates.
const usageInterval = 100 * time.Millisecond

// queueUsageLocked queues the latest budget as a usage_update; s.mu is held.
func (s *acpSession) queueUsageLocked() {
	b := s.usage
	if b == nil || s.closed {
		return
	}
	s.usage, s.usageSent = nil, time.Now()
	s.queue <- func() { s.peer.Usage(context.Background(), b.EffectiveTokens, b.HardLimit) }
}

// flushUsage queues a pending usage_update at once.
func (s *acpSession) flushUsage() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.usageTimer != nil {
		s.usageTimer.Stop()
		s.usageTimer = nil
	}
	s.queueUsageLocked()
}

// Compaction reports a compaction: to a client that opted in, as
// compaction_update (in_progress, the summary streamed as
// compaction_summary_chunk, then completed, failed or cancelled); to any
// other, a compaction inside a turn as agent message lines: its title when
// it starts and its result line when it ends (R-B3).
func (n acpNotifier) Compaction(e agent.CompactionEvent) {
	s := n.s
	if s.peer.CompactionUpdates() {
		s.compactionUpdate(e)
		return
	}
	s.mu.Lock()
	inTurn := s.inTurn
	s.mu.Unlock()
	if !inTurn {
		return
	}
	switch e.Phase {
	case "start":
		title := e.Title
		if title == "" {
			title = agent.TitleCompacting
		}
		s.post(func() { s.peer.Text(context.Background(), "\n_"+title+"…_\n") })
	case "end":
		if e.CompactionResult != nil {
			line := e.Line
			s.post(func() { s.peer.Text(context.Background(), "\n_"+line+"_\n\n") })
		}
	}
}

func (n acpNotifier) Log(string)       {}
func (n acpNotifier) Warn(m string)    { n.s.warn(m) }
func (n acpLSPNotifier) Log(string)    {}
func (n acpLSPNotifier) Warn(m string) { n.s.warn(m) }

// acpLSPNotifier is the notifier of the LSPBackend that runs slash commands:
// the agent's own notifier already reports events, budgets and compactions.
type acpLSPNotifier struct{ s *acpSession }

func (acpLSPNotifier) Event(protocol.Event)                {}
func (acpLSPNotifier) Budget(protocol.Budget)              {}
func (acpLSPNotifier) Compaction(protocol.CompactionEvent) {}

// acpApprover asks through session/request_permission, about the tool call
// the agent announced last (approvals run one at a time, right after the
// call's tool_call event). "Allow for this session" is kept by the agent,
// "reject for this session" here, both by the request's scope: a kind of
// tool (file edits, bash commands) or one MCP server's tools.
type acpApprover struct{ s *acpSession }

func (a acpApprover) Approve(ctx context.Context, req agent.ApprovalRequest) (agent.Approval, error) {
	scope := req.Scope
	if scope == "" {
		scope = req.Tool
	}
	s := a.s
	s.mu.Lock()
	t, name, args := s.lastCall, s.lastCallName, s.lastCallArgs
	rejected := s.rejected[scope]
	s.mu.Unlock()
	if rejected {
		return agent.Deny, nil
	}
	if diff, ok := s.editorDiff(ctx, name, args); ok {
		t.Content = []acp.ToolContent{diff}
	}
	s.flush()
	d, err := s.peer.Permission(ctx, t, acp.Asking{Scope: req.Scope, EveryTime: req.EveryTime, Why: req.Why})
	if err != nil {
		return agent.Deny, err
	}
	switch d {
	case acp.AllowOnce:
		return agent.AllowOnce, nil
	case acp.AllowAlways:
		return agent.AllowSession, nil
	case acp.RejectAlways:
		s.mu.Lock()
		s.rejected[scope] = true
		s.mu.Unlock()
	}
	return agent.Deny, nil
}

// compactionUpdate sends one phase of a compaction as compaction_update and
// its streamed summary as compaction_summary_chunk. Only a completed
// compaction carries a summary (the schema's rule): the result line and the
// capsule's sections, replacing the streamed chunks. A compaction that did
// not complete clears what streamed, and inside a turn its result line (why
// it was skipped, stale, cancelled or failed) is the agent's message line;
// skipped and stale outcomes, which change nothing, are "cancelled". A
// compaction never reports completed unless it appended a capsule (R-C7).
func (s *acpSession) compactionUpdate(e agent.CompactionEvent) {
	bg := context.Background()
	id := e.OperationID
	switch e.Phase {
	case "start":
		s.post(func() { s.peer.Compaction(bg, acp.CompactionUpdate{ID: id, Status: acp.CompactionInProgress}) })
	case "summary":
		s.mu.Lock()
		s.chunked[id] = true
		s.mu.Unlock()
		delta := e.SummaryDelta
		s.post(func() { s.peer.CompactionChunk(bg, id, delta) })
	case "end":
		if e.CompactionResult == nil {
			return
		}
		r := *e.CompactionResult
		s.mu.Lock()
		chunked, inTurn := s.chunked[id], s.inTurn
		delete(s.chunked, id)
		s.mu.Unlock()
		s.post(func() {
			u := acp.CompactionUpdate{ID: r.OperationID, Status: acp.CompactionCancelled, ClearSummary: chunked}
			switch r.Outcome {
			case compaction.OutcomeCompleted:
				u.Status, u.Summary = acp.CompactionCompleted, r.Line
				if r.CheckpointID != "" {
					if _, md, err := s.ws.Agent().CapsuleShow(r.CheckpointID); err == nil {
						u.Summary += "\n\n" + capsuleSections(md)
					}
				}
			case compaction.OutcomeFailed:
				u.Status, u.Error = acp.CompactionFailed, r.Reason
			}
			s.peer.Compaction(bg, u)
			if u.Status != acp.CompactionCompleted && inTurn {
				s.peer.Text(bg, "\n_"+r.Line+"_\n\n")
			}
		})
	}
}

// capsuleSections are the user-facing sections of a capsule's .capsule.md
// (front matter left out).
func capsuleSections(md string) string {
	if rest, ok := strings.CutPrefix(md, "---\n"); ok {
		if i := strings.Index(rest, "\n---\n"); i >= 0 {
			md = rest[i+len("\n---\n"):]
		}
	}
	return strings.TrimSpace(md)
}

func (s *acpSession) callName(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := s.callNames[id]
	delete(s.callNames, id)
	return name
}

// maxShownOutput bounds a tool result shown in the client.
const maxShownOutput = 16 << 10

// resultContent is what the client shows of a tool result: the output of
// bash and MCP tools (cut at 16 KiB, saying so), the first line of the
// others (a file's contents stay in the transcript and the model input).
func resultContent(name, summary, output string) string {
	if name != tool.Bash && !agent.IsMCPTool(name) {
		return summary
	}
	return fence(output)
}

// fence is output as a code block, cut at maxShownOutput (saying so).
func fence(output string) string {
	if len(output) > maxShownOutput {
		output = text.Clip(output, maxShownOutput) + fmt.Sprintf("\n[%d bytes shown of %d]", maxShownOutput, len(output))
	}
	return "```\n" + output + "\n```"
}

// acpEditor is the client's file system and terminal, as the agent's
// tools use them (agent.Editor).
type acpEditor struct{ s *acpSession }

func (e acpEditor) CanRead() bool  { return e.s.peer.Caps().ReadTextFile }
func (e acpEditor) CanWrite() bool { return e.s.peer.Caps().WriteTextFile }
func (e acpEditor) CanRun() bool   { return e.s.peer.Caps().Terminal }

func (e acpEditor) ReadTextFile(ctx context.Context, abs string) (string, error) {
	return e.s.peer.ReadTextFile(ctx, abs)
}

func (e acpEditor) WriteTextFile(ctx context.Context, abs, content string) error {
	return e.s.peer.WriteTextFile(ctx, abs, content)
}

// Run runs the command in the client's terminal, after every update queued
// so far (the tool call it is shown in is announced first).
func (e acpEditor) Run(ctx context.Context, callID string, c agent.Command) (agent.CommandResult, error) {
	e.s.flush()
	r, err := e.s.peer.RunInTerminal(ctx, acp.TerminalCommand{ToolCallID: callID, Command: "bash",
		Args: []string{"-o", "pipefail", "-c", c.Line}, Cwd: c.Dir, OutputLimit: c.OutputLimit})
	return agent.CommandResult{Output: r.Output, Truncated: r.Truncated, ExitCode: r.ExitCode, Signal: r.Signal, Killed: r.Killed}, err
}

var _ acp.Configurable = (*acpSession)(nil)

// ConfigOptions are the session's settings as the editor shows them:
// auto-compaction and the approval policy (the user's, R-W5: the editor
// acts for the user), with the values a change made during the running
// turn will take.
func (s *acpSession) ConfigOptions() []acp.ConfigOption {
	ag := s.ws.Agent()
	auto := true
	if b, err := ag.Budget(); err == nil {
		auto = b.AutoCompact
	}
	approval := ag.Approval()
	// Taken before s.mu: the workspace's lock is never awaited under it.
	names, model, summary := s.ws.ModelChoices()
	s.mu.Lock()
	if v, ok := s.pending[acp.OptionAutoCompaction].(bool); ok {
		auto = v
	}
	if v, ok := s.pending[acp.OptionApproval].(string); ok {
		approval = v
	}
	if v, ok := s.pending[acp.OptionModel].(string); ok {
		model = v
	}
	if v, ok := s.pending[acp.OptionSummaryModel].(string); ok {
		summary = v
	}
	s.mu.Unlock()
	opts := []acp.ConfigOption{
		{ID: acp.OptionAutoCompaction, Name: "Auto-compaction", Bool: &auto,
			Description: "Compact the context on its own when the budget calls for it (/auto-compact)"},
		{ID: acp.OptionApproval, Name: "Approval", Category: "mode", Value: approval, Choices: []acp.Choice{
			{Value: agent.ApprovalAsk, Name: "Ask", Description: "File writes, bash and MCP tools ask before they run"},
			{Value: agent.ApprovalAuto, Name: "Auto", Description: "Tools run without asking"},
		}, Description: "Whether tools ask before they run, for this session"},
	}
	if len(names) == 0 {
		// Without the user's `models` there is nothing to choose among.
		return opts
	}
	return append(opts,
		acp.ConfigOption{ID: acp.OptionModel, Name: "Model", Category: "model", Value: model, Choices: modelChoices(names, "model"),
			Description: "The model that does the work, among the models of the user settings, for this session"},
		acp.ConfigOption{ID: acp.OptionSummaryModel, Name: "Summary model", Category: "model", Value: summary, Choices: modelChoices(names, "summaryModel"),
			Description: "The model that writes capsule summaries, among the models of the user settings, for this session"})
}

// modelChoices are the user's model names, after the configured one (the
// object form of key, or unset) that ModelFromSettings stands for.
func modelChoices(names []string, key string) []acp.Choice {
	out := []acp.Choice{{Value: ModelFromSettings, Name: "As configured", Description: "`" + key + "` of the settings"}}
	for _, n := range names {
		out = append(out, acp.Choice{Value: n, Name: n})
	}
	return out
}

// SetConfigOption changes a setting: at once when no turn runs, else when
// the turn ends. The agent records it as a settings entry of the transcript
// (resume and replay see it).
func (s *acpSession) SetConfigOption(_ context.Context, id string, v any) error {
	s.mu.Lock()
	if s.inTurn {
		if s.pending == nil {
			s.pending = map[string]any{}
		}
		s.pending[id] = v
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	return s.applyOption(id, v)
}

func (s *acpSession) applyOption(id string, v any) error {
	switch id {
	case acp.OptionAutoCompaction:
		on, _ := v.(bool)
		_, err := s.ws.Agent().SetAutoCompact(on)
		return err
	case acp.OptionApproval:
		mode, _ := v.(string)
		return s.ws.Agent().SetApproval(mode)
	case acp.OptionModel, acp.OptionSummaryModel:
		name, _ := v.(string)
		return s.ws.PickModel(id == acp.OptionSummaryModel, name)
	}
	return fmt.Errorf("unknown config option %q", id)
}

// applyPending applies the changes made during the turn that just ended.
func (s *acpSession) applyPending() {
	s.mu.Lock()
	pending := s.pending
	s.pending = nil
	s.mu.Unlock()
	for _, id := range []string{acp.OptionAutoCompaction, acp.OptionApproval, acp.OptionModel, acp.OptionSummaryModel} {
		if v, ok := pending[id]; ok {
			if err := s.applyOption(id, v); err != nil {
				s.warn("could not change " + id + ": " + err.Error())
			}
		}
	}
}
