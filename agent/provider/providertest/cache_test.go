package providertest_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/agent/provider"
	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
)

// TestAnthropicFakeBreakpoints: the Anthropic fake records where a request
// put cache_control and, like the API, refuses a request with more than
// four markers or a marker of another type, answering nothing from its
// script.
func TestAnthropicFakeBreakpoints(t *testing.T) {
	block := func(i int, marked bool) string {
		cc := ""
		if marked {
			cc = `,"cache_control":{"type":"ephemeral"}`
		}
		return fmt.Sprintf(`{"type":"text","text":"part %d"%s}`, i, cc)
	}
	body := func(marks int, typ string) string {
		var blocks []string
		for i := range 6 {
			blocks = append(blocks, block(i, i < marks))
		}
		b := `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":[` + strings.Join(blocks, ",") + `]}]}`
		if typ != "" {
			b = strings.Replace(b, `"type":"ephemeral"`, `"type":"`+typ+`"`, 1)
		}
		return b
	}
	tests := []struct {
		name       string
		body       string
		wantStatus int
		wantMsg    string
		wantMarks  int
	}{
		{"four markers", body(4, ""), 200, "", 4},
		{"five markers", body(5, ""), 400, "A maximum of 4 blocks with cache_control may be provided. Found 5.", 5},
		{"a marker of another type", body(1, "persistent"), 400, "cache_control: unknown type", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := providertest.NewAnthropic(t, providertest.Text("ok"))
			resp, err := http.Post(s.URL+"/v1/messages", "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus || !bytes.Contains(got, []byte(tt.wantMsg)) {
				t.Fatalf("status %d %s, want %d %q", resp.StatusCode, got, tt.wantStatus, tt.wantMsg)
			}
			reqs := s.Requests()
			if len(reqs) != 1 || len(reqs[0].CacheBreakpoints) != tt.wantMarks {
				t.Fatalf("recorded %+v", reqs)
			}
			if tt.wantStatus == 400 {
				// The script was not spent: the next valid request gets it.
				p := newClient(t, provider.NameAnthropic, s.URL)
				if r, err := p.Stream(context.Background(), provider.Request{Messages: []provider.Message{{Role: "user", Text: "x"}}}, nil); err != nil || r.Text != "ok" {
					t.Fatalf("after the refusal: %+v %v", r, err)
				}
			}
		})
	}
}

// TestFakePromptCache: the fakes report cached tokens as the servers do —
// OpenAI for a repeated prefix of at least 1024 tokens in steps of 128,
// Ollama for what it shares with the request before it,
// Anthropic for a repeated prefix that ends at a breakpoint (looking back
// from the new request's breakpoints), nothing for a changed start.
func TestFakePromptCache(t *testing.T) {
	long := strings.Repeat("the same long instructions ", 400) // ~2,700 tokens
	first := []provider.Message{{Role: "user", Text: "first question"}}
	second := append(append([]provider.Message(nil), first...), provider.Message{Role: "assistant", Text: "answer"}, provider.Message{Role: "user", Text: "second question"})
	tests := []struct {
		format     string
		system2    string // the second request's system prompt
		wantCached bool
	}{
		{providertest.FormatOpenAI, long, true},
		{providertest.FormatOpenAI, "changed " + long, false},
		{providertest.FormatResponses, long, true},
		{providertest.FormatAnthropic, long, true},
		{providertest.FormatAnthropic, "changed " + long, false},
		{providertest.FormatOllama, long, true},
		{providertest.FormatOllama, "changed " + long, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s, cached %v", tt.format, tt.wantCached), func(t *testing.T) {
			var s *providertest.Server
			switch tt.format {
			case providertest.FormatOpenAI:
				s = providertest.NewOpenAI(t, providertest.Text("answer"), providertest.Text("again"))
			case providertest.FormatResponses:
				s = providertest.NewResponses(t, providertest.Text("answer"), providertest.Text("again"))
			case providertest.FormatOllama:
				s = providertest.NewOllama(t, providertest.Text("answer"), providertest.Text("again"))
			default:
				s = providertest.NewAnthropic(t, providertest.Text("answer"), providertest.Text("again"))
			}
			p := newClient(t, tt.format, s.URL)
			r1, err := p.Stream(context.Background(), provider.Request{System: long, Messages: first}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r1.Usage == nil || r1.Usage.CachedTokens != 0 {
				t.Fatalf("first request usage %+v: nothing can be cached yet", r1.Usage)
			}
			r2, err := p.Stream(context.Background(), provider.Request{System: tt.system2, Messages: second}, nil)
			if err != nil {
				t.Fatal(err)
			}
			cached := r2.Usage.CachedTokens
			if (cached > 0) != tt.wantCached || cached > r2.Usage.InputTokens {
				t.Fatalf("second request usage %+v, want cached %v", r2.Usage, tt.wantCached)
			}
			if tt.wantCached && cached < len(long)/4-64 {
				t.Fatalf("cached %d tokens, want at least the system prompt's ~%d", cached, len(long)/4)
			}
			if (tt.format == providertest.FormatOpenAI || tt.format == providertest.FormatResponses) && cached%128 != 0 {
				t.Fatalf("cached %d tokens, not a multiple of 128", cached)
			}
		})
	}
}
