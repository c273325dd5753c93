package compaction

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/tool"
)

// quarterCounter counts a token per four bytes, like a rough tokenizer; the
// engine's rules do not depend on which tokenizer counts.
type quarterCounter struct{}

func (quarterCounter) Count(s string) int { return (len(s) + 3) / 4 }

// builder makes linear transcripts for tests.
type builder struct {
	es    Entries
	calls int
}

func newBuilder() *builder {
	b := &builder{}
	b.add(session.Entry{Type: session.TypeSession, Session: &session.SessionHeader{Version: 1, SessionID: "s1"}}, 0)
	return b
}

func (b *builder) add(e session.Entry, tokens int) string {
	if e.ID == "" {
		e.ID = fmt.Sprintf("e%d", len(b.es))
	}
	if len(b.es) > 0 {
		p := b.es[len(b.es)-1].ID
		e.ParentID = &p
	}
	e.Tokens = tokens
	b.es = append(b.es, e)
	return e.ID
}

func (b *builder) user(text string, tokens int) string {
	return b.add(session.Entry{Type: session.TypeUser, User: &session.UserMessage{Text: text}}, tokens)
}

func (b *builder) reply(text string, tokens int) string {
	return b.add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{Text: text}}, tokens)
}

// batch appends an assistant entry with n tool calls of the named tool and
// their n results; args are the calls' arguments, one per call.
func (b *builder) batch(tool string, tokens int, args ...string) (callIDs []string) {
	a := &session.Assistant{}
	for _, arg := range args {
		b.calls++
		id := fmt.Sprintf("call_%d", b.calls)
		a.ToolCalls = append(a.ToolCalls, session.ToolCall{ID: id, Name: tool, Arguments: json.RawMessage(arg)})
		callIDs = append(callIDs, id)
	}
	b.add(session.Entry{Type: session.TypeAssistant, Assistant: a}, tokens)
	for i, id := range callIDs {
		b.result(id, tool, true, "result of "+args[i], tokens, nil)
	}
	return callIDs
}

func (b *builder) result(callID, tool string, ok bool, content string, tokens int, art *session.Artifacts) string {
	return b.add(session.Entry{Type: session.TypeToolResult, ToolResult: &session.ToolResult{ToolCallID: callID, ToolName: tool, OK: ok, Content: content, Artifacts: art}}, tokens)
}

// bash appends a bash call and its result with the recorded exit code.
func (b *builder) bash(cmd string, exit int, tokens int) {
	b.calls++
	id := fmt.Sprintf("call_%d", b.calls)
	args, _ := json.Marshal(map[string]string{"command": cmd})
	b.add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{ToolCalls: []session.ToolCall{{ID: id, Name: tool.Bash, Arguments: args}}}}, tokens)
	code := exit
	b.result(id, tool.Bash, exit == 0, fmt.Sprintf("exit %d", exit), tokens, &session.Artifacts{Command: cmd, ExitCode: &code})
}

// bashOut is bash with the command's output.
func (b *builder) bashOut(cmd string, exit int, output string) {
	b.calls++
	id := fmt.Sprintf("call_%d", b.calls)
	args, _ := json.Marshal(map[string]string{"command": cmd})
	b.add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{ToolCalls: []session.ToolCall{{ID: id, Name: tool.Bash, Arguments: args}}}}, 10)
	code := exit
	b.result(id, tool.Bash, exit == 0, output, 10, &session.Artifacts{Command: cmd, ExitCode: &code})
}

// edit appends an edit_file call on path with its recorded artifact.
func (b *builder) edit(path string, tokens int) {
	b.calls++
	id := fmt.Sprintf("call_%d", b.calls)
	args, _ := json.Marshal(map[string]string{"path": path, "old_text": "a", "new_text": "b"})
	b.add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{ToolCalls: []session.ToolCall{{ID: id, Name: tool.EditFile, Arguments: args}}}}, tokens)
	b.result(id, tool.EditFile, true, "edited "+path, tokens, &session.Artifacts{FilesModified: []string{path}})
}

// read appends a read_file call on path with its recorded artifact.
func (b *builder) read(path string, tokens int) {
	b.calls++
	id := fmt.Sprintf("call_%d", b.calls)
	args, _ := json.Marshal(map[string]string{"path": path})
	b.add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{ToolCalls: []session.ToolCall{{ID: id, Name: tool.ReadFile, Arguments: args}}}}, tokens)
	b.result(id, tool.ReadFile, true, "contents of "+path, tokens, &session.Artifacts{FilesRead: []string{path}})
}

// capsule is the deterministic capsule of everything b holds, with no
// previous capsule and no extras.
func (b *builder) capsule(t *testing.T) capsule.State {
	t.Helper()
	st, err := BuildDeterministic(b.es, 0, len(b.es), nil, Extras{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// compact plans and appends a deterministic capsule as the engine would,
// returning the plan.
func (b *builder) compact(trigger string, cfg Config, ck string) (Plan, Capsule, error) {
	p, err := MakePlan(b.es, quarterCounter{}, PlanRequest{Trigger: trigger, Config: cfg, CheckpointID: ck, SystemTokens: 500})
	if err != nil {
		return p, Capsule{}, err
	}
	c, err := BuildCapsule(b.es, quarterCounter{}, p, nil, false)
	if err != nil {
		return p, c, err
	}
	entry := c.Entry
	b.add(session.Entry{Type: session.TypeCapsule, Capsule: &entry}, 0)
	return p, c, nil
}

func (b *builder) index(id string) int {
	for i, e := range b.es {
		if e.ID == id {
			return i
		}
	}
	return -1
}

// smallConfig is a config whose figures make small test sessions meaningful.
func smallConfig() Config {
	c := DefaultConfig()
	c.ContextWindow, c.MaxOutputTokens, c.SafetyReserveTokens = 20000, 2000, 1000
	c.KeepRecentTokens = 2000
	c.MinTokensForAutoCompact = 4000
	c.MinReclaimableTokens = 1000
	return c
}
