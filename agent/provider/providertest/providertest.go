// Package providertest is a scriptable fake model server for tests: it
// speaks the OpenAI-compatible Chat Completions, OpenAI's Responses API
// (with /responses/compact), the Anthropic Messages and Ollama's /api/chat
// wire formats (SSE
// streaming, tool calls split in fragments, usage, error answers), answers each request with the next scripted Reply, and records
// every request it received, decoded, so a test can assert on what was
// sent (e.g. that no oversized request ever left the agent).
package providertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/soba-agent/soba-lsp/agent/provider"
)

// Wire formats a Server speaks.
const (
	FormatOpenAI    = "openai"
	FormatAnthropic = "anthropic"
	// FormatResponses is OpenAI's Responses API: POST /v1/responses
	// (streamed) and POST /v1/responses/compact, whose replies come from a
	// script of their own (AddCompact).
	FormatResponses = "openai-responses"
	// FormatOllama is Ollama's native POST /api/chat (NDJSON streaming).
	FormatOllama = "ollama"
)

// Reply is one scripted answer. With Status set (>= 400) the server answers
// that status with Body and Header and nothing streams; otherwise it
// streams Text and ToolCalls, then the stop reason and Usage.
type Reply struct {
	Text      string              `json:"text,omitempty"`
	ToolCalls []provider.ToolCall `json:"toolCalls,omitempty"`
	// Usage is reported in the last chunk; nil reports InputTokens as the
	// request body's length / 4 and OutputTokens as the reply's length / 4.
	Usage *provider.Usage `json:"usage,omitempty"`
	// StopReason overrides the wire stop reason ("stop"/"tool_calls" or
	// "end_turn"/"tool_use" by default).
	StopReason string `json:"stopReason,omitempty"`

	// Status and Body answer an error (Status >= 400); a Body with no
	// Status (or a 2xx one) is a raw stream answered after a 200, sent as
	// is (a recorded stream that fails midway).
	Status int               `json:"status,omitempty"`
	Body   string            `json:"body,omitempty"`
	Header map[string]string `json:"header,omitempty"`

	// Delay is waited before answering (the request's context ends it).
	Delay time.Duration `json:"-"`
	// ChunkDelay is waited between streamed chunks.
	ChunkDelay time.Duration `json:"-"`
	// Cut ends the stream after the content, before the stop reason and
	// the end marker, as a dropped connection would.
	Cut bool `json:"cut,omitempty"`

	// Reasoning, in the Responses format, is the encrypted content of a
	// reasoning item streamed before the answer.
	Reasoning string `json:"reasoning,omitempty"`
	// Thinking is the model's reasoning, streamed before the answer the way
	// ThinkingAs says (R-C9).
	Thinking string `json:"thinking,omitempty"`
	// ThinkingAs is how the server sends Thinking. OpenAI format:
	// "tags" (the default: <think>…</think> before the answer in the
	// content), "thinking-tags" (<thinking>…</thinking>), "open-missing"
	// (the template opened the block: the content starts with the
	// thinking and a lone </think>), "reasoning_content" (DeepSeek,
	// llama.cpp) or "reasoning" (vLLM, OpenRouter). Ollama: "thinking"
	// (the default: message.thinking) or "tags". Anthropic always streams
	// a thinking block with a signature, Responses reasoning_text deltas.
	ThinkingAs string `json:"thinkingAs,omitempty"`
	// Compaction is, in the Responses format, the encrypted content of the
	// compaction item a /responses/compact reply answers, after the user
	// messages it keeps; in the Anthropic format, the summary of a
	// compaction block streamed alone, with the stop reason "compaction"
	// (server-side compaction with pause_after_compaction).
	Compaction string `json:"compaction,omitempty"`
}

// ThinkingSignature is the signature the Anthropic fake gives its
// thinking blocks.
const ThinkingSignature = "EqQBCgIYAhIMprovidertestsig"

// InContent is thinking written into the content the way "tags",
// "thinking-tags" or "open-missing" say (Reply.ThinkingAs).
func InContent(thinking, as string) string {
	switch as {
	case "thinking-tags":
		return "<thinking>" + thinking + "</thinking>\n\n"
	case "open-missing":
		return thinking + "\n</think>\n\n"
	}
	return "<think>\n" + thinking + "\n</think>\n\n"
}

// Text is a reply that answers text.
func Text(s string) Reply { return Reply{Text: s} }

// Call is a reply that asks for one tool call; args is marshalled to JSON.
func Call(id, name string, args any) Reply {
	return Reply{ToolCalls: []provider.ToolCall{{ID: id, Name: name, Arguments: mustJSON(args)}}}
}

// OverflowOpenAI is OpenAI's context_length_exceeded answer.
func OverflowOpenAI(stated, limit int) Reply {
	return Reply{Status: 400, Body: fmt.Sprintf(`{"error":{"message":"This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, limit, stated)}
}

// OverflowAnthropic is Anthropic's prompt-too-long answer.
func OverflowAnthropic(stated, limit int) Reply {
	return Reply{Status: 400, Body: fmt.Sprintf(`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: %d tokens > %d maximum"}}`, stated, limit)}
}

// RateLimited is a 429 asking to retry after the given seconds.
func RateLimited(retryAfterSeconds int) Reply {
	return Reply{Status: 429, Header: map[string]string{"Retry-After": fmt.Sprint(retryAfterSeconds)},
		Body: `{"error":{"message":"Rate limit reached. Please try again later.","type":"requests","code":"rate_limit_exceeded"}}`}
}

func mustJSON(v any) json.RawMessage {
	if raw, ok := v.(json.RawMessage); ok {
		return raw
	}
	if s, ok := v.(string); ok && json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("providertest: arguments do not marshal: %v", err))
	}
	return b
}

// Received is one request the server got, decoded into the provider's
// terms whatever the wire format.
type Received struct {
	Path   string      `json:"path"`
	Header http.Header `json:"header"`
	// Raw is the request body as sent; Size is its length.
	Raw       []byte             `json:"-"`
	Size      int                `json:"size"`
	Model     string             `json:"model"`
	System    string             `json:"system,omitempty"`
	Messages  []provider.Message `json:"messages"`
	Tools     []string           `json:"tools,omitempty"` // tool names
	MaxTokens int                `json:"maxTokens,omitempty"`
	Stream    bool               `json:"stream"`
	// Store and Include are the Responses API's store and include.
	Store   *bool    `json:"store,omitempty"`
	Include []string `json:"include,omitempty"`
	// NativeItems are the items sent verbatim, in order: the Responses
	// API's reasoning and compaction items, Anthropic's compaction blocks.
	NativeItems []json.RawMessage `json:"nativeItems,omitempty"`
	// ContextManagement is an Anthropic request's context_management.
	ContextManagement json.RawMessage `json:"contextManagement,omitempty"`
	// PromptItems is the prompt as the server caches it: tools, system,
	// then each message (each content block for Anthropic), each the bytes
	// as sent (Anthropic's cache_control markers left out, as its cache
	// key leaves them out). A request that extends an earlier one starts
	// with all of its items.
	PromptItems []string `json:"-"`
	// CacheBreakpoints are where an Anthropic request put cache_control
	// ("system[0]", "tools[3]", "messages[2].content[1]").
	CacheBreakpoints []string `json:"cacheBreakpoints,omitempty"`
	// PromptCacheKey is an OpenAI request's prompt_cache_key.
	PromptCacheKey string `json:"promptCacheKey,omitempty"`
	// DecodeError is set when the body was not the expected shape.
	DecodeError string `json:"decodeError,omitempty"`
}

// Server is a running fake. Its URL is the base URL a provider.Config
// takes: "http://127.0.0.1:PORT/v1" for OpenAI, "http://127.0.0.1:PORT" for
// Anthropic.
type Server struct {
	URL    string
	Format string

	srv *http.Server
	ln  net.Listener
	wg  conc.WaitGroup

	mu       sync.Mutex // guards the fields below
	script   []Reply
	next     int
	compacts []Reply // the /responses/compact script
	nextComp int
	received []Received
	beyond   int
	// repeatLast answers with the last reply once the script is spent.
	repeatLast bool
	closed     bool
	cache      promptCache
}

// NewOpenAI starts an OpenAI-compatible fake on 127.0.0.1 that answers the
// script in order; it closes when the test ends, and the test fails if a
// request came after the script was spent.
func NewOpenAI(t testing.TB, script ...Reply) *Server {
	return newForTest(t, FormatOpenAI, script)
}

// NewResponses starts a Responses API fake; see NewOpenAI. Its URL is the
// API root ("http://127.0.0.1:PORT/v1"); /responses/compact answers from
// the replies given to AddCompact.
func NewResponses(t testing.TB, script ...Reply) *Server {
	return newForTest(t, FormatResponses, script)
}

// NewOllama starts an Ollama /api/chat fake; see NewOpenAI. Its URL is the
// server root ("http://127.0.0.1:PORT").
func NewOllama(t testing.TB, script ...Reply) *Server {
	return newForTest(t, FormatOllama, script)
}

// NewAnthropic starts an Anthropic Messages fake; see NewOpenAI.
func NewAnthropic(t testing.TB, script ...Reply) *Server {
	return newForTest(t, FormatAnthropic, script)
}

func newForTest(t testing.TB, format string, script []Reply) *Server {
	t.Helper()
	s, err := Serve("127.0.0.1:0", format, script)
	if err != nil {
		t.Fatalf("providertest: %v", err)
	}
	t.Cleanup(func() {
		s.Close()
		if n := s.Beyond(); n > 0 {
			t.Errorf("providertest: %d request(s) came after the %d scripted replies", n, len(s.script))
		}
	})
	return s
}

// Serve starts a fake of the given format on addr (a loopback address;
// port 0 picks a free one) without a testing.T, for a test main or the
// fakemodel program. Close stops it.
func Serve(addr, format string, script []Reply) (*Server, error) {
	if format != FormatOpenAI && format != FormatAnthropic && format != FormatResponses && format != FormatOllama {
		return nil, fmt.Errorf("unknown format %q (want openai, openai-responses, anthropic or ollama)", format)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("address %q is not a loopback address", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{Format: format, ln: ln, script: append([]Reply(nil), script...)}
	s.URL = "http://" + ln.Addr().String()
	if format == FormatOpenAI || format == FormatResponses {
		s.URL += "/v1"
	}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.handle), ReadHeaderTimeout: 10 * time.Second}
	s.wg.Go(func() { _ = s.srv.Serve(ln) }) // ends when Close closes the listener
	return s, nil
}

// RepeatLast makes the server answer every request after the script with
// the script's last reply (for interactive end-to-end runs).
func (s *Server) RepeatLast() {
	s.mu.Lock()
	s.repeatLast = true
	s.mu.Unlock()
}

// Add appends replies to the script.
func (s *Server) Add(replies ...Reply) {
	s.mu.Lock()
	s.script = append(s.script, replies...)
	s.mu.Unlock()
}

// AddCompact appends replies to the /responses/compact script: a reply
// with Compaction set answers the compacted items, one with Status an
// error.
func (s *Server) AddCompact(replies ...Reply) {
	s.mu.Lock()
	s.compacts = append(s.compacts, replies...)
	s.mu.Unlock()
}

// Requests returns a copy of every request received so far.
func (s *Server) Requests() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.received...)
}

// Beyond is how many requests arrived after the script was spent (each got
// a 500 answer).
func (s *Server) Beyond() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.beyond
}

// Close stops the server, ending any reply still streaming or waiting.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	_ = s.srv.Close()
	s.wg.Wait()
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	want := "/v1/chat/completions"
	switch s.Format {
	case FormatAnthropic:
		want = "/v1/messages"
	case FormatOllama:
		want = "/api/chat"
	case FormatResponses:
		want = "/v1/responses"
		if r.URL.Path == "/v1/responses/compact" {
			want = r.URL.Path
		}
	}
	if r.Method != http.MethodPost || r.URL.Path != want {
		http.Error(w, fmt.Sprintf(`{"error":{"message":"providertest: no route %s %s (want POST %s)"}}`, r.Method, r.URL.Path, want), http.StatusNotFound)
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	rec := decode(s.Format, raw)
	rec.Path, rec.Header, rec.Raw, rec.Size = r.URL.Path, r.Header.Clone(), raw, len(raw)
	compact := r.URL.Path == "/v1/responses/compact"
	var ends []int
	var refusal string
	if s.Format == FormatAnthropic {
		var bad []string
		var err error
		rec.PromptItems, ends, rec.CacheBreakpoints, bad, err = anthropicPrompt(raw)
		switch {
		case err != nil:
			rec.DecodeError = err.Error()
		case len(ends) > provider.AnthropicMaxBreakpoints:
			// The API's own answer to a fifth marker.
			refusal = fmt.Sprintf("A maximum of %d blocks with cache_control may be provided. Found %d.", provider.AnthropicMaxBreakpoints, len(ends))
		case len(bad) > 0:
			refusal = "cache_control: unknown type: " + bad[0]
		}
	} else if !compact {
		rec.PromptItems, _ = openAIPrompt(s.Format, raw)
		var key struct {
			PromptCacheKey string `json:"prompt_cache_key"`
		}
		_ = json.Unmarshal(raw, &key)
		rec.PromptCacheKey = key.PromptCacheKey
	}

	s.mu.Lock()
	s.received = append(s.received, rec)
	if refusal != "" {
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": refusal}})
		return
	}
	// The prompt cache as the server would keep it: what this request
	// reads from it, and (Anthropic) writes to it.
	var cached, written int
	switch {
	case compact:
	case s.Format == FormatAnthropic:
		cached, written = s.cache.anthropic(rec.PromptItems, ends)
	case s.Format == FormatOllama:
		cached = s.cache.ollama(rec.PromptItems)
	default:
		cached = s.cache.openAI(rec.PromptItems)
	}
	var reply Reply
	ok := true
	switch {
	case compact && s.nextComp < len(s.compacts):
		reply = s.compacts[s.nextComp]
		s.nextComp++
	case compact:
		s.beyond++
		ok = false
	case s.next < len(s.script):
		reply = s.script[s.next]
		s.next++
	case s.repeatLast && len(s.script) > 0:
		reply = s.script[len(s.script)-1]
	default:
		s.beyond++
		ok = false
	}
	n := len(s.script)
	s.mu.Unlock()
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, `{"error":{"message":"providertest: script spent (%d replies)","type":"server_error"}}`, n)
		return
	}
	if !wait(r, reply.Delay) {
		return
	}
	if reply.Body != "" && reply.Status < 400 {
		// A raw answer after a 200: a recorded stream (one that fails
		// midway, with the server's own error event) sent as is.
		for k, v := range reply.Header {
			w.Header().Set(k, v)
		}
		if w.Header().Get("Content-Type") == "" {
			ct := "text/event-stream"
			if s.Format == FormatOllama {
				ct = "application/x-ndjson"
			}
			w.Header().Set("Content-Type", ct)
		}
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, reply.Body)
		return
	}
	if reply.Status >= 400 {
		for k, v := range reply.Header {
			w.Header().Set(k, v)
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(reply.Status)
		_, _ = io.WriteString(w, reply.Body)
		return
	}
	u := reply.Usage
	if u == nil {
		in := max(len(raw)/4, cached+written)
		u = &provider.Usage{InputTokens: in, OutputTokens: (len(reply.Text) + argsLen(reply.ToolCalls)) / 4, CachedTokens: cached}
	} else {
		written = 0
	}
	if compact {
		writeCompacted(w, rec, reply, u)
		return
	}
	if s.Format == FormatResponses {
		writeResponses(w, r, rec.Model, reply, u)
		return
	}
	if s.Format == FormatOllama {
		writeOllama(w, r, rec.Model, reply, u)
		return
	}
	if s.Format == FormatOpenAI {
		if !rec.Stream {
			writeOpenAIJSON(w, rec.Model, reply, u)
			return
		}
		writeOpenAI(w, r, rec.Model, reply, u)
		return
	}
	writeAnthropic(w, r, rec.Model, reply, u, written)
}

func argsLen(calls []provider.ToolCall) int {
	n := 0
	for _, c := range calls {
		n += len(c.Arguments)
	}
	return n
}

// wait sleeps d unless the client goes away first.
func wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return r.Context().Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// pieces splits s into chunks of about n bytes (not splitting UTF-8).
func pieces(s string, n int) []string {
	var out []string
	for len(s) > n {
		cut := n
		for cut < len(s) && !utf8Start(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// sse writes SSE events, flushing each, with the reply's chunk delay.
type sse struct {
	w     http.ResponseWriter
	r     *http.Request
	delay time.Duration
	n     int
}

func (e *sse) event(name string, v any) bool {
	if e.n > 0 && !wait(e.r, e.delay) {
		return false
	}
	e.n++
	b, ok := v.([]byte)
	if !ok {
		b = mustJSON(v)
	}
	if name != "" {
		fmt.Fprintf(e.w, "event: %s\n", name)
	}
	fmt.Fprintf(e.w, "data: %s\n\n", b)
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
	return e.r.Context().Err() == nil
}

func writeOpenAI(w http.ResponseWriter, r *http.Request, model string, reply Reply, u *provider.Usage) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	e := &sse{w: w, r: r, delay: reply.ChunkDelay}
	const id = "chatcmpl-providertest"
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1700000000, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	if !e.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		return
	}
	content := reply.Text
	if reply.Thinking != "" {
		switch reply.ThinkingAs {
		case "reasoning_content", "reasoning":
			for _, p := range pieces(reply.Thinking, 8) {
				if !e.event("", chunk(map[string]any{reply.ThinkingAs: p}, nil)) {
					return
				}
			}
		default:
			content = InContent(reply.Thinking, reply.ThinkingAs) + content
		}
	}
	for _, p := range pieces(content, 5) {
		if !e.event("", chunk(map[string]any{"content": p}, nil)) {
			return
		}
	}
	for i, tc := range reply.ToolCalls {
		args := pieces(string(tc.Arguments), 7)
		first := ""
		if len(args) > 0 {
			first, args = args[0], args[1:]
		}
		head := map[string]any{"index": i, "id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": first}}
		if !e.event("", chunk(map[string]any{"tool_calls": []any{head}}, nil)) {
			return
		}
		for _, a := range args {
			frag := map[string]any{"index": i, "function": map[string]any{"arguments": a}}
			if !e.event("", chunk(map[string]any{"tool_calls": []any{frag}}, nil)) {
				return
			}
		}
	}
	if reply.Cut {
		return
	}
	finish := reply.StopReason
	if finish == "" {
		finish = "stop"
		if len(reply.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	if !e.event("", chunk(map[string]any{}, finish)) {
		return
	}
	usage := map[string]any{"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens,
		"total_tokens": u.InputTokens + u.OutputTokens, "prompt_tokens_details": map[string]any{"cached_tokens": u.CachedTokens}}
	if !e.event("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1700000000, "model": model, "choices": []any{}, "usage": usage}) {
		return
	}
	e.event("", []byte("[DONE]"))
}

func writeOpenAIJSON(w http.ResponseWriter, model string, reply Reply, u *provider.Usage) {
	msg := map[string]any{"role": "assistant", "content": reply.Text}
	finish := "stop"
	if len(reply.ToolCalls) > 0 {
		finish = "tool_calls"
		var calls []any
		for _, tc := range reply.ToolCalls {
			calls = append(calls, map[string]any{"id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": string(tc.Arguments)}})
		}
		msg["tool_calls"] = calls
	}
	if reply.StopReason != "" {
		finish = reply.StopReason
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-providertest", "object": "chat.completion", "created": 1700000000, "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens, "total_tokens": u.InputTokens + u.OutputTokens}})
}

// writeAnthropic streams a reply; written is the prompt's part written to
// the cache (cache_creation_input_tokens), which with the part read
// (u.CachedTokens) is not counted in input_tokens.
func writeAnthropic(w http.ResponseWriter, r *http.Request, model string, reply Reply, u *provider.Usage, written int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	e := &sse{w: w, r: r, delay: reply.ChunkDelay}
	in := max(0, u.InputTokens-u.CachedTokens-written)
	if !e.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_providertest", "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": in, "cache_creation_input_tokens": written, "cache_read_input_tokens": u.CachedTokens, "output_tokens": 1}}}) {
		return
	}
	idx := 0
	if reply.Thinking != "" {
		if !e.event("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}}) {
			return
		}
		for _, p := range pieces(reply.Thinking, 8) {
			if !e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "thinking_delta", "thinking": p}}) {
				return
			}
		}
		if !e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "signature_delta", "signature": ThinkingSignature}}) ||
			!e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx}) {
			return
		}
		idx++
	}
	if reply.Compaction != "" {
		if !e.event("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "compaction", "content": ""}}) {
			return
		}
		for _, p := range pieces(reply.Compaction, 16) {
			if !e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "compaction_delta", "content": p}}) {
				return
			}
		}
		if !e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx}) {
			return
		}
		idx++
		if reply.StopReason == "" {
			reply.StopReason = "compaction"
		}
	}
	if reply.Text != "" {
		if !e.event("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "text", "text": ""}}) {
			return
		}
		if !e.event("ping", map[string]any{"type": "ping"}) {
			return
		}
		for _, p := range pieces(reply.Text, 8) {
			if !e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "text_delta", "text": p}}) {
				return
			}
		}
		if !e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx}) {
			return
		}
		idx++
	}
	for _, tc := range reply.ToolCalls {
		if !e.event("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": map[string]any{}}}) {
			return
		}
		for _, p := range pieces(string(tc.Arguments), 7) {
			if !e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}}) {
				return
			}
		}
		if reply.Cut {
			return
		}
		if !e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx}) {
			return
		}
		idx++
	}
	if reply.Cut {
		return
	}
	stop := reply.StopReason
	if stop == "" {
		stop = "end_turn"
		if len(reply.ToolCalls) > 0 {
			stop = "tool_use"
		}
	}
	if !e.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": u.OutputTokens}}) {
		return
	}
	e.event("message_stop", map[string]any{"type": "message_stop"})
}

// decode reads a request body of either format into provider terms.
func decode(format string, raw []byte) Received {
	switch format {
	case FormatAnthropic:
		return decodeAnthropic(raw)
	case FormatResponses:
		return decodeResponses(raw)
	case FormatOllama:
		return decodeOllama(raw)
	}
	return decodeOpenAI(raw)
}

// contentText reads a content field that is a string or an array of parts.
func contentText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return string(raw)
}

func decodeOpenAI(raw []byte) Received {
	var body struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
		MaxTokens           int `json:"max_tokens"`
		MaxCompletionTokens int `json:"max_completion_tokens"`
	}
	var rec Received
	if err := json.Unmarshal(raw, &body); err != nil {
		rec.DecodeError = err.Error()
		return rec
	}
	rec.Model, rec.Stream, rec.MaxTokens = body.Model, body.Stream, body.MaxTokens
	if rec.MaxTokens == 0 {
		rec.MaxTokens = body.MaxCompletionTokens
	}
	for _, m := range body.Messages {
		text := contentText(m.Content)
		switch m.Role {
		case "system", "developer":
			if rec.System != "" {
				rec.System += "\n"
			}
			rec.System += text
		default:
			pm := provider.Message{Role: m.Role, Text: text, ToolCallID: m.ToolCallID}
			for _, tc := range m.ToolCalls {
				pm.ToolCalls = append(pm.ToolCalls, provider.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: json.RawMessage(tc.Function.Arguments)})
			}
			rec.Messages = append(rec.Messages, pm)
		}
	}
	for _, t := range body.Tools {
		rec.Tools = append(rec.Tools, t.Function.Name)
	}
	return rec
}

func decodeAnthropic(raw []byte) Received {
	var body struct {
		Model     string          `json:"model"`
		Stream    bool            `json:"stream"`
		MaxTokens int             `json:"max_tokens"`
		System    json.RawMessage `json:"system"`
		Messages  []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		ContextManagement json.RawMessage `json:"context_management"`
	}
	var rec Received
	if err := json.Unmarshal(raw, &body); err != nil {
		rec.DecodeError = err.Error()
		return rec
	}
	rec.Model, rec.Stream, rec.MaxTokens, rec.System = body.Model, body.Stream, body.MaxTokens, contentText(body.System)
	rec.ContextManagement = body.ContextManagement
	for _, m := range body.Messages {
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			rec.Messages = append(rec.Messages, provider.Message{Role: m.Role, Text: s})
			continue
		}
		var raws []json.RawMessage
		_ = json.Unmarshal(m.Content, &raws)
		var blocks []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
			IsError   bool            `json:"is_error"`
		}
		if err := json.Unmarshal(m.Content, &blocks); err != nil {
			rec.DecodeError = errors.Join(errors.New(rec.DecodeError), err).Error()
			continue
		}
		pm := provider.Message{Role: m.Role}
		for i, b := range blocks {
			switch b.Type {
			case "compaction", "thinking", "redacted_thinking":
				if i < len(raws) {
					rec.NativeItems = append(rec.NativeItems, raws[i])
				}
			case "text":
				pm.Text += b.Text
			case "tool_use":
				pm.ToolCalls = append(pm.ToolCalls, provider.ToolCall{ID: b.ID, Name: b.Name, Arguments: b.Input})
			case "tool_result":
				// Each tool result is its own message in provider terms.
				rec.Messages = append(rec.Messages, provider.Message{Role: provider.RoleTool, ToolCallID: b.ToolUseID, Text: contentText(b.Content), IsError: b.IsError})
			}
		}
		if pm.Text != "" || len(pm.ToolCalls) > 0 {
			rec.Messages = append(rec.Messages, pm)
		}
	}
	for _, t := range body.Tools {
		rec.Tools = append(rec.Tools, t.Name)
	}
	return rec
}
