package provider

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// OverflowError is a real context-overflow answer: the prompt (plus the
// output budget) does not fit the model's window, or the server silently
// dropped part of it. The agent answers an overflow caused by the prompt
// with one forced recovery compaction and at most one retry (R-G9), and an
// overflow caused by the requested output (FromOutput) with one retry whose
// output budget is lowered to what fits.
type OverflowError struct {
	Provider string
	Message  string
	// StatedTokens is the prompt (input) size the server stated, 0 when
	// unknown.
	StatedTokens int
	// LimitTokens is the window the server stated (0 when unknown).
	LimitTokens int
	// OutputTokens is the output budget the server says was asked for (0
	// when unsaid).
	OutputTokens int
	// FromOutput is set when the server's own figures show the prompt fits
	// and only the requested output does not (input < window <= input +
	// output).
	FromOutput bool
	// SilentTruncation is set when the server answered but reported a
	// prompt far smaller than the one sent.
	SilentTruncation bool
}

// FitsOutput is the largest output budget that fits beside the stated
// prompt, 0 unless the overflow came from the requested output.
func (e *OverflowError) FitsOutput() int {
	if !e.FromOutput || e.LimitTokens <= e.StatedTokens {
		return 0
	}
	return e.LimitTokens - e.StatedTokens
}

func (e *OverflowError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: context overflow: %s", e.Provider, e.Message)
	switch {
	case e.FromOutput:
		fmt.Fprintf(&b, " (prompt %d + output %d tokens, limit %d)", e.StatedTokens, e.OutputTokens, e.LimitTokens)
	case e.StatedTokens > 0 && e.LimitTokens > 0:
		fmt.Fprintf(&b, " (prompt %d tokens, limit %d)", e.StatedTokens, e.LimitTokens)
	case e.StatedTokens > 0:
		fmt.Fprintf(&b, " (prompt %d tokens)", e.StatedTokens)
	case e.LimitTokens > 0:
		fmt.Fprintf(&b, " (limit %d tokens)", e.LimitTokens)
	}
	return b.String()
}

// RateLimitError is a rate-limit or overload answer (Anthropic
// overloaded_error, rate_limit_exceeded, throttling, Groq's 413 "Request too
// large … tokens per minute", or a bare 429/503/529). It is never an
// overflow; it is retried with backoff (see Retry) and returned when the
// tries ran out.
type RateLimitError struct {
	Provider string
	Status   int // 0 when it came as an event inside a stream
	Message  string
	// Overloaded is set for a busy or loading server rather than a limit of
	// the account.
	Overloaded bool
	// RetryAfter is what the server asked for (Retry-After), 0 when unsaid.
	RetryAfter time.Duration
	// Attempts is how many requests were sent.
	Attempts int
}

func (e *RateLimitError) Error() string {
	s := fmt.Sprintf("%s: rate limited", e.Provider)
	if e.Overloaded {
		s = fmt.Sprintf("%s: overloaded", e.Provider)
	}
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

// QuotaError is an answer that says the account's quota, credit or
// balance is used up (OpenAI insufficient_quota, Anthropic "credit balance
// is too low", DeepSeek "Insufficient Balance", OpenRouter 402). Waiting
// does not help, so it is never retried.
type QuotaError struct {
	Provider string
	Status   int // 0 when it came as an event inside a stream
	Message  string
}

func (e *QuotaError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s: quota or credit used up (HTTP %d): %s", e.Provider, e.Status, e.Message)
	}
	return fmt.Sprintf("%s: quota or credit used up: %s", e.Provider, e.Message)
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
