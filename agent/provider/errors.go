package provider

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/soba-agent/soba-lsp/internal/lazyregexp"
)

// OverflowError is a real context-overflow answer: the prompt (plus the
// output budget) does not fit the model's window, or the server silently
// dropped part of it. The agent answers it with one forced recovery
// compaction and at most one retry (R-G9).
type OverflowError struct {
	Provider string
	Message  string
	// StatedTokens is the prompt size the server stated (0 when unknown).
	StatedTokens int
	// LimitTokens is the window the server stated (0 when unknown).
	LimitTokens int
	// SilentTruncation is set when the server answered but reported a
	// prompt far smaller than the one sent.
	SilentTruncation bool
}

func (e *OverflowError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: context overflow: %s", e.Provider, e.Message)
	switch {
	case e.StatedTokens > 0 && e.LimitTokens > 0:
		fmt.Fprintf(&b, " (prompt %d tokens, limit %d)", e.StatedTokens, e.LimitTokens)
	case e.StatedTokens > 0:
		fmt.Fprintf(&b, " (prompt %d tokens)", e.StatedTokens)
	case e.LimitTokens > 0:
		fmt.Fprintf(&b, " (limit %d tokens)", e.LimitTokens)
	}
	return b.String()
}

// RateLimitError is a rate-limit or overload answer (HTTP 429, 529, 503,
// Anthropic overloaded_error, throttling). It is never an overflow; it is
// retried with backoff (see Retry) and returned when the tries ran out.
type RateLimitError struct {
	Provider string
	Status   int // 0 when it came as an event inside a stream
	Message  string
	// RetryAfter is what the server asked for (Retry-After), 0 when unsaid.
	RetryAfter time.Duration
	// Attempts is how many requests were sent.
	Attempts int
}

func (e *RateLimitError) Error() string {
	s := fmt.Sprintf("%s: rate limited or overloaded", e.Provider)
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" (gave up after %d tries)", e.Attempts)
	}
	return s
}

// AuthError is a 401 or 403: a missing, wrong or unauthorised API key.
type AuthError struct {
	Provider string
	Status   int
	Message  string
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("%s: not authorised (HTTP %d): %s", e.Provider, e.Status, e.Message)
}

// BadRequestError is any other 4xx answer: the server rejected the request
// (unknown model, bad tool schema, …).
type BadRequestError struct {
	Provider string
	Status   int
	Message  string
}

func (e *BadRequestError) Error() string {
	return fmt.Sprintf("%s: request rejected (HTTP %d): %s", e.Provider, e.Status, e.Message)
}

// ServerError is a 5xx answer that is not an overload (500, 502, 504, …).
// It is not retried: the agent reports it and the user decides.
type ServerError struct {
	Provider string
	Status   int
	Message  string
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("%s: model server error (HTTP %d): %s", e.Provider, e.Status, e.Message)
}

// TransportError means the model server could not be reached or the
// connection failed before an answer began.
type TransportError struct {
	Provider string
	// Endpoint is the configured base URL.
	Endpoint string
	Err      error
}

func (e *TransportError) Error() string {
	return fmt.Sprintf("cannot reach model server at %s: %s", e.Endpoint, transportReason(e.Err))
}

func (e *TransportError) Unwrap() error { return e.Err }

// StreamError is a stream that failed after the answer began: cut before
// its end marker ([DONE], message_stop, done:true), unreadable, or an error
// event that is neither an overflow nor an overload. The inference failed;
// nothing of it (no partial tool call) is returned.
type StreamError struct {
	Provider string
	Message  string
	Err      error
}

func (e *StreamError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: stream failed: %s: %v", e.Provider, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: stream failed: %s", e.Provider, e.Message)
}

func (e *StreamError) Unwrap() error { return e.Err }

// transportReason names the cause plainly: "connection refused" rather
// than "dial tcp 127.0.0.1:11434: connect: connection refused".
func transportReason(err error) string {
	var dns *net.DNSError
	switch {
	case err == nil:
		return "unknown error"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.As(err, &dns):
		return "unknown host " + dns.Name
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed before an answer"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timed out"
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err.Error()
	}
	return err.Error()
}

// errorBody is the union of the error bodies the servers send:
// OpenAI/llama.cpp {"error":{...}}, vLLM {"object":"error","message":…},
// Anthropic {"type":"error","error":{...}}, Ollama {"error":"…"}.
type errorBody struct {
	Message string
	Type    string
	Code    string
	// NPrompt and NCtx are llama.cpp's exceed_context_size_error fields.
	NPrompt int
	NCtx    int
}

type errorFields struct {
	Message       string          `json:"message"`
	Type          string          `json:"type"`
	Code          json.RawMessage `json:"code"`
	NPromptTokens int             `json:"n_prompt_tokens"`
	NCtx          int             `json:"n_ctx"`
}

// parseErrorBody reads what it can from an error body; a body that is not
// JSON becomes the message as is (trimmed).
func parseErrorBody(body []byte) errorBody {
	var top struct {
		errorFields
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &top); err != nil {
		return errorBody{Message: strings.TrimSpace(string(body))}
	}
	f := top.errorFields
	if len(top.Error) > 0 {
		var s string
		if json.Unmarshal(top.Error, &s) == nil {
			f.Message = s
		} else {
			var inner errorFields
			if json.Unmarshal(top.Error, &inner) == nil {
				f = inner
			}
		}
	}
	eb := errorBody{Message: f.Message, Type: f.Type, NPrompt: f.NPromptTokens, NCtx: f.NCtx}
	if len(f.Code) > 0 {
		var s string
		if json.Unmarshal(f.Code, &s) == nil {
			eb.Code = s
		} else {
			eb.Code = string(f.Code) // llama.cpp and vLLM send the HTTP status as a number
		}
	}
	if eb.Message == "" {
		eb.Message = strings.TrimSpace(string(body))
	}
	return eb
}

// Overflow wordings, lowercase. Each is a server's answer to a prompt that
// does not fit; see testdata/errors/ for the bodies.
var overflowPhrases = []string{
	"context_length_exceeded",                   // OpenAI code
	"maximum context length",                    // OpenAI, vLLM, LM Studio, Ollama /v1
	"exceeds the available context size",        // llama.cpp server
	"exceed_context_size",                       // llama.cpp type
	"prompt is too long",                        // Anthropic
	"exceed context limit",                      // Anthropic: input length and max_tokens exceed context limit
	"exceeds the context window",                // OpenAI Responses wording
	"input length exceeds",                      // Ollama
	"input exceeds maximum context",             // Ollama runner
	"exceeds the context length",                // Ollama, llama runner
	"context length exceeded",                   // generic
	"context window exceeded",                   // generic
	"context size has been exceeded",            // LM Studio
	"context length of only",                    // LM Studio: model is loaded with context length of only N
	"input is too long for requested model",     // TGI-compatible servers
	"too many tokens in the prompt",             // generic
	"prompt too long",                           // Ollama, generic
	"requested more tokens than the context",    // generic
	"is longer than the model's context length", // vLLM (older)
}

// Rate-limit and overload wordings, lowercase: never taken for overflow.
var rateLimitPhrases = []string{
	"overloaded", "rate limit", "rate_limit", "too many requests", "throttl",
	"tokens per min", "requests per min", "quota",
}

var (
	reLimit = []*lazyregexp.Regexp{
		lazyregexp.New(`maximum context length (?:is|of) ([\d,]+)`),
		lazyregexp.New(`> ([\d,]+) maximum`),
		lazyregexp.New(`context length of only ([\d,]+)`),
		lazyregexp.New(`exceed context limit: [\d,]+ \+ [\d,]+ > ([\d,]+)`),
		lazyregexp.New(`context (?:length|window|size) (?:is |of )?([\d,]+)`),
		lazyregexp.New(`n_ctx[=: ]+([\d,]+)`),
	}
	reStated = []*lazyregexp.Regexp{
		lazyregexp.New(`resulted in ([\d,]+) tokens`),
		lazyregexp.New(`your request has ([\d,]+) input tokens`),
		lazyregexp.New(`you requested ([\d,]+) tokens`),
		lazyregexp.New(`prompt is too long: ([\d,]+) tokens`),
		lazyregexp.New(`exceed context limit: ([\d,]+) \+`),
		lazyregexp.New(`first ([\d,]+) tokens`),
		lazyregexp.New(`n_prompt_tokens[=: ]+([\d,]+)`),
		lazyregexp.New(`\(([\d,]+) tokens?\) exceeds`),
		lazyregexp.New(`prompt \(([\d,]+) tokens\)`),
	}
)

// firstNumber returns the first capture of the first pattern that matches.
func firstNumber(res []*lazyregexp.Regexp, s string) int {
	for _, re := range res {
		if m := re.FindStringSubmatch(s); m != nil {
			n, err := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
			if err == nil {
				return n
			}
		}
	}
	return 0
}

func containsAny(s string, phrases []string) bool {
	for _, p := range phrases {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// isRateLimit says whether an answer is a rate limit or an overload.
func isRateLimit(status int, eb errorBody) bool {
	switch status {
	case http.StatusTooManyRequests, 529, http.StatusServiceUnavailable:
		return true
	}
	t := strings.ToLower(eb.Type + " " + eb.Code)
	if strings.Contains(t, "overloaded") || strings.Contains(t, "rate_limit") || strings.Contains(t, "throttl") {
		return true
	}
	return containsAny(strings.ToLower(eb.Message), rateLimitPhrases) && !isOverflow(eb)
}

// isOverflow says whether an error body is a context-overflow answer.
func isOverflow(eb errorBody) bool {
	if eb.Code == "context_length_exceeded" || eb.Type == "exceed_context_size_error" {
		return true
	}
	return containsAny(strings.ToLower(eb.Message+" "+eb.Type+" "+eb.Code), overflowPhrases)
}

// overflowFrom builds the OverflowError of an overflow body, with the
// stated counts when the server gave them.
func overflowFrom(provider string, eb errorBody) *OverflowError {
	msg := strings.ToLower(eb.Message)
	e := &OverflowError{Provider: provider, Message: eb.Message}
	e.StatedTokens = eb.NPrompt
	if e.StatedTokens == 0 {
		e.StatedTokens = firstNumber(reStated, msg)
	}
	e.LimitTokens = eb.NCtx
	if e.LimitTokens == 0 {
		e.LimitTokens = firstNumber(reLimit, msg)
	}
	return e
}

// classify turns an error answer into its typed error. status is 0 for an
// error event inside a stream. Rate limits are decided first so that an
// overload is never taken for an overflow.
func classify(provider string, status int, header http.Header, body []byte) error {
	eb := parseErrorBody(body)
	if eb.Message == "" {
		eb.Message = http.StatusText(status)
	}
	switch {
	case isRateLimit(status, eb):
		return &RateLimitError{Provider: provider, Status: status, Message: eb.Message, RetryAfter: retryAfter(header)}
	case isOverflow(eb):
		return overflowFrom(provider, eb)
	case status == http.StatusUnauthorized || status == http.StatusForbidden ||
		strings.Contains(eb.Type, "authentication_error") || strings.Contains(eb.Type, "permission_error"):
		if status == 0 {
			status = http.StatusUnauthorized
		}
		return &AuthError{Provider: provider, Status: status, Message: eb.Message}
	case status >= 400 && status < 500:
		return &BadRequestError{Provider: provider, Status: status, Message: eb.Message}
	case status >= 500:
		return &ServerError{Provider: provider, Status: status, Message: eb.Message}
	default:
		return &StreamError{Provider: provider, Message: "error event: " + eb.Message}
	}
}

// retryAfter reads Retry-After (seconds or an HTTP date) and OpenAI's
// retry-after-ms; 0 when absent or unreadable.
func retryAfter(h http.Header) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// Silent-truncation thresholds: a reported prompt below half the expected
// one and more than this many tokens short means the server dropped part
// of the prompt (Ollama's default window) rather than a mis-estimate.
const truncationMinGap = 1000

// checkTruncation turns a success whose reported prompt is far below what
// was sent into an *OverflowError. A missing count (0) proves nothing.
func checkTruncation(provider string, req Request, u *Usage) error {
	if u == nil || req.ExpectedPromptTokens <= 0 || u.InputTokens <= 0 {
		return nil
	}
	exp, got := req.ExpectedPromptTokens, u.InputTokens
	if got*2 < exp && exp-got > truncationMinGap {
		return &OverflowError{
			Provider:         provider,
			Message:          fmt.Sprintf("the server reported a %d-token prompt but about %d were sent: it looks like silent truncation (typical of Ollama when num_ctx is below the prompt size)", got, exp),
			StatedTokens:     exp,
			LimitTokens:      got,
			SilentTruncation: true,
		}
	}
	return nil
}
