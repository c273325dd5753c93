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

type anBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

type anMessage struct {
	Role    string    `json:"role"`
	Content []anBlock `json:"content"`
}

type anTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type anRequest struct {
	Model       string      `json:"model"`
	MaxTokens   int         `json:"max_tokens"`
	System      string      `json:"system,omitempty"`
	Messages    []anMessage `json:"messages"`
	Tools       []anTool    `json:"tools,omitempty"`
	Stream      bool        `json:"stream"`
	Temperature *float64    `json:"temperature,omitempty"`
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
		Type string `json:"type"`
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"content_block"`
	Delta *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *anUsage `json:"usage"`
}

func (p *anthropic) body(req Request) ([]byte, error) {
	r := anRequest{Model: p.modelFor(req), MaxTokens: p.maxOutputFor(req), System: req.System, Stream: true, Temperature: req.Temperature}
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
			if m.Text == "" && len(m.ToolCalls) == 0 {
				return nil, fmt.Errorf("anthropic: message %d: empty assistant message", i)
			}
		case RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("anthropic: message %d: tool result without a tool call id", i)
			}
			add("user", anBlock{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Text, IsError: m.IsError})
		default:
			return nil, fmt.Errorf("anthropic: message %d: unknown role %q", i, m.Role)
		}
	}
	for _, t := range req.Tools {
		s := t.Parameters
		if len(s) == 0 {
			s = emptySchema
		}
		r.Tools = append(r.Tools, anTool{Name: t.Name, Description: t.Description, InputSchema: s})
	}
	return json.Marshal(r)
}

func (p *anthropic) Stream(ctx context.Context, req Request, onEvent func(Event)) (Response, error) {
	body, err := p.body(req)
	if err != nil {
		return Response{}, err
	}
	h := http.Header{}
	h.Set("Accept", "text/event-stream")
	h.Set("anthropic-version", anthropicVersion)
	if p.apiKey != "" {
		h.Set("x-api-key", p.apiKey)
	}
	out, err := p.exchange(ctx, "/v1/messages", body, h, onEvent, p.read)
	if err != nil {
		return Response{}, err
	}
	if err := checkTruncation(p.name, req, out.Usage); err != nil {
		return Response{}, err
	}
	emitToolCalls(onEvent, out.ToolCalls)
	return out, nil
}

type anPending struct {
	isTool   bool
	id, name string
	input    strings.Builder
	closed   bool
}

// read parses the event stream up to message_stop.
func (p *anthropic) read(ctx context.Context, r io.Reader, onEvent func(Event)) (Response, error) {
	sse := newSSEReader(r)
	var (
		out    Response
		text   strings.Builder
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
			blocks[ev.Index] = b
			order = append(order, b)
		case "content_block_delta":
			b := blocks[ev.Index]
			if b == nil || ev.Delta == nil {
				return Response{}, &StreamError{Provider: p.name, Message: fmt.Sprintf("delta for unknown content block %d", ev.Index)}
			}
			switch ev.Delta.Type {
			case "text_delta":
				text.WriteString(ev.Delta.Text)
				if onEvent != nil && ev.Delta.Text != "" {
					onEvent(Event{Kind: EventText, Delta: ev.Delta.Text})
				}
			case "input_json_delta":
				b.input.WriteString(ev.Delta.PartialJSON)
			}
			// thinking_delta and signature_delta are not part of the answer.
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
			out.Text = text.String()
			for _, b := range order {
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
