package provider

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// sidecar is the provenance and expected meaning of one collected error
// body or stream in testdata/errors/ (NAME.source.json beside NAME.json,
// NAME.sse or NAME.ndjson).
type sidecar struct {
	Server   string `json:"server"`
	Provider string `json:"provider"` // the wire format that reads it
	Status   int    `json:"status"`   // 0: a stream answered with 200
	Kind     string `json:"kind"`
	File     string `json:"file"`
	Source   struct {
		Repository string `json:"repository"`
		Path       string `json:"path"`
		Commit     string `json:"commit"`
		URL        string `json:"url"`
	} `json:"source"`
	Note   string `json:"note"`
	Stated *int   `json:"stated"`
	Limit  *int   `json:"limit"`
	Output *int   `json:"output"`
}

func loadCorpus(t *testing.T) map[string]sidecar {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "errors", "*.source.json"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]sidecar{}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var sc sidecar
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&sc); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out[strings.TrimSuffix(filepath.Base(p), ".source.json")] = sc
	}
	return out
}

// Every body and stream collected from the servers' sources and their
// users' reports is classified as the kind its sidecar names, through the
// real client reading the real wire (HTTP status and body, or the stream
// after a 200); overflows carry the figures the server stated (R-G9).
func TestErrorCorpusClassified_RG9(t *testing.T) {
	corpus := loadCorpus(t)
	servers := map[string]int{}
	names := make([]string, 0, len(corpus))
	for name := range corpus {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		sc := corpus[name]
		servers[sc.Server]++
		t.Run(name, func(t *testing.T) {
			if sc.Source.URL == "" && (sc.Source.Repository == "" || sc.Source.Path == "") {
				t.Fatalf("sidecar names no source: %+v", sc.Source)
			}
			if sc.File == "" || strings.TrimSuffix(sc.File, filepath.Ext(sc.File)) != name {
				t.Fatalf("sidecar file %q does not belong to %s", sc.File, name)
			}
			if _, err := os.Stat(filepath.Join("testdata", "errors", sc.File)); err != nil {
				t.Fatal(err)
			}
			a := answer{status: sc.Status, file: "errors/" + sc.File, header: jsonCT}
			switch filepath.Ext(sc.File) {
			case ".sse":
				a.header = sse
			case ".ndjson":
				a.header = map[string]string{"Content-Type": "application/x-ndjson"}
			}
			w := newWire(t, a)
			base := w.srv.URL
			if sc.Provider == NameOpenAI || sc.Provider == NameOpenAIResponses {
				base += "/v1"
			}
			p := newFor(t, sc.Provider, base, nil)
			_, err := p.Stream(context.Background(), userReq("x"), nil)
			if err == nil {
				t.Fatal("no error")
			}
			if got := Kind(err); string(got) != sc.Kind {
				t.Fatalf("kind %s, want %s: %v", got, sc.Kind, err)
			}
			var of *OverflowError
			if errors.As(err, &of) {
				check := func(what string, want *int, got int) {
					if want != nil && *want != got {
						t.Errorf("%s %d, want %d (%v)", what, got, *want, err)
					}
				}
				check("stated", sc.Stated, of.StatedTokens)
				check("limit", sc.Limit, of.LimitTokens)
				check("output", sc.Output, of.OutputTokens)
			}
			// Only rate limits and overloads are retried; an overflow,
			// a quota or anything else is sent once.
			// A wait the server asks for that is longer than MaxDelay is
			// not made: the error comes back at once.
			want := 1
			var rl *RateLimitError
			if errors.As(err, &rl) && rl.RetryAfter <= DefaultRetry.MaxDelay {
				want = DefaultRetry.MaxAttempts
			}
			if w.requests() != want {
				t.Errorf("%d requests, want %d", w.requests(), want)
			}
		})
	}
	if len(corpus) < 60 || len(servers) < 12 {
		t.Errorf("corpus has %d bodies from %d servers, want at least 60 from 12: %v", len(corpus), len(servers), servers)
	}
}

// The body's wording decides, never the status alone: the same status
// carries different meanings at different servers, and a bare status
// without a body falls back to its usual meaning only for 429, 503, 529.
func TestStatusAloneDecidesNothing(t *testing.T) {
	cases := []struct {
		status int
		body   string
		want   ErrorKind
	}{
		{413, `{"error":{"message":"Request too large for model x on tokens per minute (TPM): Limit 6000, Requested 9000","type":"tokens","code":"rate_limit_exceeded"}}`, KindRateLimit},
		{413, `{"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}`, KindOverflowPrompt},
		{429, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}`, KindQuota},
		{429, `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","code":"context_length_exceeded"}}`, KindOverflowPrompt},
		{500, `{"error":{"code":500,"message":"the request exceeds the available context size","type":"exceed_context_size_error"}}`, KindOverflowPrompt},
		{502, `{"error":{"message":"Upstream error from X: This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","code":502}}`, KindOverflowPrompt},
		{400, `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API."}}`, KindQuota},
		{400, `{"error":{"message":"Invalid 'messages[1].content': string too long.","type":"invalid_request_error"}}`, KindOther},
		{413, ``, KindOther},
		{429, ``, KindRateLimit},
		{503, `<html>Service Unavailable</html>`, KindOverload},
		{529, ``, KindOverload},
	}
	for _, tc := range cases {
		if got := Kind(classify("x", tc.status, nil, []byte(tc.body))); got != tc.want {
			t.Errorf("%d %s: %s, want %s", tc.status, tc.body, got, tc.want)
		}
	}
}

// The output budget that fits is the stated window less the stated prompt,
// and only when the server's figures show the prompt fits.
func TestOverflowFromOutputFits_RG9(t *testing.T) {
	cases := []struct {
		file string
		fits int
	}{
		{"errors/vllm_max_tokens_too_large.json", 4096 - 2778},
		{"errors/vllm_you_passed_output.json", 32000 - 27905},
		{"errors/anthropic_context_limit.json", 5000},
		{"errors/tgi_max_total_output.json", 2048 - 1244},
		{"errors/openrouter_502_upstream.json", 16000 - 13069},
		{"errors/vllm_you_passed_prompt.json", 0},
		{"errors/deepseek_context_prompt.json", 0},
	}
	for _, tc := range cases {
		body, err := os.ReadFile(filepath.Join("testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		var of *OverflowError
		if err := classify("x", 400, nil, body); !errors.As(err, &of) {
			t.Fatalf("%s: %T %v", tc.file, err, err)
		}
		if of.FitsOutput() != tc.fits {
			t.Errorf("%s: fits %d, want %d", tc.file, of.FitsOutput(), tc.fits)
		}
	}
}

// Hostile bodies: deep nesting, arrays of arrays, huge numbers, non-JSON.
// The classifier answers, bounded, and never panics.
func TestErrorBodyHostile(t *testing.T) {
	deep := strings.Repeat(`{"error":`, 10000) + `"x"` + strings.Repeat(`}`, 10000)
	cases := []string{
		deep,
		strings.Repeat("[", 5000) + strings.Repeat("]", 5000),
		`[]`, `[1]`, `{"error":[]}`, `{"error":null}`, `{"error":{"message":{"nested":true}}}`,
		`{"error":"maximum context length is 99999999999999999999999 tokens"}`,
		"\x00\xff not json",
	}
	for _, c := range cases {
		err := classify("x", 400, nil, []byte(c))
		if err == nil || err.Error() == "" {
			t.Errorf("%.40q: %v", c, err)
		}
	}
}

// A wait asked for in the body counts when no header asks for one.
func TestWaitAskedInBody(t *testing.T) {
	cases := []struct {
		header map[string]string
		body   string
		want   time.Duration
	}{
		{nil, `{"error":{"message":"Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Used 29000, Requested 5000. Please try again in 8s."}}`, 8 * time.Second},
		{nil, `{"error":{"message":"Rate limit reached for model x on tokens per day (TPD): Limit 100000, Used 97050, Requested 3619. Please try again in 9m38.016s."}}`, 9*time.Minute + 38016*time.Millisecond},
		{nil, `{"error":{"message":"Please try again in 250ms."}}`, 250 * time.Millisecond},
		{nil, `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"17s"}]}}`, 17 * time.Second},
		{nil, `{"error":{"message":"Your account org-x request reached max request: 3, please try again after 1 seconds","type":"rate_limit_reached_error"}}`, time.Second},
		{map[string]string{"Retry-After": "3"}, `{"error":{"message":"Please try again in 8s."}}`, 3 * time.Second},
		{nil, `{"error":{"message":"Please try again in 2000h0m1s."}}`, 24 * time.Hour},
		{nil, `{"error":{"message":"Please try again in 99999999999h0m1s."}}`, 0}, // unreadable: the usual backoff
		{nil, `{"error":{"message":"Rate limit reached"}}`, 0},
	}
	for _, tc := range cases {
		h := http.Header{}
		for k, v := range tc.header {
			h.Set(k, v)
		}
		if got := waitAsked(h, []byte(tc.body)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.body, got, tc.want)
		}
	}
}

// docs/providers.md's table of wordings names every collected body, so the
// table and the corpus cannot drift apart.
func TestProvidersDocListsTheCorpus(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "providers.md"))
	if err != nil {
		t.Fatal(err)
	}
	for name, sc := range loadCorpus(t) {
		if !strings.Contains(string(doc), "| `"+name+"` |") {
			t.Errorf("docs/providers.md does not list %s (%s)", name, sc.Server)
		}
	}
}
