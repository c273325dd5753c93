package importer

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/configschema"
	"github.com/soba-agent/soba-lsp/internal/jsondec"
	"github.com/soba-agent/soba-lsp/internal/lazyregexp"
	"github.com/soba-agent/soba-lsp/session"
)

// Codex CLI rollout files (~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl):
// one {timestamp, type, payload} object a line. session_meta carries the
// session id and cwd; turn_context the model; response_item the model
// conversation (payload.type message with role user/assistant/developer,
// function_call {name, arguments (a JSON string), call_id},
// function_call_output {call_id, output}, custom_tool_call {name, input,
// call_id} and its output, local_shell_call, reasoning); compacted a
// compaction ({message}); event_msg the UI's event stream, which repeats
// the conversation (user_message, agent_message) and carries token_count.
// The conversation is read from response_item lines; of event_msg only
// token_count is used, for the usage of the last response. A Codex session
// is linear.

var codexLineTypes = map[string]bool{"session_meta": true, "response_item": true, "event_msg": true, "turn_context": true, "compacted": true}

type codexLine struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

type codexItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Input     string          `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Action    *struct {
		Command   []string `json:"command"`
		TimeoutMs *int     `json:"timeout_ms"`
	} `json:"action"`
	// session_meta, turn_context, compacted and event_msg payloads
	ID      string `json:"id"`
	Cwd     string `json:"cwd"`
	Model   string `json:"model"`
	Message string `json:"message"`
	// ReplacementHistory is a compacted line's Responses items that
	// replaced the history before it (Codex's remote compaction).
	ReplacementHistory json.RawMessage `json:"replacement_history"`
	Info               *struct {
		Last *struct {
			InputTokens  int `json:"input_tokens"`
			CachedInput  int `json:"cached_input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"last_token_usage"`
	} `json:"info"`
}

// codexNative is a compacted line's replacement history as the native
// continuation of its capsule for the Responses API and the rollout's model
// (SPEC §11): nil without one, without a known model, or when it is not a
// non-empty JSON array of items.
func codexNative(history json.RawMessage, model string) *capsule.Native {
	var items []json.RawMessage
	if model == "" || json.Unmarshal(history, &items) != nil || len(items) == 0 {
		return nil
	}
	for _, it := range items {
		var o map[string]json.RawMessage
		if json.Unmarshal(it, &o) != nil || len(o["type"]) == 0 && len(o["role"]) == 0 {
			return nil
		}
	}
	return &capsule.Native{Provider: configschema.ProviderOpenAIResponses, Model: model, Items: append(json.RawMessage(nil), history...)}
}

// codexHandoff is the handoff summary in a compacted line's replacement
// history — the user message that opens with Codex's summary prefix — or ""
// (a remote compaction keeps its summary encrypted).
func codexHandoff(history json.RawMessage) string {
	var items []codexItem
	if json.Unmarshal(history, &items) != nil {
		return ""
	}
	for i := len(items) - 1; i >= 0; i-- {
		if it := items[i]; it.Type == "message" && it.Role == "user" {
			if t := codexText(it.Content); strings.HasPrefix(strings.TrimSpace(t), compaction.CodexSummaryPrefix) {
				return t
			}
		}
	}
	return ""
}

// codexBoilerplate starts user messages Codex writes itself at a session's
// start (instructions, environment), which are not the user's words.
var codexBoilerplate = []string{"<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<INSTRUCTIONS>"}

func convertCodex(b *builder, data []byte) error {
	c := codexState{b: b}
	ord := -1
	eachLine(data, func(no int, raw []byte) bool {
		b.res.Stats.Lines++
		var l codexLine
		if err := jsondec.Unmarshal(raw, &l); err != nil {
			b.problem(no, "not a JSON line: %v", err)
			return true
		}
		ord++
		var it codexItem
		if len(l.Payload) == 0 || jsondec.Unmarshal(l.Payload, &it) != nil {
			b.problem(no, "%q line has no payload object: skipped", l.Type)
			return true
		}
		c.line(no, ord, l.Type, parseTime(l.Timestamp), &it)
		return true
	})
	b.res.Leaf = c.last
	if len(b.res.Entries) == 0 {
		return fmt.Errorf("no Codex conversation found (%d problems; first: %v)", len(b.res.Problems), firstProblem(b.res.Problems))
	}
	return nil
}

type codexState struct {
	b     *builder
	last  string
	model string
	// response is the assistant entry that later items of the same model
	// response join (text, then its calls); an output or a user message
	// ends the response.
	response      string
	lastAssistant string
	// running holds the command of each exec_command session still
	// running, by its session id, until a write_stdin poll of it reports
	// its exit (R-C5: the poll's result is the command's).
	running map[string]string
}

func (c *codexState) line(no, ord int, typ string, ts time.Time, it *codexItem) {
	b := c.b
	switch typ {
	case "session_meta":
		if b.res.SourceID == "" {
			b.res.SourceID, b.res.Cwd = it.ID, it.Cwd
		}
		return
	case "turn_context":
		if it.Model != "" {
			c.model = it.Model
		}
		return
	case "compacted":
		summary := it.Message
		if strings.TrimSpace(summary) == "" {
			summary = codexHandoff(it.ReplacementHistory)
		}
		c.last = b.addCapsule(c.last, ord, foreignCompaction{summary: summary, keepFrom: -1,
			trigger: compaction.TriggerAutoThreshold, title: "Imported Codex compaction", native: codexNative(it.ReplacementHistory, c.model), ts: ts})
		c.response = ""
		return
	case "event_msg":
		if it.Type == "token_count" && it.Info != nil && it.Info.Last != nil && c.lastAssistant != "" {
			if e := b.entry(c.lastAssistant); e != nil {
				u := it.Info.Last
				e.Assistant.Usage = &session.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedTokens: u.CachedInput}
			}
			return
		}
		b.skip("event_msg " + it.Type)
		return
	case "response_item":
	default:
		b.problem(no, "unknown line type %q: skipped", typ)
		return
	}
	switch it.Type {
	case "message":
		text := codexText(it.Content)
		switch it.Role {
		case "user":
			for _, p := range codexBoilerplate {
				if strings.HasPrefix(strings.TrimSpace(text), p) {
					b.skip("codex context message")
					return
				}
			}
			c.last = b.addUser(text, ts, c.last, ord, false)
			c.response = ""
		case "assistant":
			c.joinResponse(ts, ord, text, nil)
		default:
			b.skip("message role " + it.Role) // developer and system instructions
		}
	case "function_call":
		args := codexArguments(it.Arguments)
		call := b.mapCodexCall(it.Name, args)
		c.joinResponse(ts, ord, "", []session.ToolCall{b.addCall(it.CallID, call)})
	case "custom_tool_call":
		call := b.mapCodexCall(it.Name, marshal(map[string]string{"input": it.Input}))
		c.joinResponse(ts, ord, "", []session.ToolCall{b.addCall(it.CallID, call)})
	case "local_shell_call":
		var argv []string
		var timeout *int
		if it.Action != nil {
			argv, timeout = it.Action.Command, it.Action.TimeoutMs
		}
		args := map[string]any{"command": argv}
		if timeout != nil {
			args["timeout_ms"] = *timeout
		}
		call := b.mapCodexCall("shell", marshal(args))
		c.joinResponse(ts, ord, "", []session.ToolCall{b.addCall(it.CallID, call)})
	case "function_call_output", "custom_tool_call_output":
		content, exit := codexOutput(it.Output)
		ok := exit == nil || *exit == 0
		var art *int
		if call := b.calls[it.CallID]; call != nil {
			c.joinSession(call, content, exit)
			if call.kind == kindShell {
				art = exit
			}
		}
		if id := b.addResult(no, it.CallID, "", ok, content, art, ts, c.last, ord); id != "" {
			c.last = id
		}
		c.response = ""
	default:
		b.skip("response_item " + it.Type) // reasoning, web_search_call, …
	}
}

// codexRunning is how exec_command reports a command still running.
var codexRunning = lazyregexp.New(`(?m)^Process running with session ID (\d+)`)

// joinSession joins a command that outlived its exec_command call to the
// write_stdin polls of its session: the exec_command result of a running
// command and the polls that find it still running leave no artifacts, and
// the poll that reports its exit carries the command with that exit.
func (c *codexState) joinSession(call *mappedCall, content string, exit *int) {
	if c.running == nil {
		c.running = map[string]string{}
	}
	if call.name == "write_stdin" {
		var a struct {
			SessionID json.RawMessage `json:"session_id"`
		}
		_ = jsondec.Unmarshal(call.args, &a)
		sid := strings.Trim(string(a.SessionID), `"`)
		cmd, ok := c.running[sid]
		if !ok {
			return
		}
		if exit == nil {
			return // still running
		}
		delete(c.running, sid)
		call.kind, call.command = kindShell, cmd
		return
	}
	if call.kind != kindShell || exit != nil {
		return
	}
	if m := codexRunning.FindStringSubmatch(content); m != nil {
		c.running[m[1]] = call.command
		call.pending = true // not finished: its outcome comes with a poll
	}
}

// joinResponse adds text and calls to the current response's assistant
// entry, or starts one.
func (c *codexState) joinResponse(ts time.Time, ord int, text string, calls []session.ToolCall) {
	b := c.b
	if c.response != "" {
		if e := b.entry(c.response); e != nil {
			if text != "" {
				e.Assistant.Text = strings.TrimPrefix(e.Assistant.Text+"\n"+text, "\n")
			}
			e.Assistant.ToolCalls = append(e.Assistant.ToolCalls, calls...)
			return
		}
	}
	a := &session.Assistant{Text: text, ToolCalls: calls, Provider: "openai", Model: c.model}
	c.last = b.add(session.Entry{Type: session.TypeAssistant, Timestamp: ts, Assistant: a}, c.last, ord)
	c.response, c.lastAssistant = c.last, c.last
}

// mapCodexCall maps shell and exec_command to bash and records the files of
// an apply_patch; other tools stay verbatim.
func (b *builder) mapCodexCall(name string, args json.RawMessage) *mappedCall {
	if name == "shell" || name == "container.exec" {
		var a map[string]json.RawMessage
		if jsondec.Unmarshal(args, &a) == nil {
			var argv []string
			if jsondec.Unmarshal(a["command"], &argv) == nil && len(argv) > 0 {
				if wd := jsonString(a["workdir"]); wd == "" || wd == b.res.Cwd {
					a["command"] = marshal(shellLine(argv))
					delete(a, "workdir")
					c := b.mapCall(codexTools, "shell", marshal(a))
					if c.mapped {
						return c
					}
				}
				// Keep the call as it was, with the command line for artifacts.
				return &mappedCall{name: name, args: args, kind: kindShell, command: shellLine(argv)}
			}
		}
	}
	if name == "apply_patch" {
		var a struct {
			Input string `json:"input"`
		}
		c := &mappedCall{name: name, args: args, kind: kindModify}
		if jsondec.Unmarshal(args, &a) == nil {
			c.paths = append(c.paths, b.patchPaths(a.Input)...)
		}
		return c
	}
	return b.mapCall(codexTools, name, args)
}

// codexArguments turns a function_call's arguments (a JSON string holding
// JSON) into a raw object; text that is not JSON is kept as {"input": …}.
func codexArguments(raw json.RawMessage) json.RawMessage {
	s, isStr := stringValue(raw)
	if !isStr {
		if len(raw) == 0 {
			return json.RawMessage(`{}`)
		}
		return raw
	}
	if json.Valid([]byte(s)) && strings.HasPrefix(strings.TrimSpace(s), "{") {
		return json.RawMessage(s)
	}
	return marshal(map[string]string{"input": s})
}

// codexText joins the text parts of message content (input_text,
// output_text, text).
func codexText(raw json.RawMessage) string {
	if s, ok := stringValue(raw); ok {
		return s
	}
	parts, _ := decodeEach[struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}](raw)
	var out []string
	for _, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			out = append(out, p.Text)
		case "input_image":
			out = append(out, "[image]")
		}
	}
	return strings.Join(out, "\n")
}

// codexOutput reads a tool output: a string, possibly holding the JSON
// {"output": …, "metadata": {"exit_code": N}} of older versions, or text
// with "Exit code: N" / "Process exited with code N". exit is nil when the
// output does not tell.
func codexOutput(raw json.RawMessage) (string, *int) {
	s, isStr := stringValue(raw)
	if !isStr {
		var o struct {
			Content string `json:"content"`
			Success *bool  `json:"success"`
		}
		if jsondec.Unmarshal(raw, &o) == nil {
			s = o.Content
			if o.Success != nil && !*o.Success {
				if n, ok := exitFrom(codexExitPattern, s); ok {
					return s, intPtr(n)
				}
				return s, intPtr(1)
			}
		}
	}
	var wrapped struct {
		Output   *string `json:"output"`
		Metadata *struct {
			ExitCode *int `json:"exit_code"`
		} `json:"metadata"`
	}
	if strings.HasPrefix(s, "{") && jsondec.Unmarshal([]byte(s), &wrapped) == nil && wrapped.Output != nil {
		var exit *int
		if wrapped.Metadata != nil {
			exit = wrapped.Metadata.ExitCode
		}
		return *wrapped.Output, exit
	}
	if n, ok := exitFrom(codexExitPattern, s); ok {
		return s, intPtr(n)
	}
	return s, nil
}
