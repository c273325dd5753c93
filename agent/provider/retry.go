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
// overload answers (*RateLimitError) that arrive as the HTTP status, before
// any of the answer streamed, are retried; up to MaxAttempts requests in
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

// post sends body to path under the base URL with the retry policy and
// returns the open 2xx response, or the typed error.
func (c *client) post(ctx context.Context, path string, body []byte, header http.Header) (*http.Response, error) {
	url := c.base + path
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("%s: building request to %s: %w", c.name, url, err)
		}
		for k, vs := range header {
			req.Header[k] = vs
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.http.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, c.cancelled(ctx)
			}
			return nil, &TransportError{Provider: c.name, Endpoint: c.base, Err: err}
		}
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return resp, nil
		}
		raw, rerr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		if rerr != nil && ctx.Err() != nil {
			return nil, c.cancelled(ctx)
		}
		cerr := classify(c.name, resp.StatusCode, resp.Header, raw)
		var rl *RateLimitError
		if !errors.As(cerr, &rl) {
			return nil, cerr
		}
		rl.Attempts = attempt
		if attempt >= c.retry.MaxAttempts {
			return nil, rl
		}
		d, ok := c.retry.delay(attempt, rl.RetryAfter)
		if !ok {
			return nil, rl
		}
		if err := c.retry.Sleep(ctx, d); err != nil {
			return nil, c.cancelled(ctx)
		}
	}
}

// cancelled is the error of an inference whose ctx ended.
func (c *client) cancelled(ctx context.Context) error {
	return fmt.Errorf("%s: inference stopped: %w", c.name, context.Cause(ctx))
}
