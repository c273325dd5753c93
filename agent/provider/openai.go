package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// openAI speaks OpenAI-compatible Chat Completions with SSE streaming
// (llama.cpp server, vLLM, LM Studio, Ollama /v1, OpenAI).
type openAI struct{ client }

type oaMessage struct {
	Role       string       `json:"role"`
	Content    *string      `json:"content"`
	ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
	Name       string       `json:"name,omitempty"`
	// ReasoningContent is sent back only on an assistant message that
	// made tool calls and got its thinking as reasoning_content: DeepSeek's
	// thinking mode refuses a later request without it (400), and
	// llama.cpp gives it to the templates that interleave reasoning.
	ReasoningContent string `json:"reasoning_content,omitempty"`
}

type oaToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type oaRequest struct {
	Model         string      `json:"model"`
	Messages      []oaMessage `json:"messages"`
	Tools         []oaTool    `json:"tools,omitempty"`
	Stream        bool        `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           int      `json:"max_tokens,omitempty"`
	MaxCompletionTokens int      `json:"max_completion_tokens,omitempty"`
	Temperature         *float64 `json:"temperature,omitempty"`
	PromptCacheKey      string   `json:"prompt_cache_key,omitempty"`
}

type oaUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

type oaChunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content string `json:"content"`
			// ReasoningContent is the thinking as DeepSeek, vLLM (before
			// 0.10) and llama.cpp (--reasoning-format deepseek, the
			// default) send it; Reasoning as OpenRouter, newer vLLM and
			// Ollama's /v1 send it.
			ReasoningContent string `json:"reasoning_content"`
			Reasoning        string `json:"reasoning"`
			ToolCalls        []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *oaUsage        `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// emptySchema stands for a tool without parameters; servers reject a
// missing or null schema.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

func (p *openAI) body(req Request) ([]byte, error) {
	r := oaRequest{Model: p.modelFor(req), Stream: true, Temperature: req.Temperature, PromptCacheKey: p.cacheKeyFor(req)}
	r.StreamOptions.IncludeUsage = true
	if n := p.maxOutputFor(req); n > 0 {
		// OpenAI's own reasoning models reject max_tokens; the local servers
		// know max_tokens best.
		if p.isOpenAI() {
			r.MaxCompletionTokens = n
		} else {
			r.MaxTokens = n
		}
	}
	str := func(s string) *string { return &s }
	if req.System != "" {
		r.Messages = append(r.Messages, oaMessage{Role: "system", Content: str(req.System)})
	}
	for i, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			r.Messages = append(r.Messages, oaMessage{Role: "user", Content: str(m.Text)})
		case RoleAssistant:
			om := oaMessage{Role: "assistant"}
			if m.Text != "" || len(m.ToolCalls) == 0 {
				om.Content = str(m.Text)
			}
			if len(m.ToolCalls) > 0 {
				om.ReasoningContent = reasoningContentOf(m.Native)
			}
			for _, tc := range m.ToolCalls {
				var c oaToolCall
				c.ID, c.Type = tc.ID, "function"
				c.Function.Name = tc.Name
				c.Function.Arguments = string(argumentsJSON(string(tc.Arguments)))
				om.ToolCalls = append(om.ToolCalls, c)
			}
			r.Messages = append(r.Messages, om)
		case RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("openai: message %d: tool result without a tool call id", i)
			}
			r.Messages = append(r.Messages, oaMessage{Role: "tool", Content: str(m.Text), ToolCallID: m.ToolCallID})
		default:
			return nil, fmt.Errorf("openai: message %d: unknown role %q", i, m.Role)
		}
	}
	r.Tools = functionTools(req.Tools)
	return json.Marshal(r)
}

func (p *openAI) Stream(ctx context.Context, req Request, onEvent func(Event)) (Response, error) {
	body, err := p.body(req)
	if err != nil {
		return Response{}, err
	}
	return p.bearerStream(ctx, "/chat/completions", "text/event-stream", req, body, onEvent, p.read)
}

// oaPending is a tool call being assembled from its fragments.
type oaPending struct {
	id, name string
	args     strings.Builder
}

// read parses the SSE stream up to [DONE]. Tool calls are assembled by
// index: the first fragment of a call brings id and name, later ones append
// to the arguments text.
func (p *openAI) read(ctx context.Context, r io.Reader, onEvent func(Event)) (Response, error) {
	sse := newSSEReader(r)
	var (
		out    Response
		answer = newAnswerStream(onEvent)
		calls  []*oaPending
		byIdx  = map[int]*oaPending{}
		finish string
		// viaField: the thinking came as reasoning_content.
		viaField bool
	)
	for {
		event, data, err := sse.Next()
		if err != nil {
			return Response{}, p.readFailure(ctx, err, "[DONE]")
		}
		if len(data) == 0 {
			continue
		}
		if event == "error" {
			// An error event (old llama.cpp's "error:" line) is classified
			// like an HTTP error body.
			return Response{}, classify(p.name, 0, nil, data)
		}
		if string(data) == "[DONE]" {
			break
		}
		var ch oaChunk
		if err := json.Unmarshal(data, &ch); err != nil {
			return Response{}, &StreamError{Provider: p.name, Message: fmt.Sprintf("undecodable chunk %.200q", data), Err: err}
		}
		if len(ch.Error) > 0 && string(ch.Error) != "null" {
			// vLLM and llama.cpp report failures after the 200 as a chunk.
			return Response{}, classify(p.name, 0, nil, data)
		}
		if ch.Model != "" {
			out.Model = ch.Model
		}
		if ch.Usage != nil {
			u := &Usage{InputTokens: ch.Usage.PromptTokens, OutputTokens: ch.Usage.CompletionTokens}
			if d := ch.Usage.PromptTokensDetails; d != nil {
				u.CachedTokens = d.CachedTokens // already part of prompt_tokens
			}
			out.Usage = u
		}
		for _, c := range ch.Choices {
			if c.Index != 0 {
				continue // n > 1 is never asked for
			}
			if c.Delta.ReasoningContent != "" {
				viaField = true
				answer.thinking(c.Delta.ReasoningContent)
			} else {
				answer.thinking(c.Delta.Reasoning)
			}
			answer.content(c.Delta.Content)
			for _, f := range c.Delta.ToolCalls {
				var pc *oaPending
				switch {
				case f.Index != nil:
					pc = byIdx[*f.Index]
					if pc == nil {
						pc = &oaPending{}
						byIdx[*f.Index] = pc
						calls = append(calls, pc)
					}
				case len(calls) > 0 && (f.ID == "" || f.ID == calls[len(calls)-1].id):
					// No index (some servers): a fragment without a new id
					// continues the last call.
					pc = calls[len(calls)-1]
				default:
					pc = &oaPending{}
					calls = append(calls, pc)
				}
				if f.ID != "" {
					pc.id = f.ID
				}
				if f.Function.Name != "" {
					pc.name = f.Function.Name
				}
				pc.args.WriteString(f.Function.Arguments)
			}
			if c.FinishReason != nil && *c.FinishReason != "" {
				finish = *c.FinishReason
			}
		}
	}
	out.Text, out.Thinking = answer.done()
	for i, pc := range calls {
		if pc.name == "" {
			return Response{}, &StreamError{Provider: p.name, Message: fmt.Sprintf("tool call %d has no name", i)}
		}
		id := pc.id
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: id, Name: pc.name, Arguments: argumentsJSON(pc.args.String())})
	}
	switch finish {
	case "stop", "":
		out.StopReason = StopEnd
	case "tool_calls", "function_call":
		out.StopReason = StopToolCalls
	case "length":
		out.StopReason = StopLength
	default:
		out.StopReason = finish
	}
	if len(out.ToolCalls) > 0 && out.StopReason == StopEnd {
		out.StopReason = StopToolCalls // llama.cpp and Ollama /v1 may say "stop"
	}
	if viaField && len(out.ToolCalls) > 0 && out.Thinking != "" {
		// Kept with the answer for this provider and model only: see
		// oaMessage.ReasoningContent.
		out.Native, _ = json.Marshal([]oaNativeReasoning{{Type: nativeReasoningContent, Text: out.Thinking}})
	}
	return out, nil
}

// nativeReasoningContent is the type of the native item that carries an
// answer's reasoning_content back to the server that sent it.
const nativeReasoningContent = "reasoning_content"

type oaNativeReasoning struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// reasoningContentOf is the reasoning_content kept in a message's native
// items, "" when none.
func reasoningContentOf(native json.RawMessage) string {
	items, _ := nativeItems(native)
	var b strings.Builder
	for _, raw := range items {
		var it oaNativeReasoning
		if json.Unmarshal(raw, &it) == nil && it.Type == nativeReasoningContent {
			b.WriteString(it.Text)
		}
	}
	return b.String()
}

// functionTools is the tool list in the OpenAI function-calling shape, which
// Ollama's native API shares.
func functionTools(tools []Tool) []oaTool {
	var out []oaTool
	for _, t := range tools {
		var ot oaTool
		ot.Type = "function"
		ot.Function.Name, ot.Function.Description = t.Name, t.Description
		ot.Function.Parameters = t.Parameters
		if len(ot.Function.Parameters) == 0 {
			ot.Function.Parameters = emptySchema
		}
		out = append(out, ot)
	}
	return out
}

// bearerStream sends body to path with a bearer key (when one is set), reads
// the stream with read, refuses a silently truncated prompt and announces
// the tool calls: the shared tail of the OpenAI-compatible and Ollama
// clients.
func (c *client) bearerStream(ctx context.Context, path, accept string, req Request, body []byte, onEvent func(Event), read reader) (Response, error) {
	h := http.Header{}
	h.Set("Accept", accept)
	if c.apiKey != "" {
		h.Set("Authorization", "Bearer "+c.apiKey)
	}
	out, err := c.exchange(ctx, path, body, h, onEvent, read)
	if err != nil {
		return Response{}, err
	}
	if err := checkTruncation(c.name, req, out.Usage); err != nil {
		return Response{}, err
	}
	emitToolCalls(onEvent, out.ToolCalls)
	return out, nil
}

// readFailure is the error of a stream that stopped before its end marker:
// the caller's cancel, a cut stream (a failed inference, nothing of it is
// used), or a read error.
func (c *client) readFailure(ctx context.Context, err error, endMarker string) error {
	if ctx.Err() != nil {
		return c.cancelled(ctx)
	}
	if errors.Is(err, io.EOF) {
		return &StreamError{Provider: c.name, Message: "the stream ended before " + endMarker}
	}
	return &StreamError{Provider: c.name, Message: "reading the stream", Err: err}
}
