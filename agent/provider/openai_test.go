package provider

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

var sse = map[string]string{"Content-Type": "text/event-stream"}

func TestOpenAIStreamedText(t *testing.T) {
	w := newWire(t, answer{header: sse, file: "openai/text.sse"})
	p := newFor(t, NameOpenAI, baseFor(NameOpenAI, w), nil)
	var c collect
	resp, err := p.Stream(context.Background(), userReq("hi"), c.on)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Hello, wörld!" || c.text != resp.Text {
		t.Errorf("text = %q, streamed %q", resp.Text, c.text)
	}
	if len(c.order) != 3 {
		t.Errorf("want 3 text events, got %v", c.order)
	}
	if resp.StopReason != StopEnd || resp.Model != "gpt-4o-mini" {
		t.Errorf("stop %q model %q", resp.StopReason, resp.Model)
	}
	// Usage comes in the last chunk; prompt_tokens already includes the cached ones.
	want := &Usage{InputTokens: 2006, OutputTokens: 300, CachedTokens: 1920}
	if !reflect.DeepEqual(resp.Usage, want) {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
	if w.paths[0] != "/v1/chat/completions" {
		t.Errorf("path %q", w.paths[0])
	}
}

func TestOpenAIToolCallsSplitAcrossChunks(t *testing.T) {
	w := newWire(t, answer{header: sse, file: "openai/tool_calls_parallel.sse"})
	p := newFor(t, NameOpenAI, baseFor(NameOpenAI, w), nil)
	var c collect
	resp, err := p.Stream(context.Background(), userReq("read"), c.on)
	if err != nil {
		t.Fatal(err)
	}
	want := []ToolCall{
		{ID: "call_abc", Name: "read_file", Arguments: json.RawMessage(`{"path": "main.go"}`)},
		{ID: "call_def", Name: "grep", Arguments: json.RawMessage(`{"pattern": "func Main"}`)},
	}
	if !reflect.DeepEqual(resp.ToolCalls, want) {
		t.Errorf("calls = %s\nwant %s", js(resp.ToolCalls), js(want))
	}
	if !reflect.DeepEqual(c.calls, want) {
		t.Errorf("tool_call events = %s", js(c.calls))
	}
	if resp.StopReason != StopToolCalls {
		t.Errorf("stop %q", resp.StopReason)
	}
	if resp.Usage == nil || resp.Usage.InputTokens != 812 || resp.Usage.OutputTokens != 41 {
		t.Errorf("usage %+v", resp.Usage)
	}
}

func TestOpenAILlamaCppToolCallWithStopFinish(t *testing.T) {
	w := newWire(t, answer{header: sse, file: "openai/llamacpp_tool_call.sse"})
	p := newFor(t, NameOpenAI, baseFor(NameOpenAI, w), nil)
	resp, err := p.Stream(context.Background(), userReq("test"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 1 || string(resp.ToolCalls[0].Arguments) != `{"command": "go test ./..."}` {
		t.Fatalf("calls %s", js(resp.ToolCalls))
	}
	if resp.StopReason != StopToolCalls {
		t.Errorf("llama.cpp says stop with a tool call; want %q, got %q", StopToolCalls, resp.StopReason)
	}
	if resp.Usage.InputTokens != 4410 {
		t.Errorf("usage %+v", resp.Usage)
	}
}

func TestOpenAIRequestBody(t *testing.T) {
	w := newWire(t, answer{header: sse, file: "openai/text.sse"})
	t.Setenv("SOBA_TEST_OPENAI_KEY", "sk-test-123")
	p, err := New(Config{Provider: "openai", BaseURL: w.srv.URL + "/v1/", Model: "qwen", APIKeyEnv: "SOBA_TEST_OPENAI_KEY", MaxOutputTokens: 512})
	if err != nil {
		t.Fatal(err)
	}
	temp := 0.2
	req := Request{
		System: "sys",
		Messages: []Message{
			{Role: RoleUser, Text: "list"},
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "ls", Arguments: json.RawMessage(`{"dir":"."}`)}}},
			{Role: RoleTool, ToolCallID: "c1", ToolName: "ls", Text: "a.go", IsError: false},
		},
		Tools:       []Tool{{Name: "ls", Description: "list", Parameters: json.RawMessage(`{"type":"object","properties":{"dir":{"type":"string"}}}`)}, {Name: "pwd"}},
		Temperature: &temp,
	}
	if _, err := p.Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	if got := w.header(0).Get("Authorization"); got != "Bearer sk-test-123" {
		t.Errorf("Authorization = %q", got)
	}
	b := w.body(t, 0)
	if b["stream"] != true || b["model"] != "qwen" || b["max_tokens"] != float64(512) || b["temperature"] != 0.2 {
		t.Errorf("body %v", b)
	}
	if so, _ := b["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("stream_options = %v", b["stream_options"])
	}
	msgs := b["messages"].([]any)
	if len(msgs) != 4 || msgs[0].(map[string]any)["role"] != "system" {
		t.Fatalf("messages %v", msgs)
	}
	call := msgs[2].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
	if call["id"] != "c1" || call["type"] != "function" || call["function"].(map[string]any)["arguments"] != `{"dir":"."}` {
		t.Errorf("assistant tool call %v", call)
	}
	if tm := msgs[3].(map[string]any); tm["role"] != "tool" || tm["tool_call_id"] != "c1" || tm["content"] != "a.go" {
		t.Errorf("tool message %v", tm)
	}
	tools := b["tools"].([]any)
	if params := tools[1].(map[string]any)["function"].(map[string]any)["parameters"]; params == nil {
		t.Errorf("a tool without a schema must still send an object schema")
	}
}

func TestAPIKeyAbsentSendsNoAuthorization(t *testing.T) {
	w := newWire(t, answer{header: sse, file: "openai/text.sse"})
	t.Setenv("SOBA_TEST_EMPTY_KEY", "")
	p, err := New(Config{Provider: "openai", BaseURL: w.srv.URL + "/v1", APIKeyEnv: "SOBA_TEST_EMPTY_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Stream(context.Background(), userReq("x"), nil); err != nil {
		t.Fatal(err)
	}
	if got := w.header(0).Get("Authorization"); got != "" {
		t.Errorf("Authorization = %q, want none for a local server", got)
	}
}

func TestOpenAIErrorChunkAfter200IsOverflow_RG9(t *testing.T) {
	w := newWire(t, answer{header: sse, file: "errors/vllm_error_chunk.sse"})
	p := newFor(t, NameOpenAI, baseFor(NameOpenAI, w), nil)
	_, err := p.Stream(context.Background(), userReq("x"), nil)
	var oe *OverflowError
	if !errors.As(err, &oe) {
		t.Fatalf("want *OverflowError, got %T %v", err, err)
	}
	// 32000 in the messages and 1000 in the completion: the prompt fits,
	// the output budget does not.
	if oe.StatedTokens != 32000 || oe.LimitTokens != 32768 || oe.OutputTokens != 1000 || !oe.FromOutput || oe.FitsOutput() != 768 {
		t.Errorf("got %+v", oe)
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
