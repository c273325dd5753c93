package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// anthropicVersion is the Messages API version header value.
const anthropicVersion = "2023-06-01"

// anthropicDefaultMaxTokens is sent when neither the request nor the
// configuration sets an output limit (the API requires max_tokens).
const anthropicDefaultMaxTokens = 4096

// anthropic speaks the Anthropic Messages API with SSE streaming.
type anthropic struct{ client }

// Server-side compaction (beta): the context-management edit, its beta
// header, and the smallest trigger the API accepts. Compaction summarises
// only a prompt above the trigger, so a shorter history is never sent for
// compaction (AnthropicMinCompactTokens).
const (
	anthropicCompactEdit = "compact_20260112"
	anthropicCompactBeta = "compact-2026-01-12"
	// AnthropicMinCompactTokens is the API's minimum compaction trigger.
	AnthropicMinCompactTokens = 50000
)

// anthropicCompactedPreamble opens a request whose earlier history is a
// compaction block: the API wants a user turn first, and drops every block
// before the compaction block anyway.
const anthropicCompactedPreamble = "The earlier part of this session was compacted."

type anBlock struct {
	// Raw, when set, is a block sent verbatim (a compaction block).
	Raw       json.RawMessage `json:"-"`
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	// CacheControl marks a cache breakpoint: the prompt up to and
	// including this block is cached.
	CacheControl *anCacheControl `json:"cache_control,omitempty"`
}

// anCacheControl is a prompt-cache breakpoint.
type anCacheControl struct {
	Type string `json:"type"`
}

// ephemeral is the one breakpoint type: the API's default cache lifetime.
var ephemeral = &anCacheControl{Type: "ephemeral"}

// AnthropicMaxBreakpoints is the most cache_control markers one request
// may carry; the API refuses more.
const AnthropicMaxBreakpoints = 4

// anSystemBlock is a block of the system prompt in its array form, which
// can carry a breakpoint.
type anSystemBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	CacheControl *anCacheControl `json:"cache_control,omitempty"`
}

// MarshalJSON writes a verbatim block as it was received.
func (b anBlock) MarshalJSON() ([]byte, error) {
	if len(b.Raw) > 0 {
		return b.Raw, nil
	}
	type plain anBlock
	return json.Marshal(plain(b))
}

type anMessage struct {
	Role    string    `json:"role"`
	Content []anBlock `json:"content"`
}

type anTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl *anCacheControl `json:"cache_control,omitempty"`
}

type anRequest struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	// System is a string, or blocks when it carries a breakpoint.
	System      any         `json:"system,omitempty"`
	Messages    []anMessage `json:"messages"`
	Tools       []anTool    `json:"tools,omitempty"`
	Stream      bool        `json:"stream"`
	Temperature *float64    `json:"temperature,omitempty"`
	// ContextManagement asks for server-side compaction (Compact only).
	ContextManagement *anContextManagement `json:"context_management,omitempty"`
}

type anContextManagement struct {
	Edits []anCompactEdit `json:"edits"`
}

type anCompactEdit struct {
	Type    string `json:"type"`
	Trigger struct {
		Type  string `json:"type"`
		Value int    `json:"value"`
	} `json:"trigger"`
	PauseAfterCompaction bool   `json:"pause_after_compaction"`
	Instructions         string `json:"instructions,omitempty"`
}

type anUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

type anEvent struct {
	Type    string `json:"type"`
	Message *struct {
		Model string   `json:"model"`
		Usage *anUsage `json:"usage"`
	} `json:"message"`
	Index        int `json:"index"`
	ContentBlock *struct {
		Type      string  `json:"type"`
		ID        string  `json:"id"`
		Name      string  `json:"name"`
		Content   *string `json:"content"`
		Thinking  string  `json:"thinking"`
		Signature string  `json:"signature"`
		Data      string  `json:"data"` // redacted_thinking
	} `json:"content_block"`
	Delta *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
		Content     string `json:"content"`
	} `json:"delta"`
	Usage *anUsage `json:"usage"`
}

func (p *anthropic) body(req Request) ([]byte, error) {
	r, err := p.request(req)
	if err != nil {
		return nil, err
	}
	markCache(&r, req)
	return json.Marshal(r)
}

// markCache puts the prompt-cache breakpoints on a request (Anthropic
// caches only marked prefixes, in the order tools, system, messages): one
// after the tools and system prompt, which stay the same all session; one
// after the capsule (the message marked StablePrefix), which stays until
// the next compaction; and one on the newest block, so the next request
// of the turn — this one plus what it appends — reads all of it from the
// cache. That is at most three of the API's four.
func markCache(r *anRequest, req Request) {
	switch {
	case req.System != "":
		r.System = []anSystemBlock{{Type: "text", Text: req.System, CacheControl: ephemeral}}
	case len(r.Tools) > 0:
		r.Tools[len(r.Tools)-1].CacheControl = ephemeral
	}
	// The capsule's blocks: those the messages up to the marked one made.
	blocks := 0
	for i, m := range req.Messages {
		if m.StablePrefix {
			blocks = anBlocksOf(req.Messages[:i+1])
			break
		}
	}
	if blocks > 0 {
		markBlock(r, blocks-1)
	}
	if n := anBlocksOf(req.Messages); n > blocks {
		markBlock(r, n-1)
	}
}

// anBlocksOf counts the content blocks request builds from msgs (the same
// walk, without building them): each message's blocks follow in order, so
// a message's last block is at this count minus one.
func anBlocksOf(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		native, _ := nativeItems(m.Native)
		if len(native) > 0 && m.Role == RoleUser && m.Text == "" {
			n += 1 + len(native)
			continue
		}
		n += len(native)
		switch m.Role {
		case RoleUser, RoleTool:
			n++
		case RoleAssistant:
			if m.Text != "" {
				n++
			}
			n += len(m.ToolCalls)
		}
	}
	return n
}

// markBlock sets a breakpoint on the k-th content block of the request, or
// on the nearest block before it that is not sent verbatim (a compaction
// block as the server sent it).
func markBlock(r *anRequest, k int) {
	type pos struct{ m, b int }
	var all []pos
	for mi, m := range r.Messages {
		for bi := range m.Content {
			all = append(all, pos{mi, bi})
		}
	}
	for k = min(k, len(all)-1); k >= 0; k-- {
		b := &r.Messages[all[k].m].Content[all[k].b]
		if len(b.Raw) == 0 {
			b.CacheControl = ephemeral
			return
		}
	}
}

// request builds the Messages request of req. Native items (compaction
// blocks) are sent verbatim in an assistant turn before their message; a
// user message that is only native items (a continuation in place of the
// capsule's text) becomes a short user turn and the blocks.
func (p *anthropic) request(req Request) (anRequest, error) {
	r := anRequest{Model: p.modelFor(req), MaxTokens: p.maxOutputFor(req), Stream: true, Temperature: req.Temperature}
	if req.System != "" {
		r.System = req.System
	}
	if r.MaxTokens <= 0 {
		r.MaxTokens = anthropicDefaultMaxTokens
	}
	// The API wants user and assistant turns alternating; tool results are
	// blocks of a user turn. Consecutive messages of one side merge.
	add := func(role string, b anBlock) {
		if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == role {
			r.Messages[n-1].Content = append(r.Messages[n-1].Content, b)
			return
		}
		r.Messages = append(r.Messages, anMessage{Role: role, Content: []anBlock{b}})
	}
	for i, m := range req.Messages {
		native, err := nativeItems(m.Native)
		if err != nil {
			return r, fmt.Errorf("anthropic: message %d: %w", i, err)
		}
		if len(native) > 0 {
			if m.Role == RoleUser && m.Text == "" {
				add("user", anBlock{Type: "text", Text: anthropicCompactedPreamble})
			}
			for _, raw := range native {
				add("assistant", anBlock{Raw: raw})
			}
			if m.Role == RoleUser && m.Text == "" {
				continue
			}
		}
		switch m.Role {
		case RoleUser:
			add("user", anBlock{Type: "text", Text: m.Text})
		case RoleAssistant:
			if m.Text != "" {
				add("assistant", anBlock{Type: "text", Text: m.Text})
			}
			for _, tc := range m.ToolCalls {
				in := argumentsJSON(string(tc.Arguments))
				if len(in) == 0 || in[0] != '{' {
					in = json.RawMessage("{}") // input must be an object
				}
				add("assistant", anBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: in})
			}
			if m.Text == "" && len(m.ToolCalls) == 0 && len(native) == 0 {
				return r, fmt.Errorf("anthropic: message %d: empty assistant message", i)
			}
		case RoleTool:
			if m.ToolCallID == "" {
				return r, fmt.Errorf("anthropic: message %d: tool result without a tool call id", i)
			}
			add("user", anBlock{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Text, IsError: m.IsError})
		default:
			return r, fmt.Errorf("anthropic: message %d: unknown role %q", i, m.Role)
		}
	}
	for _, t := range req.Tools {
		s := t.Parameters
		if len(s) == 0 {
			s = emptySchema
		}
		r.Tools = append(r.Tools, anTool{Name: t.Name, Description: t.Description, InputSchema: s})
	}
	return r, nil
}

// carriesCompaction says whether a request sends a compaction block, which
// needs the compaction beta header.
func carriesCompaction(msgs []Message) bool {
	for _, m := range msgs {
		if len(m.Native) > 0 && strings.Contains(string(m.Native), `"compaction"`) {
			return true
		}
	}
	return false
}

func (p *anthropic) Stream(ctx context.Context, req Request, onEvent func(Event)) (Response, error) {
	body, err := p.body(req)
	if err != nil {
		return Response{}, err
	}
	out, err := p.exchange(ctx, "/v1/messages", body, p.header(carriesCompaction(req.Messages)), onEvent, p.read)
	if err != nil {
		return Response{}, err
	}
	if err := checkTruncation(p.name, req, out.Usage); err != nil {
		return Response{}, err
	}
	emitToolCalls(onEvent, out.ToolCalls)
	return out, nil
}

// header is the Messages API's request header; beta adds the compaction
// beta.
func (p *anthropic) header(beta bool) http.Header {
	h := http.Header{}
	h.Set("Accept", "text/event-stream")
	h.Set("anthropic-version", anthropicVersion)
	if beta {
		h.Set("anthropic-beta", anthropicCompactBeta)
	}
	if p.apiKey != "" {
		h.Set("x-api-key", p.apiKey)
	}
	return h
}

// Compact asks for Anthropic's server-side compaction of req's
// conversation (R-N1): the compaction edit with the API's minimum trigger
// and pause_after_compaction, so the answer is the compaction block alone
// (stop reason "compaction"). The caller sends only histories above
// AnthropicMinCompactTokens; below it the API would not compact and would
// answer instead. req.System is the instructions of the summary when set.
func (p *anthropic) Compact(ctx context.Context, req Request) (Compacted, error) {
	msgs := req.Messages
	if n := len(msgs); n > 0 && msgs[n-1].Role == RoleAssistant {
		// Not a prefill: the history ends here, the next turn is the user's.
		msgs = append(msgs[:n:n], Message{Role: RoleUser, Text: "(The session continues after this point.)"})
	}
	r, err := p.request(Request{Model: req.Model, Messages: msgs, MaxOutputTokens: req.MaxOutputTokens})
	if err != nil {
		return Compacted{}, err
	}
	var e anCompactEdit
	e.Type, e.Trigger.Type, e.Trigger.Value, e.PauseAfterCompaction = anthropicCompactEdit, "input_tokens", AnthropicMinCompactTokens, true
	e.Instructions = req.System
	r.ContextManagement = &anContextManagement{Edits: []anCompactEdit{e}}
	body, err := json.Marshal(r)
	if err != nil {
		return Compacted{}, err
	}
	out, err := p.exchange(ctx, "/v1/messages", body, p.header(true), nil, p.read)
	if err != nil {
		return Compacted{}, err
	}
	if !carriesCompaction([]Message{{Native: out.Native}}) {
		return Compacted{}, &StreamError{Provider: p.name, Message: fmt.Sprintf("the answer has no compaction block (stop reason %q)", out.StopReason)}
	}
	c := Compacted{Items: out.Native, Usage: out.Usage, Model: out.Model}
	if out.Usage != nil {
		c.Tokens = out.Usage.OutputTokens
	}
	return c, nil
}

type anPending struct {
	isTool bool
	// thinking collects a thinking block (its text and signature) or holds
	// a redacted_thinking block's data: both go back verbatim with the
	// answer, as the API requires for a tool-use turn.
	thinkingType string
	signature    string
	data         string
	// compaction collects a compaction block's summary; hasContent is
	// false while the server sent none (a failed compaction: content null).
	isCompaction bool
	hasContent   bool
	content      strings.Builder
	id, name     string
	input        strings.Builder
	closed       bool
}

// read parses the event stream up to message_stop.
func (p *anthropic) read(ctx context.Context, r io.Reader, onEvent func(Event)) (Response, error) {
	sse := newSSEReader(r)
	var (
		out    Response
		answer = newAnswerStream(onEvent)
		blocks = map[int]*anPending{}
		order  []*anPending
		usage  anUsage
		seen   bool
		stop   string
	)
	for {
		typ, data, err := sse.Next()
		if err != nil {
			return Response{}, p.readFailure(ctx, err, "message_stop")
		}
		if typ == "ping" || len(data) == 0 {
			continue
		}
		if typ == "error" {
			return Response{}, classify(p.name, 0, nil, data)
		}
		var ev anEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return Response{}, &StreamError{Provider: p.name, Message: fmt.Sprintf("undecodable %s event %.200q", typ, data), Err: err}
		}
		if typ == "" {
			typ = ev.Type
		}
		switch typ {
		case "message_start":
			if ev.Message != nil {
				out.Model = ev.Message.Model
				if ev.Message.Usage != nil {
					usage, seen = *ev.Message.Usage, true
				}
			}
		case "content_block_start":
			b := &anPending{}
			if cb := ev.ContentBlock; cb != nil && cb.Type == "tool_use" {
				b.isTool, b.id, b.name = true, cb.ID, cb.Name
			}
			if cb := ev.ContentBlock; cb != nil && (cb.Type == "thinking" || cb.Type == "redacted_thinking") {
				b.thinkingType, b.signature, b.data = cb.Type, cb.Signature, cb.Data
				if cb.Thinking != "" {
					b.content.WriteString(cb.Thinking)
					answer.thinking(cb.Thinking)
				}
			}
			if cb := ev.ContentBlock; cb != nil && cb.Type == "compaction" {
				b.isCompaction = true
				if cb.Content != nil && *cb.Content != "" {
					b.hasContent = true
					b.content.WriteString(*cb.Content)
				}
			}
			blocks[ev.Index] = b
			order = append(order, b)
		case "content_block_delta":
			b := blocks[ev.Index]
			if b == nil || ev.Delta == nil {
				return Response{}, &StreamError{Provider: p.name, Message: fmt.Sprintf("delta for unknown content block %d", ev.Index)}
			}
			switch ev.Delta.Type {
			case "text_delta":
				answer.content(ev.Delta.Text)
			case "thinking_delta":
				b.content.WriteString(ev.Delta.Thinking)
				answer.thinking(ev.Delta.Thinking)
			case "signature_delta":
				b.signature += ev.Delta.Signature
			case "input_json_delta":
				b.input.WriteString(ev.Delta.PartialJSON)
			case "compaction_delta":
				b.hasContent = true
				b.content.WriteString(ev.Delta.Content)
			}
		case "content_block_stop":
			if b := blocks[ev.Index]; b != nil {
				b.closed = true
			}
		case "message_delta":
			if ev.Delta != nil && ev.Delta.StopReason != "" {
				stop = ev.Delta.StopReason
			}
			if u := ev.Usage; u != nil {
				// message_delta counts are cumulative; a zero means unsaid.
				seen = true
				usage.OutputTokens = u.OutputTokens
				if u.InputTokens > 0 {
					usage.InputTokens = u.InputTokens
				}
				if u.CacheCreationInputTokens > 0 {
					usage.CacheCreationInputTokens = u.CacheCreationInputTokens
				}
				if u.CacheReadInputTokens > 0 {
					usage.CacheReadInputTokens = u.CacheReadInputTokens
				}
			}
		case "message_stop":
			out.Text, out.Thinking = answer.done()
			var compacted, thoughts []map[string]any
			for _, b := range order {
				switch {
				case b.thinkingType == "thinking" && b.closed:
					thoughts = append(thoughts, map[string]any{"type": "thinking", "thinking": b.content.String(), "signature": b.signature})
				case b.thinkingType == "redacted_thinking" && b.closed:
					thoughts = append(thoughts, map[string]any{"type": "redacted_thinking", "data": b.data})
				}
				if b.isCompaction && b.closed && b.hasContent {
					// Kept verbatim for the next requests (a block with no
					// content is a failed compaction, a no-op).
					compacted = append(compacted, map[string]any{"type": "compaction", "content": b.content.String()})
				}
				if !b.isTool {
					continue
				}
				if !b.closed {
					return Response{}, &StreamError{Provider: p.name, Message: fmt.Sprintf("tool_use block %s was never closed", b.id)}
				}
				out.ToolCalls = append(out.ToolCalls, ToolCall{ID: b.id, Name: b.name, Arguments: argumentsJSON(b.input.String())})
			}
			if seen {
				out.Usage = &Usage{
					InputTokens:  usage.InputTokens + usage.CacheCreationInputTokens + usage.CacheReadInputTokens,
					OutputTokens: usage.OutputTokens,
					CachedTokens: usage.CacheReadInputTokens,
				}
			}
			switch {
			case len(compacted) > 0:
				out.Native, _ = json.Marshal(compacted)
			case len(thoughts) > 0:
				// Sent back before the answer's text and tool_use blocks,
				// to this provider and model only (the signature binds
				// them to it).
				out.Native, _ = json.Marshal(thoughts)
			}
			switch stop {
			case "end_turn", "stop_sequence", "":
				out.StopReason = StopEnd
			case "tool_use":
				out.StopReason = StopToolCalls
			case "max_tokens":
				out.StopReason = StopLength
			default:
				out.StopReason = stop
			}
			return out, nil
		}
	}
}
