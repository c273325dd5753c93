package provider

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// wire is a fake model server that answers every request with one
// recorded transcript from testdata/ and keeps the requests it got.
type wire struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	heads  []http.Header
	paths  []string
}

// answer is one scripted HTTP answer of a wire.
type answer struct {
	status int
	header map[string]string
	file   string // under testdata/
	body   string // used when file is empty
}

// newWire serves the answers in order (the last one repeats).
func newWire(t *testing.T, answers ...answer) *wire {
	t.Helper()
	w := &wire{}
	var n int
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		w.bodies = append(w.bodies, b)
		w.heads = append(w.heads, r.Header.Clone())
		w.paths = append(w.paths, r.URL.Path)
		a := answers[min(n, len(answers)-1)]
		n++
		w.mu.Unlock()
		body := []byte(a.body)
		if a.file != "" {
			var err error
			body, err = os.ReadFile(filepath.Join("testdata", a.file))
			if err != nil {
				t.Errorf("testdata: %v", err)
			}
		}
		for k, v := range a.header {
			rw.Header().Set(k, v)
		}
		status := a.status
		if status == 0 {
			status = 200
		}
		rw.WriteHeader(status)
		_, _ = rw.Write(body)
	}))
	t.Cleanup(w.srv.Close)
	return w
}

func (w *wire) requests() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.bodies)
}

// body decodes request i's JSON body.
func (w *wire) body(t *testing.T, i int) map[string]any {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	var m map[string]any
	if err := json.Unmarshal(w.bodies[i], &m); err != nil {
		t.Fatalf("request %d body is not JSON: %v\n%s", i, err, w.bodies[i])
	}
	return m
}

func (w *wire) header(i int) http.Header {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.heads[i]
}

// sleeps records the waits of the retry policy instead of sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// newFor builds a provider against base with a recording sleeper.
func newFor(t *testing.T, name, base string, s *sleeps) Provider {
	t.Helper()
	if s == nil {
		s = &sleeps{}
	}
	p, err := New(Config{Provider: name, BaseURL: base, Model: "test-model", ContextWindow: 65000, MaxOutputTokens: 8000, Retry: Retry{Sleep: s.sleep}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// baseFor is the base URL a provider of that name wants for a wire.
func baseFor(name string, w *wire) string {
	if name == NameOpenAI {
		return w.srv.URL + "/v1"
	}
	return w.srv.URL
}

// collect gathers streamed events.
type collect struct {
	text  string
	calls []ToolCall
	order []string
}

func (c *collect) on(e Event) {
	c.order = append(c.order, e.Kind)
	switch e.Kind {
	case EventText:
		c.text += e.Delta
	case EventToolCall:
		c.calls = append(c.calls, *e.ToolCall)
	}
}

func userReq(text string) Request {
	return Request{System: "You are terse.", Messages: []Message{{Role: RoleUser, Text: text}}}
}

// newBenchServer serves data as an SSE answer to every request.
func newBenchServer(b *testing.B, data []byte) string {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		rw.Header().Set("Content-Type", "text/event-stream")
		_, _ = rw.Write(data)
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}
