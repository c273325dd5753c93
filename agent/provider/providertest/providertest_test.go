package providertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/soba-agent/soba-lsp/agent/provider"
	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
)

func newClient(t *testing.T, name, base string) provider.Provider {
	t.Helper()
	p, err := provider.New(provider.Config{Provider: name, BaseURL: base, Model: "fake", MaxOutputTokens: 100,
		Retry: provider.Retry{Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() }}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The fake speaks both wire formats well enough for the real clients:
// text, parallel tool calls split in fragments, usage, and error answers.
func TestScriptRoundTrip(t *testing.T) {
	for _, format := range []string{providertest.FormatOpenAI, providertest.FormatAnthropic} {
		t.Run(format, func(t *testing.T) {
			two := providertest.Reply{Text: "reading both", ToolCalls: []provider.ToolCall{
				{ID: "c1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a/very/long/path/main.go"}`)},
				{ID: "c2", Name: "grep", Arguments: json.RawMessage(`{"pattern":"ünïcode"}`)},
			}, Usage: &provider.Usage{InputTokens: 5000, OutputTokens: 20, CachedTokens: 4000}}
			overflow := providertest.OverflowOpenAI(70000, 65536)
			if format == providertest.FormatAnthropic {
				overflow = providertest.OverflowAnthropic(70000, 65536)
			}
			var s *providertest.Server
			if format == providertest.FormatOpenAI {
				s = providertest.NewOpenAI(t, two, providertest.RateLimited(2), providertest.Text("done"), overflow)
			} else {
				s = providertest.NewAnthropic(t, two, providertest.RateLimited(2), providertest.Text("done"), overflow)
			}
			p := newClient(t, format, s.URL)
			resp, err := p.Stream(context.Background(), provider.Request{System: "sys", Messages: []provider.Message{{Role: "user", Text: "go"}},
				Tools: []provider.Tool{{Name: "read_file"}, {Name: "grep"}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != "reading both" || !reflect.DeepEqual(resp.ToolCalls, two.ToolCalls) || !reflect.DeepEqual(resp.Usage, two.Usage) {
				t.Errorf("resp %+v", resp)
			}
			// The next request is rate limited once, retried, then answered.
			msgs := []provider.Message{{Role: "user", Text: "go"}, {Role: "assistant", Text: "reading both", ToolCalls: two.ToolCalls},
				{Role: "tool", ToolCallID: "c1", ToolName: "read_file", Text: "package main"}, {Role: "tool", ToolCallID: "c2", ToolName: "grep", Text: "no match", IsError: true}}
			resp, err = p.Stream(context.Background(), provider.Request{Messages: msgs}, nil)
			if err != nil || resp.Text != "done" {
				t.Fatalf("after 429: %+v %v", resp, err)
			}
			_, err = p.Stream(context.Background(), provider.Request{Messages: msgs}, nil)
			var oe *provider.OverflowError
			if !errors.As(err, &oe) || oe.StatedTokens != 70000 || oe.LimitTokens != 65536 {
				t.Fatalf("overflow: %v", err)
			}
			got := s.Requests()
			if len(got) != 4 {
				t.Fatalf("%d requests recorded", len(got))
			}
			if got[0].System != "sys" || !reflect.DeepEqual(got[0].Tools, []string{"read_file", "grep"}) || got[0].MaxTokens != 100 || !got[0].Stream {
				t.Errorf("first request %+v", got[0])
			}
			// The decoded messages are the ones sent, whatever the format.
			dec := got[2].Messages
			if len(dec) != 4 || dec[1].ToolCalls[1].ID != "c2" || dec[3].ToolCallID != "c2" || !dec[3].IsError && format == providertest.FormatAnthropic {
				t.Errorf("decoded %s", mustJS(dec))
			}
		})
	}
}

func TestCutReplyIsStreamError(t *testing.T) {
	s := providertest.NewOpenAI(t, providertest.Reply{ToolCalls: []provider.ToolCall{{ID: "c", Name: "bash", Arguments: json.RawMessage(`{"command":"make"}`)}}, Cut: true})
	_, err := newClient(t, "openai", s.URL).Stream(context.Background(), provider.Request{Messages: []provider.Message{{Role: "user", Text: "x"}}}, nil)
	var se *provider.StreamError
	if !errors.As(err, &se) {
		t.Fatalf("got %v", err)
	}
}

func TestDelayEndsWithTheClient(t *testing.T) {
	s := providertest.NewAnthropic(t, providertest.Reply{Text: "late", Delay: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := newClient(t, "anthropic", s.URL).Stream(ctx, provider.Request{Messages: []provider.Message{{Role: "user", Text: "x"}}}, nil)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
}

func TestSpentScriptAnswers500AndCounts(t *testing.T) {
	s, err := providertest.Serve("127.0.0.1:0", providertest.FormatOpenAI, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = newClient(t, "openai", s.URL).Stream(context.Background(), provider.Request{Messages: []provider.Message{{Role: "user", Text: "x"}}}, nil)
	var se *provider.ServerError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "script spent") || s.Beyond() != 1 {
		t.Fatalf("err %v beyond %d", err, s.Beyond())
	}
}

func TestServeRefusesNonLoopback(t *testing.T) {
	if _, err := providertest.Serve("0.0.0.0:0", providertest.FormatOpenAI, nil); err == nil || !strings.Contains(err.Error(), "not a loopback") {
		t.Fatalf("err %v", err)
	}
}

func TestLoadScript(t *testing.T) {
	src := `{"format":"openai","replies":[
	  {"text":"hello","delay":"20ms","chunkDelay":"1ms","usage":{"inputTokens":10,"outputTokens":2}},
	  {"toolCalls":[{"id":"c1","name":"read_file","arguments":{"path":"go.mod"}}]},
	  {"status":429,"header":{"Retry-After":"1"},"body":"{}"}]}`
	sc, err := providertest.LoadScript(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Format != "openai" || len(sc.Replies) != 3 || sc.Replies[0].Delay != 20*time.Millisecond || string(sc.Replies[1].ToolCalls[0].Arguments) != `{"path":"go.mod"}` || sc.Replies[2].Status != 429 {
		t.Fatalf("script %+v", sc)
	}
	for _, bad := range []string{`{"replies":[{"delay":"soon"}]}`, `{"format":"gemini","replies":[]}`, `{"replies":[{"txt":"typo"}]}`, `not json`} {
		if _, err := providertest.LoadScript(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func mustJS(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestResponsesFakeSpeaksTheWire: the Responses fake streams what the real
// client reads (text, encrypted reasoning, function calls, usage) and
// answers /responses/compact from its own script with the user messages
// kept and one compaction item.
func TestResponsesFakeSpeaksTheWire(t *testing.T) {
	s := providertest.NewResponses(t, providertest.Reply{Text: "Hello there", Reasoning: "enc-r1", ToolCalls: []provider.ToolCall{{ID: "call_1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.go"}`)}},
		Usage: &provider.Usage{InputTokens: 900, OutputTokens: 20, CachedTokens: 512}})
	s.AddCompact(providertest.Reply{Compaction: "enc-c1"})
	p, err := provider.New(provider.Config{Provider: provider.NameOpenAIResponses, BaseURL: s.URL, Model: "gpt-test"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Stream(context.Background(), provider.Request{System: "sys", Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Hello there" || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].ID != "call_1" || resp.StopReason != provider.StopToolCalls {
		t.Errorf("resp = %+v", resp)
	}
	if want := (&provider.Usage{InputTokens: 900, OutputTokens: 20, CachedTokens: 512}); *resp.Usage != *want {
		t.Errorf("usage %+v", resp.Usage)
	}
	if !strings.Contains(string(resp.Native), `"encrypted_content":"enc-r1"`) {
		t.Errorf("native = %s", resp.Native)
	}
	c, err := p.(provider.Compactor).Compact(context.Background(), provider.Request{Messages: []provider.Message{
		{Role: provider.RoleUser, Text: "hi"}, {Role: provider.RoleAssistant, Text: "Hello there", Native: resp.Native}}})
	if err != nil {
		t.Fatal(err)
	}
	var items []map[string]any
	if err := json.Unmarshal(c.Items, &items); err != nil || len(items) != 2 {
		t.Fatalf("items = %s (%v)", c.Items, err)
	}
	if items[0]["role"] != "user" || items[1]["type"] != "compaction" || items[1]["encrypted_content"] != "enc-c1" || items[1]["id"] != nil {
		t.Errorf("items = %s", c.Items)
	}
	if c.Tokens != len("enc-c1")/4 {
		t.Errorf("tokens = %d", c.Tokens)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[0].Path != "/v1/responses" || reqs[1].Path != "/v1/responses/compact" {
		t.Fatalf("requests %+v", reqs)
	}
	if reqs[0].Store == nil || *reqs[0].Store || len(reqs[0].Include) != 1 {
		t.Errorf("store %v include %v", reqs[0].Store, reqs[0].Include)
	}
	if len(reqs[1].NativeItems) != 1 || !strings.Contains(string(reqs[1].NativeItems[0]), "enc-r1") {
		t.Errorf("the compaction request did not carry the reasoning: %s", reqs[1].NativeItems)
	}
}
