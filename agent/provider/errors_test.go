package provider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var jsonCT = map[string]string{"Content-Type": "application/json"}

// Each overflow shape, sent by the provider that speaks it, comes back as
// an *OverflowError with the counts the server stated (R-G9).
func TestOverflowShapesDetected_RG9(t *testing.T) {
	cases := []struct {
		provider, file string
		status         int
		stated, limit  int
	}{
		{NameOpenAI, "errors/openai_context_length_exceeded.json", 400, 130412, 128000},
		{NameOpenAI, "errors/vllm_max_context.json", 400, 32768, 32768},
		{NameOpenAI, "errors/vllm_input_tokens.json", 400, 70211, 65536},
		{NameOpenAI, "errors/llamacpp_exceed_context_size.json", 400, 70123, 65536},
		{NameOpenAI, "errors/llamacpp_old.json", 400, 0, 0},
		{NameOpenAI, "errors/lmstudio_context.json", 400, 70123, 65536},
		{NameAnthropic, "errors/anthropic_prompt_too_long.json", 400, 208310, 200000},
		{NameAnthropic, "errors/anthropic_context_limit.json", 400, 195000, 200000},
		{NameAnthropic, "errors/anthropic_prompt_too_long.json", 413, 208310, 200000},
		{NameOllama, "errors/ollama_context.json", 400, 0, 0},
		{NameOllama, "errors/ollama_context.json", 500, 0, 0},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%s/%d", tc.provider, filepath.Base(tc.file), tc.status), func(t *testing.T) {
			w := newWire(t, answer{status: tc.status, header: jsonCT, file: tc.file})
			p := newFor(t, tc.provider, baseFor(tc.provider, w), nil)
			_, err := p.Stream(context.Background(), userReq("big"), nil)
			var oe *OverflowError
			if !errors.As(err, &oe) {
				t.Fatalf("want *OverflowError, got %T: %v", err, err)
			}
			if oe.StatedTokens != tc.stated || oe.LimitTokens != tc.limit || oe.Provider != tc.provider || oe.Message == "" {
				t.Errorf("got %+v, want stated %d limit %d", oe, tc.stated, tc.limit)
			}
			if w.requests() != 1 {
				t.Errorf("an overflow is never retried here; %d requests", w.requests())
			}
		})
	}
}

// Rate limits and overloads are never taken for overflow, even when their
// wording mentions tokens.
func TestClassifyErrors(t *testing.T) {
	cases := []struct {
		status int
		file   string
		want   string
	}{
		{429, "errors/openai_rate_limit.json", "rate"},
		{529, "errors/anthropic_overloaded.json", "rate"},
		{503, "errors/llamacpp_loading.json", "rate"},
		{400, "errors/bedrock_throttling.json", "rate"},
		{429, "errors/bedrock_throttling.json", "rate"},
		{429, "errors/openai_context_length_exceeded.json", "overflow"}, // the body decides, not the status
		{401, "errors/openai_invalid_key.json", "auth"},
		{403, "errors/openai_invalid_key.json", "auth"},
		{404, "errors/ollama_model_not_found.json", "bad"},
		{400, "errors/ollama_model_not_found.json", "bad"},
		{500, "errors/ollama_model_not_found.json", "server"},
		{400, "errors/openai_context_length_exceeded.json", "overflow"},
	}
	for _, tc := range cases {
		body, err := os.ReadFile(filepath.Join("testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		err = classify("x", tc.status, nil, body)
		var (
			rl  *RateLimitError
			au  *AuthError
			br  *BadRequestError
			se  *ServerError
			oe  *OverflowError
			got string
		)
		switch {
		case errors.As(err, &rl):
			got = "rate"
		case errors.As(err, &au):
			got = "auth"
		case errors.As(err, &br):
			got = "bad"
		case errors.As(err, &se):
			got = "server"
		case errors.As(err, &oe):
			got = "overflow"
		}
		if got != tc.want {
			t.Errorf("%d %s: got %s (%v), want %s", tc.status, tc.file, got, err, tc.want)
		}
	}
}

func TestRateLimitRetriedHonouringRetryAfter(t *testing.T) {
	for _, name := range []string{NameOpenAI, NameAnthropic, NameOllama} {
		t.Run(name, func(t *testing.T) {
			ok := answer{header: sse, file: map[string]string{NameOpenAI: "openai/text.sse", NameAnthropic: "anthropic/text_cached.sse", NameOllama: "ollama/text.ndjson"}[name]}
			w := newWire(t,
				answer{status: 429, header: map[string]string{"Retry-After": "7", "Content-Type": "application/json"}, file: "errors/openai_rate_limit.json"},
				ok)
			var s sleeps
			p := newFor(t, name, baseFor(name, w), &s)
			resp, err := p.Stream(context.Background(), userReq("x"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text == "" || w.requests() != 2 {
				t.Errorf("text %q after %d requests", resp.Text, w.requests())
			}
			if got := s.waits(); len(got) != 1 || got[0] != 7*time.Second {
				t.Errorf("waits %v, want [7s] from Retry-After", got)
			}
		})
	}
}

func TestRateLimitGivesUpAfterThreeTries(t *testing.T) {
	w := newWire(t, answer{status: 529, header: jsonCT, file: "errors/anthropic_overloaded.json"})
	var s sleeps
	p := newFor(t, NameAnthropic, baseFor(NameAnthropic, w), &s)
	_, err := p.Stream(context.Background(), userReq("x"), nil)
	var rl *RateLimitError
	var oe *OverflowError
	if !errors.As(err, &rl) || errors.As(err, &oe) {
		t.Fatalf("529 overloaded: want *RateLimitError, never overflow; got %T %v", err, err)
	}
	if rl.Attempts != 3 || w.requests() != 3 || rl.Status != 529 {
		t.Errorf("attempts %d requests %d status %d", rl.Attempts, w.requests(), rl.Status)
	}
	// No Retry-After: backoff 1s then 2s.
	if got := s.waits(); len(got) != 2 || got[0] != time.Second || got[1] != 2*time.Second {
		t.Errorf("waits %v", got)
	}
}

func TestRetryAfterTooLongIsNotWaited(t *testing.T) {
	w := newWire(t, answer{status: 429, header: map[string]string{"Retry-After": "3600"}, file: "errors/openai_rate_limit.json"})
	var s sleeps
	p := newFor(t, NameOpenAI, baseFor(NameOpenAI, w), &s)
	_, err := p.Stream(context.Background(), userReq("x"), nil)
	var rl *RateLimitError
	if !errors.As(err, &rl) || rl.RetryAfter != time.Hour || w.requests() != 1 || len(s.waits()) != 0 {
		t.Fatalf("err %v, requests %d, waits %v", err, w.requests(), s.waits())
	}
}

func TestAuthErrorNotRetried(t *testing.T) {
	w := newWire(t, answer{status: 401, header: jsonCT, file: "errors/openai_invalid_key.json"})
	p := newFor(t, NameOpenAI, baseFor(NameOpenAI, w), nil)
	_, err := p.Stream(context.Background(), userReq("x"), nil)
	var ae *AuthError
	if !errors.As(err, &ae) || ae.Status != 401 || !strings.Contains(err.Error(), "Incorrect API key") || w.requests() != 1 {
		t.Fatalf("got %T %v after %d requests", err, err, w.requests())
	}
}

// A stream cut before its end marker is a failed inference, and nothing
// half-parsed comes back as a tool call — not in the Response, not as an
// event.
func TestStreamCutIsStreamErrorWithoutToolCall(t *testing.T) {
	cases := []struct{ provider, file string }{
		{NameOpenAI, "openai/cut_mid_tool_call.sse"},
		{NameOpenAI, "openai/cut_at_event_boundary.sse"},
		{NameAnthropic, "anthropic/cut_mid_tool_use.sse"},
		{NameOllama, "ollama/cut.ndjson"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			w := newWire(t, answer{header: sse, file: tc.file})
			p := newFor(t, tc.provider, baseFor(tc.provider, w), nil)
			var c collect
			resp, err := p.Stream(context.Background(), userReq("x"), c.on)
			var se *StreamError
			if !errors.As(err, &se) {
				t.Fatalf("want *StreamError, got %T %v", err, err)
			}
			if len(resp.ToolCalls) != 0 || len(c.calls) != 0 || resp.Text != "" {
				t.Errorf("a cut stream returned %+v, events %v", resp, c.calls)
			}
		})
	}
}

// Cancelling the turn aborts the request promptly, whether the server is
// still thinking or streaming slowly (the turn's ctx reaches the provider).
func TestCancelAbortsSlowServerPromptly(t *testing.T) {
	for _, midStream := range []bool{false, true} {
		t.Run(fmt.Sprintf("midStream=%v", midStream), func(t *testing.T) {
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if midStream {
					w.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"thinking\"}}]}\n\n")
					w.(http.Flusher).Flush()
				}
				select {
				case <-r.Context().Done():
				case <-release:
				}
			}))
			t.Cleanup(srv.Close)
			t.Cleanup(func() { close(release) })
			p, _ := New(Config{Provider: NameOpenAI, BaseURL: srv.URL + "/v1"})
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			start := time.Now()
			_, err := p.Stream(ctx, userReq("x"), nil)
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("cancel took %v", took)
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("want context.Canceled, got %v", err)
			}
		})
	}
}

func TestConnectionRefusedNamesEndpoint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	for _, name := range []string{NameOpenAI, NameAnthropic, NameOllama} {
		base := "http://" + addr
		p, _ := New(Config{Provider: name, BaseURL: base})
		_, err := p.Stream(context.Background(), userReq("x"), nil)
		var te *TransportError
		if !errors.As(err, &te) {
			t.Fatalf("%s: want *TransportError, got %T %v", name, err, err)
		}
		if want := "cannot reach model server at " + base + ": connection refused"; err.Error() != want {
			t.Errorf("%s: %q, want %q", name, err, want)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Provider: "gemini"}, `unknown provider "gemini"`},
		{Config{}, "no provider named"},
		{Config{Provider: "openai", BaseURL: "127.0.0.1:8080"}, "not an http:// or https:// URL"},
		{Config{Provider: "ollama", ContextWindow: -1}, "contextWindow is negative"},
	}
	for _, tc := range cases {
		_, err := New(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want %q", tc.cfg, err, tc.want)
		}
	}
	for _, name := range []string{"openai", "Anthropic", "ollama"} {
		p, err := New(Config{Provider: name})
		if err != nil || p.Name() != strings.ToLower(name) {
			t.Errorf("%s: %v %v", name, p, err)
		}
	}
}
