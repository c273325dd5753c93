package compaction

import (
	"context"
	"errors"
	"time"

	"github.com/sourcegraph/conc"
	"github.com/sourcegraph/conc/panics"

	"github.com/soba-agent/soba-lsp/capsule"
)

// NativeCompactor obtains the active provider's native compaction (SPEC
// §11): the agent implements it over its model client when the provider
// has one and model.nativeContinuation is on.
type NativeCompactor interface {
	// NativeTarget is the provider and model the continuation will belong
	// to; the history is built for them (their previous continuation and
	// encrypted reasoning included).
	NativeTarget() (provider, model string)
	// CompactNative asks the provider to compact history — the model input
	// of everything before the plan's first kept entry, about tokens tokens
	// with the system prompt and tools — and returns the continuation, or a
	// *NativeSkip when the provider would not compact it (a history below
	// its minimum).
	CompactNative(ctx context.Context, history Input, tokens int) (capsule.Native, error)
}

// NativeSkip is a native compaction not attempted because the history is
// below the provider's minimum, with why; the capsule is then portable only
// and the flight record says below_minimum.
type NativeSkip struct{ Reason string }

func (s *NativeSkip) Error() string { return s.Reason }

// Native call outcomes, as the flight record and the result carry them
// (never the continuation's content, R-O2).
const (
	NativeCompleted    = "completed"     // a continuation is stored in the capsule
	NativeFailed       = "failed"        // the provider answered an error
	NativeTimeout      = "timeout"       // no answer within timeoutMs (R-N3)
	NativeBelowMinimum = "below_minimum" // not attempted: the history is below the provider's minimum (NativeSkip)
	NativeDiscarded    = "discarded"     // obtained, but the cut moved after it (a forced compaction's fit)
	NativeCancelled    = "cancelled"     // the compaction was cancelled while it ran
)

// nativeCall is a native compaction running beside the summary.
type nativeCall struct {
	start time.Time
	done  chan nativeAnswer
	ctx   context.Context
	stop  context.CancelFunc
}

type nativeAnswer struct {
	n   capsule.Native
	err error
}

// startNative starts the native call for the history before the plan's
// cut, under its own timeoutMs deadline (R-N3) in the barrier's work group.
// It returns nil without a NativeCompactor.
func (b *Barrier) startNative(ctx context.Context, in RunInput) *nativeCall {
	if b.Native == nil {
		return nil
	}
	p := in.Plan
	nctx, stop := context.WithTimeout(ctx, time.Duration(p.Config.TimeoutMs)*time.Millisecond)
	c := &nativeCall{start: b.now(), done: make(chan nativeAnswer, 1), ctx: nctx, stop: stop}
	provider, model := b.Native.NativeTarget()
	work := b.Work
	if work == nil {
		work = new(conc.WaitGroup)
	}
	work.Go(func() { // ends when the provider answers; the answer is dropped after the deadline
		var a nativeAnswer
		if r := panics.Try(func() {
			var history Input
			history, a.err = buildInput(in.Transcript, p.Base, p.Cut.FirstKept, InputOptions{Provider: provider, Model: model, MaxToolResultChars: nativeToolResultChars})
			if a.err == nil {
				a.n, a.err = b.Native.CompactNative(nctx, history, p.SystemTokens+p.PreviousCapsuleTokens+p.Cut.CompactTokens)
			}
			if a.err == nil {
				a.n.Provider, a.n.Model = provider, model
			}
		}); r != nil {
			a.err = r.AsError()
		}
		c.done <- a
	})
	return c
}

// nativeToolResultChars shortens long tool results in the history a native
// compaction reads, as in the model input.
const nativeToolResultChars = 24000

// wait returns the continuation, or nil with the outcome that says why not,
// and the call's duration. It never waits past the call's deadline.
func (c *nativeCall) wait(now func() time.Time) (*capsule.Native, string, int64) {
	defer c.stop()
	var a nativeAnswer
	select {
	case a = <-c.done:
	case <-c.ctx.Done():
		a.err = c.ctx.Err()
	}
	ms := now().Sub(c.start).Milliseconds()
	var skip *NativeSkip
	switch {
	case a.err == nil && len(a.n.Items) > 0:
		return &a.n, NativeCompleted, ms
	case errors.As(a.err, &skip):
		return nil, NativeBelowMinimum, ms
	case errors.Is(a.err, context.DeadlineExceeded) || errors.Is(c.ctx.Err(), context.DeadlineExceeded):
		return nil, NativeTimeout, ms
	}
	return nil, NativeFailed, ms
}
