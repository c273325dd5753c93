package provider

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

var ndjson = map[string]string{"Content-Type": "application/x-ndjson"}

func TestOllamaStreamedText(t *testing.T) {
	w := newWire(t, answer{header: ndjson, file: "ollama/text.ndjson"})
	p := newFor(t, NameOllama, baseFor(NameOllama, w), nil)
	var c collect
	resp, err := p.Stream(context.Background(), userReq("sky?"), c.on)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "The sky is blue." || c.text != resp.Text || resp.StopReason != StopEnd {
		t.Errorf("resp %+v", resp)
	}
	want := &Usage{InputTokens: 2600, OutputTokens: 282, CachedTokens: 2400}
	if !reflect.DeepEqual(resp.Usage, want) {
		t.Errorf("usage %+v", resp.Usage)
	}
	if w.paths[0] != "/api/chat" {
		t.Errorf("path %q", w.paths[0])
	}
}

// Ollama otherwise loads the model with its default window and silently
// drops the front of a longer prompt.
func TestOllamaSendsNumCtx(t *testing.T) {
	w := newWire(t, answer{header: ndjson, file: "ollama/text.ndjson"})
	p := newFor(t, NameOllama, baseFor(NameOllama, w), nil)
	if _, err := p.Stream(context.Background(), userReq("a"), nil); err != nil {
		t.Fatal(err)
	}
	req := userReq("b")
	req.ContextWindow = 131072
	if _, err := p.Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{65000, 131072} {
		opts, _ := w.body(t, i)["options"].(map[string]any)
		if opts["num_ctx"] != want || opts["num_predict"] != float64(8000) {
			t.Errorf("request %d options = %v, want num_ctx %v", i, opts, want)
		}
	}
	if b := w.body(t, 0); b["stream"] != true || b["model"] != "test-model" {
		t.Errorf("body %v", b)
	}
}

func TestOllamaToolCalls(t *testing.T) {
	w := newWire(t, answer{header: ndjson, file: "ollama/tool_calls.ndjson"})
	p := newFor(t, NameOllama, baseFor(NameOllama, w), nil)
	req := Request{Messages: []Message{
		{Role: RoleUser, Text: "go"},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "call_0", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}},
		{Role: RoleTool, ToolCallID: "call_0", ToolName: "get_weather", Text: "sunny"},
	}, Tools: []Tool{{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object"}`)}}}
	var c collect
	resp, err := p.Stream(context.Background(), req, c.on)
	if err != nil {
		t.Fatal(err)
	}
	want := []ToolCall{
		{ID: "call_0", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Tokyo"}`)},
		{ID: "call_x7", Name: "read_file", Arguments: json.RawMessage(`{"path":"go.mod"}`)},
	}
	if !reflect.DeepEqual(resp.ToolCalls, want) || !reflect.DeepEqual(c.calls, want) || resp.StopReason != StopToolCalls {
		t.Errorf("calls %s stop %q", js(resp.ToolCalls), resp.StopReason)
	}
	msgs := w.body(t, 0)["messages"].([]any)
	args := msgs[1].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)["function"].(map[string]any)["arguments"]
	if !reflect.DeepEqual(args, map[string]any{"city": "Paris"}) {
		t.Errorf("Ollama wants arguments as an object, sent %v", args)
	}
	if tm := msgs[2].(map[string]any); tm["role"] != "tool" || tm["tool_name"] != "get_weather" {
		t.Errorf("tool message %v", tm)
	}
}

// A server that reports a prompt far below what was sent dropped part of
// it: that is an overflow (R-G9), never a success.
func TestSilentTruncationIsOverflow_RG9(t *testing.T) {
	cases := []struct {
		name     string
		expected int
		overflow bool
	}{
		{"far below half and 1000 short", 9000, true},
		{"reported above half of the estimate", 8000, false},
		{"close to the estimate", 4500, false},
		{"no estimate", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWire(t, answer{header: ndjson, file: "ollama/truncated_prompt.ndjson"})
			p := newFor(t, NameOllama, baseFor(NameOllama, w), nil)
			req := userReq("long")
			req.ExpectedPromptTokens = tc.expected
			var c collect
			resp, err := p.Stream(context.Background(), req, c.on)
			var oe *OverflowError
			if got := errors.As(err, &oe); got != tc.overflow {
				t.Fatalf("overflow = %v (err %v), want %v", got, err, tc.overflow)
			}
			if !tc.overflow {
				return
			}
			if !oe.SilentTruncation || !strings.Contains(oe.Error(), "silent truncation") || oe.StatedTokens != 9000 {
				t.Errorf("error %+v: %v", oe, oe)
			}
			if resp.Text != "" || resp.Usage != nil {
				t.Errorf("a truncated answer must not be returned: %+v", resp)
			}
		})
	}
	// Below half but under 1000 tokens short is an estimate's error, not a cut.
	if err := checkTruncation("x", Request{ExpectedPromptTokens: 1800}, &Usage{InputTokens: 850}); err != nil {
		t.Errorf("small prompt: %v", err)
	}
	// The same check guards the other wire formats.
	w := newWire(t, answer{header: sse, file: "openai/text.sse"})
	p := newFor(t, NameOpenAI, baseFor(NameOpenAI, w), nil)
	req := userReq("x")
	req.ExpectedPromptTokens = 50000
	var oe *OverflowError
	if _, err := p.Stream(context.Background(), req, nil); !errors.As(err, &oe) {
		t.Errorf("openai: want silent-truncation overflow, got %v", err)
	}
}
