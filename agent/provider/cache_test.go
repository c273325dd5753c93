package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// breakpoints lists where an Anthropic request body carries cache_control,
// as "system", "tools[i]" or "messages[i].content[j]:<text or type>".
func breakpoints(t *testing.T, body map[string]any) []string {
	t.Helper()
	var out []string
	mark := func(v any) (map[string]any, bool) {
		m, ok := v.(map[string]any)
		if !ok || m["cache_control"] == nil {
			return nil, false
		}
		if cc, _ := m["cache_control"].(map[string]any); cc["type"] != "ephemeral" {
			t.Errorf("cache_control %v is not ephemeral", m["cache_control"])
		}
		return m, true
	}
	if sys, ok := body["system"].([]any); ok {
		for _, b := range sys {
			if _, ok := mark(b); ok {
				out = append(out, "system")
			}
		}
	}
	tools, _ := body["tools"].([]any)
	for i, tl := range tools {
		if _, ok := mark(tl); ok {
			out = append(out, fmt.Sprintf("tools[%d]", i))
		}
	}
	msgs, _ := body["messages"].([]any)
	for i, m := range msgs {
		content, _ := m.(map[string]any)["content"].([]any)
		for j, b := range content {
			if bm, ok := mark(b); ok {
				what := bm["type"].(string)
				if s, ok := bm["text"].(string); ok {
					what = s
				}
				out = append(out, fmt.Sprintf("messages[%d].content[%d]:%s", i, j, what))
			}
		}
	}
	return out
}

// TestAnthropicCacheBreakpoints: an Anthropic request marks the end of the
// tools and system prompt, the capsule and the newest block as cache
// breakpoints — never more than the API's four, never on a block sent
// verbatim, and the capsule only once when it is also the newest block.
func TestAnthropicCacheBreakpoints(t *testing.T) {
	capsule := Message{Role: RoleUser, Text: "CAPSULE", StablePrefix: true}
	compaction := Message{Role: RoleUser, Native: json.RawMessage(`[{"type":"compaction","content":"summary"}]`), StablePrefix: true}
	tools := []Tool{{Name: "a"}, {Name: "b"}}
	tests := []struct {
		name string
		req  Request
		want []string
	}{
		{"system, capsule and a turn", Request{System: "sys", Tools: tools, Messages: []Message{capsule, {Role: RoleUser, Text: "q"},
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "a"}}}, {Role: RoleTool, ToolCallID: "c1", Text: "result"}}},
			[]string{"system", "messages[0].content[0]:CAPSULE", "messages[2].content[0]:tool_result"}},
		{"no system: the last tool", Request{Tools: tools, Messages: []Message{{Role: RoleUser, Text: "q"}}},
			[]string{"tools[1]", "messages[0].content[0]:q"}},
		{"no capsule", Request{System: "sys", Messages: []Message{{Role: RoleUser, Text: "q"}, {Role: RoleAssistant, Text: "a"}, {Role: RoleUser, Text: "q2"}}},
			[]string{"system", "messages[2].content[0]:q2"}},
		{"the capsule is the newest message", Request{System: "sys", Messages: []Message{capsule}},
			[]string{"system", "messages[0].content[0]:CAPSULE"}},
		{"capsule merged with the next user text", Request{System: "sys", Messages: []Message{capsule, {Role: RoleUser, Text: "q"}}},
			[]string{"system", "messages[0].content[0]:CAPSULE", "messages[0].content[1]:q"}},
		{"a compaction block is never marked", Request{System: "sys", Messages: []Message{compaction, {Role: RoleUser, Text: "go on"}}},
			[]string{"system", "messages[0].content[0]:" + anthropicCompactedPreamble, "messages[2].content[0]:go on"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWire(t, answer{header: sse, file: "anthropic/text_cached.sse"})
			p := newFor(t, NameAnthropic, baseFor(NameAnthropic, w), nil)
			if _, err := p.Stream(context.Background(), tt.req, nil); err != nil {
				t.Fatal(err)
			}
			got := breakpoints(t, w.body(t, 0))
			if strings.Join(got, " | ") != strings.Join(tt.want, " | ") {
				t.Errorf("breakpoints\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if len(got) > AnthropicMaxBreakpoints {
				t.Errorf("%d breakpoints, the API takes at most %d", len(got), AnthropicMaxBreakpoints)
			}
		})
	}
}

// toHost sends every request to the test server, whatever the URL's host:
// a provider configured for api.openai.com talks to a local fake.
type toHost struct{ target *url.URL }

func (h toHost) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host = h.target.Scheme, h.target.Host
	return http.DefaultTransport.RoundTrip(r)
}

// TestPromptCacheKey: OpenAI's API gets the session's prompt_cache_key
// (Chat Completions and Responses), a digest when the key is too long;
// other OpenAI-compatible servers get no unknown field.
func TestPromptCacheKey(t *testing.T) {
	long := "soba-" + strings.Repeat("x", 80)
	tests := []struct {
		name, provider, base, key, file string
		want                            string
	}{
		{"chat, api.openai.com", NameOpenAI, "https://api.openai.com/v1", "soba-s_1", "openai/text.sse", "soba-s_1"},
		{"responses, api.openai.com", NameOpenAIResponses, "https://api.openai.com/v1", "soba-s_1", "responses/text.sse", "soba-s_1"},
		{"chat, a local server", NameOpenAI, "", "soba-s_1", "openai/text.sse", ""},
		{"responses, a local server", NameOpenAIResponses, "", "soba-s_1", "responses/text.sse", ""},
		{"chat, no key", NameOpenAI, "https://api.openai.com/v1", "", "openai/text.sse", ""},
		{"a long key", NameOpenAI, "https://api.openai.com/v1", long, "openai/text.sse", "digest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWire(t, answer{header: sse, file: tt.file})
			target, _ := url.Parse(w.srv.URL)
			base := tt.base
			if base == "" {
				base = w.srv.URL + "/v1"
			}
			p, err := New(Config{Provider: tt.provider, BaseURL: base, Model: "m", HTTPClient: &http.Client{Transport: toHost{target}}})
			if err != nil {
				t.Fatal(err)
			}
			req := userReq("hi")
			req.CacheKey = tt.key
			if _, err := p.Stream(context.Background(), req, nil); err != nil {
				t.Fatal(err)
			}
			got, has := w.body(t, 0)["prompt_cache_key"].(string)
			switch tt.want {
			case "":
				if has {
					t.Errorf("prompt_cache_key %q sent", got)
				}
			case "digest":
				if !strings.HasPrefix(got, "soba-") || len(got) > maxCacheKey || got == tt.key {
					t.Errorf("prompt_cache_key %q, want a digest of at most %d characters", got, maxCacheKey)
				}
			default:
				if got != tt.want {
					t.Errorf("prompt_cache_key %q, want %q", got, tt.want)
				}
			}
		})
	}
}
