package provider

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestResponsesStreamedTextAndUsage(t *testing.T) {
	w := newWire(t, answer{header: sse, file: "responses/text.sse"})
	p := newFor(t, NameOpenAIResponses, w.srv.URL+"/v1", nil)
	var c collect
	resp, err := p.Stream(context.Background(), userReq("hi"), c.on)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Hello, wörld!" || c.text != resp.Text || len(c.order) != 3 {
		t.Errorf("text = %q, streamed %q in %v", resp.Text, c.text, c.order)
	}
	if resp.StopReason != StopEnd || resp.Model != "gpt-5-codex" {
		t.Errorf("stop %q model %q", resp.StopReason, resp.Model)
	}
	// input_tokens already counts the cached ones, output_tokens the reasoning.
	if want := (&Usage{InputTokens: 2006, OutputTokens: 300, CachedTokens: 1920}); !reflect.DeepEqual(resp.Usage, want) {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
	if w.paths[0] != "/v1/responses" {
		t.Errorf("path %q, want /v1/responses", w.paths[0])
	}
	// The encrypted reasoning is the answer's native part, without its id.
	var items []map[string]any
	if err := json.Unmarshal(resp.Native, &items); err != nil || len(items) != 1 {
		t.Fatalf("native = %s (%v)", resp.Native, err)
	}
	if items[0]["type"] != "reasoning" || items[0]["encrypted_content"] != "gAAAAABoRx1Qk2VuY3J5cHRlZC1yZWFzb25pbmctb25l" || items[0]["id"] != nil {
		t.Errorf("native item = %v", items[0])
	}
}

func TestResponsesRequestIsStatelessWithEncryptedReasoning(t *testing.T) {
	w := newWire(t, answer{header: sse, file: "responses/text.sse"})
	p := newFor(t, NameOpenAIResponses, w.srv.URL+"/v1", nil)
	reasoning := json.RawMessage(`[{"type":"reasoning","summary":[],"encrypted_content":"gAAAA-previous"}]`)
	req := Request{System: "You are terse.", Messages: []Message{
		{Role: RoleUser, Text: "read main.go"},
		{Role: RoleAssistant, Native: reasoning, ToolCalls: []ToolCall{{ID: "call_1", Name: "read_file", Arguments: json.RawMessage(`{"path":"main.go"}`)}}},
		{Role: RoleTool, ToolCallID: "call_1", ToolName: "read_file", Text: "package main"},
		{Role: RoleAssistant, Text: "It is a main package."},
		{Role: RoleUser, Text: "thanks"},
	}, Tools: []Tool{{Name: "read_file", Description: "Read a file"}}}
	if _, err := p.Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	b := w.body(t, 0)
	if b["store"] != false || b["stream"] != true || b["instructions"] != "You are terse." || b["model"] != "test-model" {
		t.Errorf("store %v stream %v instructions %v model %v", b["store"], b["stream"], b["instructions"], b["model"])
	}
	if inc, _ := json.Marshal(b["include"]); string(inc) != `["reasoning.encrypted_content"]` {
		t.Errorf("include = %s", inc)
	}
	if b["max_output_tokens"] != float64(8000) {
		t.Errorf("max_output_tokens = %v", b["max_output_tokens"])
	}
	got, _ := json.Marshal(b["input"])
	want := `[{"content":[{"text":"read main.go","type":"input_text"}],"role":"user","type":"message"},` +
		`{"encrypted_content":"gAAAA-previous","summary":[],"type":"reasoning"},` +
		`{"arguments":"{\"path\":\"main.go\"}","call_id":"call_1","name":"read_file","type":"function_call"},` +
		`{"call_id":"call_1","output":"package main","type":"function_call_output"},` +
		`{"content":[{"text":"It is a main package.","type":"output_text"}],"role":"assistant","type":"message"},` +
		`{"content":[{"text":"thanks","type":"input_text"}],"role":"user","type":"message"}]`
	if string(got) != want {
		t.Errorf("input =\n%s\nwant\n%s", got, want)
	}
	tools, _ := json.Marshal(b["tools"])
	if string(tools) != `[{"description":"Read a file","name":"read_file","parameters":{"properties":{},"type":"object"},"type":"function"}]` {
		t.Errorf("tools = %s", tools)
	}
}

func TestResponsesFunctionCalls(t *testing.T) {
	w := newWire(t, answer{header: sse, file: "responses/function_calls.sse"})
	p := newFor(t, NameOpenAIResponses, w.srv.URL+"/v1", nil)
	var c collect
	resp, err := p.Stream(context.Background(), userReq("read"), c.on)
	if err != nil {
		t.Fatal(err)
	}
	want := []ToolCall{
		{ID: "call_abc", Name: "read_file", Arguments: json.RawMessage(`{"path": "main.go"}`)},
		{ID: "call_def", Name: "grep", Arguments: json.RawMessage(`{"pattern": "func Main"}`)},
	}
	if !reflect.DeepEqual(resp.ToolCalls, want) || !reflect.DeepEqual(c.calls, want) {
		t.Errorf("calls = %s, events %s\nwant %s", js(resp.ToolCalls), js(c.calls), js(want))
	}
	if resp.StopReason != StopToolCalls {
		t.Errorf("stop %q", resp.StopReason)
	}
	if resp.Usage == nil || resp.Usage.InputTokens != 812 || resp.Usage.OutputTokens != 41 {
		t.Errorf("usage %+v", resp.Usage)
	}
	if !strings.Contains(string(resp.Native), "gAAAAABoRx2encrypted-two") {
		t.Errorf("native = %s", resp.Native)
	}
}

func TestResponsesIncompleteIsLength(t *testing.T) {
	w := newWire(t, answer{header: sse, file: "responses/incomplete.sse"})
	p := newFor(t, NameOpenAIResponses, w.srv.URL+"/v1", nil)
	resp, err := p.Stream(context.Background(), userReq("x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != StopLength || resp.Text != "The answer is" || resp.Usage.OutputTokens != 16 {
		t.Errorf("resp %+v", resp)
	}
}

// TestResponsesErrors: every failure of the Responses API maps to the typed
// errors the agent acts on, whether it came as an HTTP status or inside the
// stream after the 200.
func TestResponsesErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answers  []answer
		want     any
		requests int
		check    func(t *testing.T, err error)
	}{
		{name: "overflow status", answers: []answer{{status: 400, body: `{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`}},
			want: new(*OverflowError), requests: 1},
		{name: "overflow in stream", answers: []answer{{header: sse, file: "errors/responses_failed_overflow.sse"}}, want: new(*OverflowError), requests: 1},
		{name: "rate limit status retried", answers: []answer{{status: 429, header: map[string]string{"Retry-After": "1"}, body: `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`}},
			want: new(*RateLimitError), requests: 3},
		{name: "rate limit event before output retried", answers: []answer{{header: sse, file: "errors/responses_error_event.sse"}}, want: new(*RateLimitError), requests: 3},
		{name: "auth", answers: []answer{{status: 401, body: `{"error":{"message":"Incorrect API key provided: sk-xx. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`}},
			want: new(*AuthError), requests: 1},
		{name: "bad request names the item", answers: []answer{{status: 400, body: `{"error":{"message":"Invalid 'input[0].encrypted_content': the compaction item could not be decrypted.","type":"invalid_request_error","param":"input[0].encrypted_content","code":"invalid_encrypted_content"}}`}},
			want: new(*BadRequestError), requests: 1, check: func(t *testing.T, err error) {
				if !strings.Contains(err.Error(), "input[0].encrypted_content") {
					t.Errorf("error does not name the item: %v", err)
				}
			}},
		{name: "server error", answers: []answer{{status: 500, body: `{"error":{"message":"The server had an error processing your request.","type":"server_error","param":null,"code":null}}`}},
			want: new(*ServerError), requests: 1},
		{name: "cut mid function call", answers: []answer{{header: sse, file: "responses/cut_mid_function_call.sse"}}, want: new(*StreamError), requests: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWire(t, tc.answers...)
			p := newFor(t, NameOpenAIResponses, w.srv.URL+"/v1", nil)
			var c collect
			resp, err := p.Stream(context.Background(), userReq("x"), c.on)
			if err == nil {
				t.Fatalf("no error; resp %+v", resp)
			}
			if !errors.As(err, tc.want) {
				t.Errorf("error %T %v, want %T", err, err, tc.want)
			}
			if len(c.calls) != 0 || len(resp.ToolCalls) != 0 {
				t.Errorf("a failed inference announced tool calls: %s", js(c.calls))
			}
			if n := w.requests(); n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
			if tc.check != nil {
				tc.check(t, err)
			}
		})
	}
}

func TestResponsesNativeItemsMustBeAnArray(t *testing.T) {
	w := newWire(t, answer{header: sse, file: "responses/text.sse"})
	p := newFor(t, NameOpenAIResponses, w.srv.URL+"/v1", nil)
	_, err := p.Stream(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x", Native: json.RawMessage(`{"type":"compaction"}`)}}}, nil)
	if err == nil || !strings.Contains(err.Error(), "message 0") || !strings.Contains(err.Error(), "JSON array") {
		t.Fatalf("err = %v", err)
	}
	if w.requests() != 0 {
		t.Errorf("a malformed request was sent")
	}
}

func TestResponsesCompact(t *testing.T) {
	const ok = `{"id":"resp_cmp","object":"response.compaction","created_at":1764720000,"output":[` +
		`{"id":"msg_1","type":"message","role":"user","content":[{"type":"input_text","text":"fix the build"}]},` +
		`{"id":"cmp_1","type":"compaction","encrypted_content":"gAAAA-compacted"}],` +
		`"usage":{"input_tokens":5200,"input_tokens_details":{"cached_tokens":0},"output_tokens":410,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":5610}}`
	for _, tc := range []struct {
		name    string
		answer  answer
		items   string
		tokens  int
		wantErr any
	}{
		{name: "compacted", answer: answer{body: ok},
			items:  `[{"content":[{"type":"input_text","text":"fix the build"}],"role":"user","type":"message"},{"encrypted_content":"gAAAA-compacted","type":"compaction"}]`,
			tokens: 410},
		{name: "no compaction item", answer: answer{body: `{"object":"response.compaction","output":[{"type":"message","role":"user","content":[]}]}`}, wantErr: new(*StreamError)},
		{name: "not JSON", answer: answer{body: `<html>bad gateway</html>`}, wantErr: new(*StreamError)},
		{name: "rejected", answer: answer{status: 400, body: `{"error":{"message":"Unsupported model for compaction","type":"invalid_request_error","param":"model","code":null}}`}, wantErr: new(*BadRequestError)},
		{name: "overflow", answer: answer{status: 400, body: `{"error":{"message":"Your input exceeds the context window of this model.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`}, wantErr: new(*OverflowError)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWire(t, tc.answer)
			p := newFor(t, NameOpenAIResponses, w.srv.URL+"/v1", nil).(Compactor)
			got, err := p.Compact(context.Background(), Request{System: "keep the goal", Messages: []Message{
				{Role: RoleUser, Text: "fix the build"}, {Role: RoleAssistant, Text: "done", Native: json.RawMessage(`[{"type":"reasoning","encrypted_content":"r"}]`)}}})
			if w.paths[0] != "/v1/responses/compact" {
				t.Errorf("path %q", w.paths[0])
			}
			b := w.body(t, 0)
			if b["instructions"] != "keep the goal" || b["model"] != "test-model" || b["stream"] != nil || b["store"] != nil {
				t.Errorf("body %v", b)
			}
			if tc.wantErr != nil {
				if err == nil || !errors.As(err, tc.wantErr) {
					t.Fatalf("err %T %v, want %T", err, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Items) != tc.items || got.Tokens != tc.tokens {
				t.Errorf("items %s tokens %d\nwant %s %d", got.Items, got.Tokens, tc.items, tc.tokens)
			}
		})
	}
}

// TestResponsesModelWithoutReasoning: a model that refuses the encrypted
// reasoning include is asked again without it, once, and never again with
// it.
func TestResponsesModelWithoutReasoning(t *testing.T) {
	refused := answer{status: 400, body: `{"error":{"message":"Encrypted content is not supported with this model.","type":"invalid_request_error","param":"include","code":null}}`}
	ok := answer{header: sse, file: "responses/text.sse"}
	w := newWire(t, refused, ok, ok)
	p := newFor(t, NameOpenAIResponses, w.srv.URL+"/v1", nil)
	for i := 0; i < 2; i++ {
		if _, err := p.Stream(context.Background(), userReq("hi"), nil); err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
	}
	if n := w.requests(); n != 3 {
		t.Fatalf("%d requests, want the refused one and two without the include", n)
	}
	if w.body(t, 0)["include"] == nil || w.body(t, 1)["include"] != nil || w.body(t, 2)["include"] != nil {
		t.Errorf("include: %v, %v, %v", w.body(t, 0)["include"], w.body(t, 1)["include"], w.body(t, 2)["include"])
	}
}
