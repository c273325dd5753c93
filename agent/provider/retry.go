package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Retry is the one retry policy of every provider: only rate-limit and
// overload answers (*RateLimitError) are retried — an HTTP status, or an
// error event that came before any of the answer streamed (Anthropic's
// overloaded_error after the 200); up to MaxAttempts requests in
// all, waiting the server's Retry-After when it gives one, else BaseDelay
// doubling per try, never more than MaxDelay. A Retry-After longer than
// MaxDelay is not waited for: the error is returned at once with it.
// Overflows, auth and bad requests are never retried here; a connection
// failure neither (a server that is down stays down for seconds).
type Retry struct {
	MaxAttempts int
	BaseDelay   time.Duration
	MaxDelay    time.Duration
	// Sleep waits d or until ctx ends; tests inject a recorder.
	Sleep func(ctx context.Context, d time.Duration) error
}

// DefaultRetry is the policy New uses for zero fields.
var DefaultRetry = Retry{MaxAttempts: 3, BaseDelay: time.Second, MaxDelay: 60 * time.Second, Sleep: sleepContext}

func (r Retry) withDefaults() Retry {
	if r.MaxAttempts <= 0 {
		r.MaxAttempts = DefaultRetry.MaxAttempts
	}
	if r.BaseDelay <= 0 {
		r.BaseDelay = DefaultRetry.BaseDelay
	}
	if r.MaxDelay <= 0 {
		r.MaxDelay = DefaultRetry.MaxDelay
	}
	if r.Sleep == nil {
		r.Sleep = sleepContext
	}
	return r
}

// delay is the wait before try number attempt+1 (attempt counts from 1).
func (r Retry) delay(attempt int, asked time.Duration) (time.Duration, bool) {
	if asked > 0 {
		return asked, asked <= r.MaxDelay
	}
	d := r.BaseDelay << (attempt - 1)
	if d > r.MaxDelay || d <= 0 {
		d = r.MaxDelay
	}
	return d, true
}

func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 1 << 20

// reader parses one streamed answer.
type reader func(ctx context.Context, r io.Reader, onEvent func(Event)) (Response, error)

// exchange sends body to path under the base URL and reads the answer with
// read, under the retry policy: a rate-limit status, or a rate-limit error
// event that arrives before anything of the answer streamed, is retried.
func (c *client) exchange(ctx context.Context, path string, body []byte, header http.Header, onEvent func(Event), read reader) (Response, error) {
	url := c.base + path
	for attempt := 1; ; attempt++ {
		out, streamed, err := c.once(ctx, url, body, header, onEvent, read)
		var rl *RateLimitError
		if err == nil || streamed || !errors.As(err, &rl) {
			return out, err
		}
		rl.Attempts = attempt
		if attempt >= c.retry.MaxAttempts {
			return Response{}, rl
		}
		d, ok := c.retry.delay(attempt, rl.RetryAfter)
		if !ok {
			return Response{}, rl
		}
		if err := c.retry.Sleep(ctx, d); err != nil {
			return Response{}, c.cancelled(ctx)
		}
	}
}

// once is one request; streamed says whether any event reached onEvent.
func (c *client) once(ctx context.Context, url string, body []byte, header http.Header, onEvent func(Event), read reader) (_ Response, streamed bool, _ error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Response{}, false, fmt.Errorf("%s: building request to %s: %w", c.name, url, err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return Response{}, false, c.cancelled(ctx)
		}
		return Response{}, false, &TransportError{Provider: c.name, Endpoint: c.base, Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		raw, rerr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		if rerr != nil && ctx.Err() != nil {
			return Response{}, false, c.cancelled(ctx)
		}
		return Response{}, false, classify(c.name, resp.StatusCode, resp.Header, raw)
	}
	seen := func(e Event) {
		streamed = true
		if onEvent != nil {
			onEvent(e)
		}
	}
	out, err := read(ctx, resp.Body, seen)
	return out, streamed, err
}

// cancelled is the error of an inference whose ctx ended.
func (c *client) cancelled(ctx context.Context) error {
	return fmt.Errorf("%s: inference stopped: %w", c.name, context.Cause(ctx))
}
