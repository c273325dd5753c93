package provider

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestAnthropicCompact: server-side compaction is asked with the beta
// header, the compaction edit at the API's minimum trigger and
// pause_after_compaction; the compaction block streamed back is the native
// continuation.
func TestAnthropicCompact(t *testing.T) {
	w := newWire(t, answer{header: sse, file: "anthropic/compaction.sse"})
	p := newFor(t, NameAnthropic, baseFor(NameAnthropic, w), nil).(Compactor)
	got, err := p.Compact(context.Background(), Request{System: "Keep the goal and the failing tests.", Messages: []Message{
		{Role: RoleUser, Text: "fix the build"}, {Role: RoleAssistant, Text: "Looking at pkg/orders."}}})
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"content":"The user is fixing the orders service build. Tests in pkg/orders fail on a nil map.","type":"compaction"}]`
	if string(got.Items) != want || got.Tokens != 1840 {
		t.Errorf("items %s tokens %d\nwant %s 1840", got.Items, got.Tokens, want)
	}
	if h := w.header(0).Get("anthropic-beta"); h != "compact-2026-01-12" {
		t.Errorf("anthropic-beta = %q", h)
	}
	b := w.body(t, 0)
	cm, _ := json.Marshal(b["context_management"])
	if string(cm) != `{"edits":[{"instructions":"Keep the goal and the failing tests.","pause_after_compaction":true,"trigger":{"type":"input_tokens","value":50000},"type":"compact_20260112"}]}` {
		t.Errorf("context_management = %s", cm)
	}
	// The history ends with the assistant: a user turn closes it, so the
	// last assistant message is not taken for a prefill.
	msgs, _ := json.Marshal(b["messages"])
	if !strings.HasSuffix(string(msgs), `{"content":[{"text":"(The session continues after this point.)","type":"text"}],"role":"user"}]`) {
		t.Errorf("messages = %s", msgs)
	}
	if b["system"] != nil {
		t.Errorf("the instructions went to the system prompt: %v", b["system"])
	}
}

func TestAnthropicCompactFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    answer
		want any
	}{
		{"no compaction block", answer{header: sse, file: "anthropic/text_cached.sse"}, new(*StreamError)},
		{"beta refused", answer{status: 400, body: `{"type":"error","error":{"type":"invalid_request_error","message":"context_management: compaction is not supported for model claude-3-haiku"}}`}, new(*BadRequestError)},
		{"overloaded", answer{status: 529, body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}, new(*RateLimitError)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWire(t, tc.a)
			p := newFor(t, NameAnthropic, baseFor(NameAnthropic, w), nil).(Compactor)
			_, err := p.Compact(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "x"}}})
			if err == nil || !errors.As(err, tc.want) {
				t.Fatalf("err %T %v, want %T", err, err, tc.want)
			}
		})
	}
}

// TestAnthropicCompactionBlockSentBack: a continuation in place of the
// capsule's text is a short user turn and the compaction block in an
// assistant turn, with the beta header; without one there is no header.
func TestAnthropicCompactionBlockSentBack(t *testing.T) {
	w := newWire(t, answer{header: sse, file: "anthropic/text_cached.sse"})
	p := newFor(t, NameAnthropic, baseFor(NameAnthropic, w), nil)
	block := json.RawMessage(`[{"type":"compaction","content":"Summary of the orders work."}]`)
	req := Request{Messages: []Message{{Role: RoleUser, Native: block}, {Role: RoleUser, Text: "go on"}}}
	if _, err := p.Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Stream(context.Background(), userReq("plain"), nil); err != nil {
		t.Fatal(err)
	}
	msgs, _ := json.Marshal(w.body(t, 0)["messages"])
	want := `[{"content":[{"text":"The earlier part of this session was compacted.","type":"text"}],"role":"user"},` +
		`{"content":[{"content":"Summary of the orders work.","type":"compaction"}],"role":"assistant"},` +
		`{"content":[{"cache_control":{"type":"ephemeral"},"text":"go on","type":"text"}],"role":"user"}]`
	if string(msgs) != want {
		t.Errorf("messages =\n%s\nwant\n%s", msgs, want)
	}
	if w.header(0).Get("anthropic-beta") != "compact-2026-01-12" || w.header(1).Get("anthropic-beta") != "" {
		t.Errorf("beta headers %q, %q", w.header(0).Get("anthropic-beta"), w.header(1).Get("anthropic-beta"))
	}
}
