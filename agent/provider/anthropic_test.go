package provider

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func TestAnthropicCacheTokensSummed(t *testing.T) {
	w := newWire(t, answer{header: sse, file: "anthropic/text_cached.sse"})
	p := newFor(t, NameAnthropic, baseFor(NameAnthropic, w), nil)
	var c collect
	resp, err := p.Stream(context.Background(), userReq("hi"), c.on)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Hello!" || c.text != "Hello!" || resp.StopReason != StopEnd || resp.Model != "claude-sonnet-4-5" {
		t.Errorf("resp %+v streamed %q", resp, c.text)
	}
	// input_tokens 25 + cache_creation 1200 + cache_read 30000: the whole prompt.
	want := &Usage{InputTokens: 31225, OutputTokens: 15, CachedTokens: 30000}
	if !reflect.DeepEqual(resp.Usage, want) {
		t.Errorf("usage %+v, want %+v", resp.Usage, want)
	}
	if w.paths[0] != "/v1/messages" {
		t.Errorf("path %q", w.paths[0])
	}
}

func TestAnthropicToolUseStreamed(t *testing.T) {
	w := newWire(t, answer{header: sse, file: "anthropic/tool_use.sse"})
	p := newFor(t, NameAnthropic, baseFor(NameAnthropic, w), nil)
	var c collect
	resp, err := p.Stream(context.Background(), userReq("weather?"), c.on)
	if err != nil {
		t.Fatal(err)
	}
	want := []ToolCall{
		{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "get_weather", Arguments: json.RawMessage(`{"location": "San Francisco, CA"}`)},
		{ID: "toolu_02", Name: "get_time", Arguments: json.RawMessage(`{}`)},
	}
	if !reflect.DeepEqual(resp.ToolCalls, want) || !reflect.DeepEqual(c.calls, want) {
		t.Errorf("calls %s events %s", js(resp.ToolCalls), js(c.calls))
	}
	if resp.Text != "Let me check the weather." || resp.StopReason != StopToolCalls {
		t.Errorf("text %q stop %q", resp.Text, resp.StopReason)
	}
	if resp.Usage.InputTokens != 472 || resp.Usage.OutputTokens != 89 {
		t.Errorf("usage %+v", resp.Usage)
	}
	// Text streams first; tool calls are announced only at the end.
	if c.order[len(c.order)-1] != EventToolCall || c.order[0] != EventText {
		t.Errorf("event order %v", c.order)
	}
}

func TestAnthropicRequestShape(t *testing.T) {
	w := newWire(t, answer{header: sse, file: "anthropic/text_cached.sse"})
	t.Setenv("SOBA_TEST_ANTHROPIC_KEY", "sk-ant-xyz")
	p, err := New(Config{Provider: "anthropic", BaseURL: w.srv.URL, Model: "claude-x", APIKeyEnv: "SOBA_TEST_ANTHROPIC_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	req := Request{
		System: "be brief",
		Messages: []Message{
			{Role: RoleUser, Text: "run both"},
			{Role: RoleAssistant, Text: "ok", ToolCalls: []ToolCall{{ID: "t1", Name: "a", Arguments: json.RawMessage(`{"x":1}`)}, {ID: "t2", Name: "b"}}},
			{Role: RoleTool, ToolCallID: "t1", Text: "done"},
			{Role: RoleTool, ToolCallID: "t2", Text: "boom", IsError: true},
			{Role: RoleUser, Text: "and now?"},
		},
		Tools: []Tool{{Name: "a", Parameters: json.RawMessage(`{"type":"object"}`)}},
	}
	if _, err := p.Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	h := w.header(0)
	if h.Get("x-api-key") != "sk-ant-xyz" || h.Get("anthropic-version") != "2023-06-01" || h.Get("Authorization") != "" {
		t.Errorf("headers %v", h)
	}
	b := w.body(t, 0)
	if js(b["system"]) != `[{"cache_control":{"type":"ephemeral"},"text":"be brief","type":"text"}]` || b["max_tokens"] != float64(anthropicDefaultMaxTokens) || b["stream"] != true {
		t.Errorf("body %v", b)
	}
	msgs := b["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("want user, assistant, user (tool results merged with the next user text); got %s", js(msgs))
	}
	asst := msgs[1].(map[string]any)["content"].([]any)
	if len(asst) != 3 || asst[1].(map[string]any)["type"] != "tool_use" || !reflect.DeepEqual(asst[2].(map[string]any)["input"], map[string]any{}) {
		t.Errorf("assistant blocks %s", js(asst))
	}
	user := msgs[2].(map[string]any)["content"].([]any)
	if len(user) != 3 || user[0].(map[string]any)["tool_use_id"] != "t1" || user[1].(map[string]any)["is_error"] != true || user[2].(map[string]any)["text"] != "and now?" {
		t.Errorf("user blocks %s", js(user))
	}
	if tool := b["tools"].([]any)[0].(map[string]any); tool["input_schema"] == nil {
		t.Errorf("tool %v", tool)
	}
}

// An overloaded_error event right after the 200 is a rate limit, retried
// like a 529 since nothing of the answer streamed yet.
func TestAnthropicOverloadedEventIsRetriedRateLimit(t *testing.T) {
	w := newWire(t, answer{header: sse, file: "errors/anthropic_overloaded_event.sse"})
	p := newFor(t, NameAnthropic, baseFor(NameAnthropic, w), nil)
	_, err := p.Stream(context.Background(), userReq("x"), nil)
	var rl *RateLimitError
	var oe *OverflowError
	if !errors.As(err, &rl) || errors.As(err, &oe) {
		t.Fatalf("want *RateLimitError, got %T %v", err, err)
	}
	if rl.Attempts != 3 || w.requests() != 3 {
		t.Errorf("attempts %d, requests %d", rl.Attempts, w.requests())
	}

	w = newWire(t, answer{header: sse, file: "errors/anthropic_overloaded_event.sse"}, answer{header: sse, file: "anthropic/text_cached.sse"})
	p = newFor(t, NameAnthropic, baseFor(NameAnthropic, w), nil)
	if resp, err := p.Stream(context.Background(), userReq("x"), nil); err != nil || resp.Text != "Hello!" {
		t.Fatalf("after one overloaded event: %+v %v", resp, err)
	}
}

// Once text has streamed, a failure is not retried: the caller already
// showed part of an answer.
func TestErrorAfterTextIsNotRetried(t *testing.T) {
	body := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"c\",\"usage\":{\"input_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n" +
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	w := newWire(t, answer{header: sse, body: body})
	p := newFor(t, NameAnthropic, baseFor(NameAnthropic, w), nil)
	var c collect
	_, err := p.Stream(context.Background(), userReq("x"), c.on)
	var rl *RateLimitError
	if !errors.As(err, &rl) || w.requests() != 1 || c.text != "Hel" {
		t.Fatalf("err %v requests %d text %q", err, w.requests(), c.text)
	}
}
