package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ollama speaks Ollama's native /api/chat with NDJSON streaming. It always
// sends options.num_ctx: without it Ollama loads the model with its small
// default window and silently drops the front of a longer prompt.
type ollama struct{ client }

type olToolCall struct {
	ID       string `json:"id,omitempty"`
	Function struct {
		Index     *int            `json:"index,omitempty"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type olMessage struct {
	Role       string       `json:"role"`
	Content    string       `json:"content"`
	ToolCalls  []olToolCall `json:"tool_calls,omitempty"`
	ToolName   string       `json:"tool_name,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

type olOptions struct {
	NumCtx      int      `json:"num_ctx,omitempty"`
	NumPredict  int      `json:"num_predict,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
}

type olRequest struct {
	Model    string      `json:"model"`
	Messages []olMessage `json:"messages"`
	Tools    []oaTool    `json:"tools,omitempty"`
	Stream   bool        `json:"stream"`
	Options  olOptions   `json:"options"`
}

type olChunk struct {
	Model   string `json:"model"`
	Message struct {
		Content string `json:"content"`
		// Thinking is the reasoning of a model run with think (Ollama
		// 0.9+; on by default for thinking models since 0.12).
		Thinking  string       `json:"thinking"`
		ToolCalls []olToolCall `json:"tool_calls"`
	} `json:"message"`
	Done                  bool   `json:"done"`
	DoneReason            string `json:"done_reason"`
	PromptEvalCount       int    `json:"prompt_eval_count"`
	PromptEvalCachedCount int    `json:"prompt_eval_cached_count"`
	EvalCount             int    `json:"eval_count"`
	Error                 string `json:"error"`
}

func (p *ollama) body(req Request) ([]byte, error) {
	r := olRequest{Model: p.modelFor(req), Stream: true}
	r.Options = olOptions{NumCtx: p.contextWindowFor(req), NumPredict: p.maxOutputFor(req), Temperature: req.Temperature}
	if req.System != "" {
		r.Messages = append(r.Messages, olMessage{Role: "system", Content: req.System})
	}
	for i, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			r.Messages = append(r.Messages, olMessage{Role: "user", Content: m.Text})
		case RoleAssistant:
			om := olMessage{Role: "assistant", Content: m.Text}
			for _, tc := range m.ToolCalls {
				var c olToolCall
				c.ID = tc.ID
				c.Function.Name = tc.Name
				c.Function.Arguments = argumentsJSON(string(tc.Arguments))
				if c.Function.Arguments[0] != '{' {
					c.Function.Arguments = json.RawMessage("{}") // Ollama wants an object
				}
				om.ToolCalls = append(om.ToolCalls, c)
			}
			r.Messages = append(r.Messages, om)
		case RoleTool:
			r.Messages = append(r.Messages, olMessage{Role: "tool", Content: m.Text, ToolName: m.ToolName, ToolCallID: m.ToolCallID})
		default:
			return nil, fmt.Errorf("ollama: message %d: unknown role %q", i, m.Role)
		}
	}
	r.Tools = functionTools(req.Tools)
	return json.Marshal(r)
}

func (p *ollama) Stream(ctx context.Context, req Request, onEvent func(Event)) (Response, error) {
	body, err := p.body(req)
	if err != nil {
		return Response{}, err
	}
	return p.bearerStream(ctx, "/api/chat", "application/x-ndjson", req, body, onEvent, p.read)
}

// read parses NDJSON lines up to the one with done:true. Ollama sends each
// tool call whole in one line.
func (p *ollama) read(ctx context.Context, r io.Reader, onEvent func(Event)) (Response, error) {
	br := newSSEReader(r).r // the same buffered line reader
	var (
		out    Response
		answer = newAnswerStream(onEvent)
		line   []byte
	)
	for {
		l, err := readLine(br, &line)
		if err != nil && !(errors.Is(err, io.EOF) && len(bytes.TrimSpace(l)) > 0) {
			return Response{}, p.readFailure(ctx, err, "done:true")
		}
		l = bytes.TrimSpace(l)
		if len(l) == 0 {
			continue
		}
		var ch olChunk
		if jerr := json.Unmarshal(l, &ch); jerr != nil {
			if errors.Is(err, io.EOF) {
				return Response{}, &StreamError{Provider: p.name, Message: "the stream was cut inside a line", Err: jerr}
			}
			return Response{}, &StreamError{Provider: p.name, Message: fmt.Sprintf("undecodable line %.200q", l), Err: jerr}
		}
		if ch.Error != "" {
			return Response{}, classify(p.name, 0, nil, l)
		}
		if ch.Model != "" {
			out.Model = ch.Model
		}
		answer.thinking(ch.Message.Thinking)
		answer.content(ch.Message.Content)
		for _, tc := range ch.Message.ToolCalls {
			if tc.Function.Name == "" {
				return Response{}, &StreamError{Provider: p.name, Message: "tool call without a name"}
			}
			id := tc.ID
			if id == "" {
				id = fmt.Sprintf("call_%d", len(out.ToolCalls)) // older Ollama sends no ids
			}
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: id, Name: tc.Function.Name, Arguments: argumentsJSON(string(tc.Function.Arguments))})
		}
		if ch.Done {
			out.Text, out.Thinking = answer.done()
			out.Usage = &Usage{InputTokens: ch.PromptEvalCount, OutputTokens: ch.EvalCount, CachedTokens: ch.PromptEvalCachedCount}
			switch ch.DoneReason {
			case "stop", "":
				out.StopReason = StopEnd
			case "length":
				out.StopReason = StopLength
			default:
				out.StopReason = ch.DoneReason
			}
			if len(out.ToolCalls) > 0 && out.StopReason == StopEnd {
				out.StopReason = StopToolCalls
			}
			return out, nil
		}
		if err != nil { // a complete last line without done:true
			return Response{}, &StreamError{Provider: p.name, Message: "the stream ended before done:true"}
		}
	}
}
