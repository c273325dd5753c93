package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
)

// responses speaks OpenAI's Responses API (POST baseURL + "/responses",
// streamed as typed SSE events) with store:false, so nothing depends on
// state kept by the server: the encrypted reasoning of each answer comes
// back in its output items (include: reasoning.encrypted_content), is
// returned as Response.Native, and is sent again with that answer in later
// requests to the same model.
type responses struct {
	client
	// plain is set once the model refused include:
	// reasoning.encrypted_content (a model without reasoning): later
	// requests go without it.
	plain atomic.Bool
}

// rsItem is one input or output item of the Responses API. Only the fields
// SOBA writes are typed; items kept verbatim (reasoning, compaction) travel
// as raw JSON.
type rsItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role,omitempty"`
	Content   []rsContent     `json:"content,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments *string         `json:"arguments,omitempty"`
	Output    *string         `json:"output,omitempty"`
	Raw       json.RawMessage `json:"-"`
}

// MarshalJSON writes a verbatim item as it was received.
func (it rsItem) MarshalJSON() ([]byte, error) {
	if len(it.Raw) > 0 {
		return it.Raw, nil
	}
	type plain rsItem
	return json.Marshal(plain(it))
}

type rsContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type rsTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

type rsRequest struct {
	Model           string   `json:"model"`
	Instructions    string   `json:"instructions,omitempty"`
	Input           []rsItem `json:"input"`
	Tools           []rsTool `json:"tools,omitempty"`
	Stream          bool     `json:"stream,omitempty"`
	Store           bool     `json:"store"`
	Include         []string `json:"include,omitempty"`
	MaxOutputTokens int      `json:"max_output_tokens,omitempty"`
	Temperature     *float64 `json:"temperature,omitempty"`
	PromptCacheKey  string   `json:"prompt_cache_key,omitempty"`
}

// rsUsage is the Responses API's usage object: input_tokens already counts
// the cached ones, output_tokens the reasoning ones.
type rsUsage struct {
	InputTokens        int `json:"input_tokens"`
	OutputTokens       int `json:"output_tokens"`
	InputTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
}

func (u *rsUsage) normalised() *Usage {
	if u == nil {
		return nil
	}
	out := &Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens}
	if d := u.InputTokensDetails; d != nil {
		out.CachedTokens = d.CachedTokens
	}
	return out
}

// rsEvent is one streamed event; which fields are set depends on Type.
type rsEvent struct {
	Type        string          `json:"type"`
	OutputIndex int             `json:"output_index"`
	Delta       string          `json:"delta"`
	Item        json.RawMessage `json:"item"`
	Response    *struct {
		Model             string   `json:"model"`
		Status            string   `json:"status"`
		Usage             *rsUsage `json:"usage"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
		Error json.RawMessage `json:"error"`
	} `json:"response"`
}

// rsOutput is the part of an output item the reader looks at.
type rsOutput struct {
	Type      string      `json:"type"`
	CallID    string      `json:"call_id"`
	Name      string      `json:"name"`
	Arguments string      `json:"arguments"`
	Content   []rsContent `json:"content"`
}

// IncludeEncryptedReasoning is the include value that makes a store:false
// answer carry its reasoning, encrypted, in its output items.
const IncludeEncryptedReasoning = "reasoning.encrypted_content"

// nativeItems decodes a message's native items: a JSON array of Responses
// items, or nothing.
func nativeItems(raw json.RawMessage) ([]json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("native items are not a JSON array: %w", err)
	}
	return items, nil
}

// input converts messages into Responses input items.
func (p *responses) input(msgs []Message) ([]rsItem, error) {
	var out []rsItem
	str := func(s string) *string { return &s }
	for i, m := range msgs {
		items, err := nativeItems(m.Native)
		if err != nil {
			return nil, fmt.Errorf("%s: message %d: %w", p.name, i, err)
		}
		for _, raw := range items {
			out = append(out, rsItem{Raw: raw})
		}
		switch m.Role {
		case RoleUser:
			if m.Text == "" && len(items) > 0 {
				continue // a native continuation in place of a text
			}
			out = append(out, rsItem{Type: "message", Role: "user", Content: []rsContent{{Type: "input_text", Text: m.Text}}})
		case RoleAssistant:
			if m.Text != "" {
				out = append(out, rsItem{Type: "message", Role: "assistant", Content: []rsContent{{Type: "output_text", Text: m.Text}}})
			}
			for _, tc := range m.ToolCalls {
				out = append(out, rsItem{Type: "function_call", CallID: tc.ID, Name: tc.Name, Arguments: str(string(argumentsJSON(string(tc.Arguments))))})
			}
			if m.Text == "" && len(m.ToolCalls) == 0 && len(items) == 0 {
				return nil, fmt.Errorf("%s: message %d: empty assistant message", p.name, i)
			}
		case RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("%s: message %d: tool result without a tool call id", p.name, i)
			}
			out = append(out, rsItem{Type: "function_call_output", CallID: m.ToolCallID, Output: str(m.Text)})
		default:
			return nil, fmt.Errorf("%s: message %d: unknown role %q", p.name, i, m.Role)
		}
	}
	return out, nil
}

func (p *responses) body(req Request) ([]byte, error) {
	in, err := p.input(req.Messages)
	if err != nil {
		return nil, err
	}
	r := rsRequest{Model: p.modelFor(req), Instructions: req.System, Input: in, Stream: true, Store: false,
		MaxOutputTokens: p.maxOutputFor(req), Temperature: req.Temperature, PromptCacheKey: p.cacheKeyFor(req)}
	if !p.plain.Load() {
		r.Include = []string{IncludeEncryptedReasoning}
	}
	for _, t := range req.Tools {
		s := t.Parameters
		if len(s) == 0 {
			s = emptySchema
		}
		r.Tools = append(r.Tools, rsTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: s})
	}
	return json.Marshal(r)
}

func (p *responses) Stream(ctx context.Context, req Request, onEvent func(Event)) (Response, error) {
	body, err := p.body(req)
	if err != nil {
		return Response{}, err
	}
	out, err := p.bearerStream(ctx, "/responses", "text/event-stream", req, body, onEvent, p.read)
	var br *BadRequestError
	if err != nil && !p.plain.Load() && errors.As(err, &br) && refusesEncryptedReasoning(br.Message) {
		// A model without reasoning refuses the include: ask again
		// without it, and from now on.
		p.plain.Store(true)
		if body, err = p.body(req); err != nil {
			return Response{}, err
		}
		return p.bearerStream(ctx, "/responses", "text/event-stream", req, body, onEvent, p.read)
	}
	return out, err
}

// refusesEncryptedReasoning says whether a 400's message is the model
// refusing include: reasoning.encrypted_content.
func refusesEncryptedReasoning(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "encrypted content") && strings.Contains(m, "not supported")
}

// rsPending is an output item being streamed.
type rsPending struct {
	typ    string
	callID string
	name   string
	args   strings.Builder
	done   bool
	text   bool // a text delta of this item was seen
}

// read parses the event stream up to response.completed (or
// response.incomplete). Function calls are assembled by output index and
// taken whole from response.output_item.done; reasoning items are kept
// verbatim, without their ids (store:false keeps nothing to refer to), as
// the response's native items.
func (p *responses) read(ctx context.Context, r io.Reader, onEvent func(Event)) (Response, error) {
	sse := newSSEReader(r)
	var (
		out    Response
		answer = newAnswerStream(onEvent)
		items  = map[int]*rsPending{}
		order  []*rsPending
		calls  []ToolCall
		native []json.RawMessage
	)
	item := func(i int) *rsPending {
		it := items[i]
		if it == nil {
			it = &rsPending{}
			items[i] = it
			order = append(order, it)
		}
		return it
	}
	for {
		typ, data, err := sse.Next()
		if err != nil {
			return Response{}, p.readFailure(ctx, err, "response.completed")
		}
		if len(data) == 0 {
			continue
		}
		var ev rsEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return Response{}, &StreamError{Provider: p.name, Message: fmt.Sprintf("undecodable %s event %.200q", typ, data), Err: err}
		}
		if typ == "" {
			typ = ev.Type
		}
		switch typ {
		case "error":
			return Response{}, classify(p.name, 0, nil, data)
		case "response.failed":
			if ev.Response != nil && len(ev.Response.Error) > 0 && string(ev.Response.Error) != "null" {
				return Response{}, classify(p.name, 0, nil, []byte(`{"error":`+string(ev.Response.Error)+`}`))
			}
			return Response{}, &StreamError{Provider: p.name, Message: "the response failed without an error"}
		case "response.created", "response.in_progress":
			if ev.Response != nil && ev.Response.Model != "" {
				out.Model = ev.Response.Model
			}
		case "response.output_item.added":
			var o rsOutput
			if err := json.Unmarshal(ev.Item, &o); err != nil {
				return Response{}, &StreamError{Provider: p.name, Message: fmt.Sprintf("undecodable output item %.200q", ev.Item), Err: err}
			}
			it := item(ev.OutputIndex)
			it.typ, it.callID, it.name = o.Type, o.CallID, o.Name
		case "response.output_text.delta":
			it := item(ev.OutputIndex)
			it.text = true
			answer.content(ev.Delta)
		case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
			// A reasoning summary (OpenAI, when asked for) or the
			// reasoning itself (gpt-oss on vLLM and Ollama): thinking,
			// never the answer.
			answer.thinking(ev.Delta)
		case "response.function_call_arguments.delta":
			item(ev.OutputIndex).args.WriteString(ev.Delta)
		case "response.output_item.done":
			var o rsOutput
			if err := json.Unmarshal(ev.Item, &o); err != nil {
				return Response{}, &StreamError{Provider: p.name, Message: fmt.Sprintf("undecodable output item %.200q", ev.Item), Err: err}
			}
			it := item(ev.OutputIndex)
			it.done = true
			if it.typ == "" {
				it.typ = o.Type
			}
			switch o.Type {
			case "function_call":
				args := o.Arguments
				if args == "" {
					args = it.args.String()
				}
				name := o.Name
				if name == "" {
					name = it.name
				}
				if name == "" {
					return Response{}, &StreamError{Provider: p.name, Message: fmt.Sprintf("function call %d has no name", ev.OutputIndex)}
				}
				id := o.CallID
				if id == "" {
					id = it.callID
				}
				calls = append(calls, ToolCall{ID: id, Name: name, Arguments: argumentsJSON(args)})
			case "message":
				if !it.text {
					// The text came whole, without deltas.
					for _, c := range o.Content {
						if c.Type == "output_text" {
							answer.content(c.Text)
						}
					}
				}
			case "reasoning":
				native = append(native, withoutID(ev.Item))
			}
		case "response.completed", "response.incomplete":
			for i, it := range order {
				if it.typ == "function_call" && !it.done {
					return Response{}, &StreamError{Provider: p.name, Message: fmt.Sprintf("function call %s (output %d) was never completed", it.callID, i)}
				}
			}
			out.Text, out.Thinking = answer.done()
			out.ToolCalls = calls
			if len(native) > 0 {
				out.Native, _ = json.Marshal(native)
			}
			out.StopReason = StopEnd
			if ev.Response != nil {
				if ev.Response.Model != "" {
					out.Model = ev.Response.Model
				}
				out.Usage = ev.Response.Usage.normalised()
				if typ == "response.incomplete" {
					out.StopReason = "incomplete"
					if d := ev.Response.IncompleteDetails; d != nil && d.Reason != "" {
						out.StopReason = d.Reason
					}
					if out.StopReason == "max_output_tokens" {
						out.StopReason = StopLength
					}
				}
			}
			if len(out.ToolCalls) > 0 && out.StopReason == StopEnd {
				out.StopReason = StopToolCalls
			}
			return out, nil
		}
	}
}

// withoutID drops an item's "id": under store:false the server keeps no
// item an id could refer to, and an item sent back with one is looked up
// and refused.
func withoutID(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	if _, ok := m["id"]; !ok {
		return raw
	}
	delete(m, "id")
	b, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return b
}

// rsCompactRequest is the body of POST /responses/compact.
type rsCompactRequest struct {
	Model        string   `json:"model"`
	Instructions string   `json:"instructions,omitempty"`
	Input        []rsItem `json:"input"`
}

// rsCompacted is the compacted response object (object
// "response.compaction"): the output items replace the history.
type rsCompacted struct {
	Object string            `json:"object"`
	Model  string            `json:"model"`
	Output []json.RawMessage `json:"output"`
	Usage  *rsUsage          `json:"usage"`
}

// Compact sends the conversation to /responses/compact (R-N1). The answer's
// output items — an opaque compaction item with its encrypted content, and
// the user messages the server kept — are returned verbatim, without ids
// (store:false keeps nothing they could refer to). Its size is the
// compaction's reported output tokens.
func (p *responses) Compact(ctx context.Context, req Request) (Compacted, error) {
	in, err := p.input(req.Messages)
	if err != nil {
		return Compacted{}, err
	}
	if len(in) == 0 {
		return Compacted{}, fmt.Errorf("%s: nothing to compact", p.name)
	}
	body, err := json.Marshal(rsCompactRequest{Model: p.modelFor(req), Instructions: req.System, Input: in})
	if err != nil {
		return Compacted{}, err
	}
	h := http.Header{}
	h.Set("Accept", "application/json")
	if p.apiKey != "" {
		h.Set("Authorization", "Bearer "+p.apiKey)
	}
	var got rsCompacted
	readJSON := func(ctx context.Context, r io.Reader, _ func(Event)) (Response, error) {
		dec := json.NewDecoder(io.LimitReader(r, maxLine))
		if err := dec.Decode(&got); err != nil {
			if ctx.Err() != nil {
				return Response{}, p.cancelled(ctx)
			}
			return Response{}, &StreamError{Provider: p.name, Message: "undecodable compaction answer", Err: err}
		}
		return Response{}, nil
	}
	if _, err := p.exchange(ctx, "/responses/compact", body, h, nil, readJSON); err != nil {
		return Compacted{}, err
	}
	hasCompaction := false
	items := make([]json.RawMessage, 0, len(got.Output))
	for _, it := range got.Output {
		var o rsOutput
		if err := json.Unmarshal(it, &o); err != nil {
			return Compacted{}, &StreamError{Provider: p.name, Message: fmt.Sprintf("undecodable compaction output item %.200q", it), Err: err}
		}
		hasCompaction = hasCompaction || o.Type == "compaction"
		items = append(items, withoutID(it))
	}
	if !hasCompaction {
		return Compacted{}, &StreamError{Provider: p.name, Message: fmt.Sprintf("the compaction answer has no compaction item (%d output items)", len(got.Output))}
	}
	out := Compacted{Usage: got.Usage.normalised(), Model: got.Model}
	out.Items, _ = json.Marshal(items)
	if out.Usage != nil {
		out.Tokens = out.Usage.OutputTokens
	}
	return out, nil
}
