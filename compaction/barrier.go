package compaction

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sourcegraph/conc"
	"github.com/sourcegraph/conc/panics"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/internal/text"
	"github.com/soba-agent/soba-lsp/session"
)

// ErrStale is returned by an Appender when the session leaf is no longer the
// plan's expected leaf (R-B5).
var ErrStale = errors.New("the session changed since the compaction was planned")

// Appender appends a capsule entry to the session. The session's owner
// implements it: it must check ctx (the abort signal) and that the leaf is
// still expectedLeaf atomically with the append, and append nothing
// otherwise (R-B5, R-F2), returning ctx.Err() or ErrStale.
type Appender interface {
	AppendCapsule(ctx context.Context, expectedLeaf string, c session.Capsule) error
}

// Barrier runs compactions to a terminal outcome (SPEC §4). It holds no
// session state: the owner makes the plan, the barrier produces the capsule
// without holding the owner's state, and the owner's Appender decides
// atomically whether it may land. A Barrier is safe for concurrent use.
type Barrier struct {
	Counter Counter
	// Summarizer asks the summary model; nil builds the deterministic
	// capsule, which is then the intended result (quality full).
	Summarizer Summarizer
	// SummaryWindowChars bounds one summary request's history (the summary
	// model's own window, in characters); 0 means one request.
	SummaryWindowChars int
	// SummaryMaxOutputTokens bounds each summary answer.
	SummaryMaxOutputTokens int
	Flight                 FlightRecorder
	Now                    func() time.Time
	// Work is the group a summary request runs in. The wait for a summary
	// ends at its deadline even when the summarizer ignores its context, so
	// the request can outlive the run; its owner waits for it when it shuts
	// down (the agent passes its own group). nil gives each run a group of
	// its own: a panic is still caught, but nothing waits for a straggler.
	Work *conc.WaitGroup
	// Native, when set, obtains the provider's native compaction of the
	// same history beside the summary, under the same deadline, cancel and
	// expected-leaf checks (R-N1, R-N3); nil makes portable capsules only.
	Native NativeCompactor
}

// Hooks receive a running compaction's progress and notices. Any may be nil.
// Progress and Summary may be called from the summary request's goroutine;
// none is called after Run returned.
type Hooks struct {
	// Progress reports what the compaction is doing whenever that changes.
	Progress func(Progress)
	// Summary receives the summary model's answer as it streams, each part's
	// answer in order (a part that fails leaves its text unfinished: the
	// result says what landed).
	Summary func(delta string)
	// Warn announces a degraded fallback to the user (R-F1).
	Warn func(message string)
}

// RunInput is one compaction to run.
type RunInput struct {
	Plan       Plan
	Transcript Transcript
	Appender   Appender
	// Source is the measurement source of the figures (R-O1), for the
	// flight record.
	Source string
	// SessionID names the session in the flight record.
	SessionID string
	// CachedTokens is the session's last request's input read from the
	// provider's prompt cache, for the flight record.
	CachedTokens int
	Hooks        Hooks
}

// Run runs the plan to a terminal outcome (R-B4) and returns its result. ctx
// is the compaction's own context: cancelling it is an external cancel
// (R-F2), which appends nothing even when the summary finishes later. The
// summary's own deadline (timeoutMs) is internal: it triggers the
// deterministic fallback (R-F1).
func (b *Barrier) Run(ctx context.Context, in RunInput) CompactionResult {
	start := b.now()
	p := in.Plan
	report := &reporter{hooks: in.Hooks, counter: b.Counter}
	var asked bool
	res := b.run(ctx, in, report, &asked)
	report.close()
	res.SummaryAsked = asked
	res.OperationID, res.Trigger = p.OperationID, p.Trigger
	res.DurationMs = b.now().Sub(start).Milliseconds()
	if res.TokensBefore == 0 {
		res.TokensBefore = p.TokensBefore
	}
	res.Line = ResultLine(res)
	if b.Flight != nil {
		rec := NewFlightRecord(b.now(), in.SessionID, in.Source, p, res)
		rec.CachedTokens = in.CachedTokens
		_ = b.Flight.Record(rec)
	}
	return res
}

func (b *Barrier) run(ctx context.Context, in RunInput, report *reporter, asked *bool) CompactionResult {
	p := in.Plan
	if err := ctx.Err(); err != nil {
		return CompactionResult{Outcome: OutcomeCancelled, Reason: "cancelled before it started"}
	}
	predicted, declined := b.predict(in)
	if declined != nil {
		return *declined
	}
	var (
		summary  *capsule.State
		degraded bool
		notice   string
	)
	nat := b.startNative(ctx, in)
	if nat != nil {
		defer nat.stop()
	}
	if b.Summarizer != nil {
		*asked = true
		st, err := b.summarize(ctx, in, report)
		switch {
		case ctx.Err() != nil:
			return CompactionResult{Outcome: OutcomeCancelled, Reason: "cancelled while the summary was generated"}
		case errors.Is(err, context.DeadlineExceeded):
			degraded = true
			notice = NoticeSummaryTimeout(time.Duration(p.Config.TimeoutMs) * time.Millisecond)
		case err != nil:
			degraded = true
			notice = NoticeSummaryFailed(oneLine(err.Error()))
		default:
			summary = &st
		}
	}
	var (
		native        *capsule.Native
		nativeOutcome string
		nativeMs      int64
	)
	if nat != nil {
		report.stage(StageNative)
		native, nativeOutcome, nativeMs = nat.wait(b.now)
		if ctx.Err() != nil {
			return CompactionResult{Outcome: OutcomeCancelled, Reason: "cancelled while the native compaction ran", NativeOutcome: NativeCancelled, NativeDurationMs: nativeMs}
		}
	}
	report.stage(StageBuilding)
	build := func(p Plan) (Capsule, error) {
		return BuildCapsule(in.Transcript, b.Counter, p, summary, degraded)
	}
	var (
		cp  Capsule
		err error
	)
	firstKept := p.Cut.FirstKept
	switch {
	case p.Trigger == TriggerHardLimit || p.Trigger == TriggerContextOverflow:
		p, cp, err = FitForced(in.Transcript, b.Counter, p, build)
	case predicted != nil && summary == nil && !degraded:
		// Without a summary the prediction is the capsule itself.
		cp = *predicted
	default:
		cp, err = build(p)
	}
	if err != nil {
		return CompactionResult{Outcome: OutcomeFailed, Reason: err.Error(), TokensBefore: p.TokensBefore, NativeOutcome: nativeOutcome, NativeDurationMs: nativeMs}
	}
	if native != nil && p.Cut.FirstKept != firstKept {
		// The fit moved the cut: the continuation covers other history.
		native, nativeOutcome = nil, NativeDiscarded
	}
	cp.Entry.Native = native
	if native != nil && native.Tokens > 0 {
		// What the next request to this provider and model carries is the
		// continuation, not the capsule's text: it is what R-R2 and the
		// hard limit measure. When it would not fit, or would not pay where
		// the portable capsule does, the portable capsule goes alone.
		alt := cp
		alt.TokensAfter = cp.TokensAfter - b.Counter.Count(cp.Text) + native.Tokens
		alt.Entry.TokensAfter = alt.TokensAfter
		okNative, _ := p.Accept(alt)
		okPortable, _ := p.Accept(cp)
		if (alt.TokensAfter > p.HardLimit && cp.TokensAfter <= p.HardLimit) || (!okNative && okPortable) {
			native, nativeOutcome = nil, NativeDiscarded
			cp.Entry.Native = nil
		} else {
			cp = alt
		}
	}
	if ok, why := p.Accept(cp); !ok {
		if p.Trigger == TriggerUser {
			// Asked for, but nothing before the keep window is worth a
			// capsule: a no-op, not a failure (R-G8).
			return CompactionResult{Outcome: OutcomeSkipped, Reason: "nothing worth compacting: " + why, TokensBefore: p.TokensBefore, Generated: true,
				NativeOutcome: nativeOutcome, NativeDurationMs: nativeMs}
		}
		if !IsSoft(p.Trigger) {
			// Forced: not done is a failure, said with why (R-C7).
			return CompactionResult{Outcome: OutcomeFailed, Reason: why, TokensBefore: p.TokensBefore}
		}
		return CompactionResult{Outcome: OutcomeSkipped, Reason: why, TokensBefore: p.TokensBefore, Generated: true,
			Declined: &Declined{Before: p.TokensBefore, After: cp.TokensAfter}, NativeOutcome: nativeOutcome, NativeDurationMs: nativeMs}
	}
	switch err := in.Appender.AppendCapsule(ctx, p.ExpectedLeaf, cp.Entry); {
	case errors.Is(err, ErrStale):
		return CompactionResult{Outcome: OutcomeStale, Reason: "the session changed while the capsule was built; nothing was appended", TokensBefore: p.TokensBefore, NativeOutcome: nativeOutcome, NativeDurationMs: nativeMs}
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return CompactionResult{Outcome: OutcomeCancelled, Reason: "cancelled; nothing was appended", TokensBefore: p.TokensBefore, NativeOutcome: nativeOutcome, NativeDurationMs: nativeMs}
	case err != nil:
		return CompactionResult{Outcome: OutcomeFailed, Reason: "append capsule: " + err.Error(), TokensBefore: p.TokensBefore, NativeOutcome: nativeOutcome, NativeDurationMs: nativeMs}
	}
	if notice != "" && in.Hooks.Warn != nil {
		in.Hooks.Warn(notice)
	}
	reclaimed := p.TokensBefore - cp.TokensAfter
	res := CompactionResult{
		Generated:        true,
		Outcome:          OutcomeCompleted,
		TokensBefore:     p.TokensBefore,
		TokensAfter:      cp.TokensAfter,
		ReclaimedTokens:  reclaimed,
		CheckpointID:     cp.Entry.CheckpointID,
		Quality:          cp.Entry.Quality,
		Native:           native != nil,
		NativeOutcome:    nativeOutcome,
		NativeDurationMs: nativeMs,
	}
	if p.TokensBefore > 0 {
		res.ReclaimedRatio = float64(reclaimed) / float64(p.TokensBefore)
	}
	if degraded {
		res.Reason = "summary model fallback: " + strings.TrimSuffix(notice, ".")
	}
	return res
}

// predict is the stricter pre-generation check of a soft compaction (beyond
// R-R1): the deterministic capsule of the plan — the previous capsule
// rolled in, the exact artifacts, the user's own words — is built and
// measured as R-R2 would measure it, before any summary model or native
// compaction is asked. A capsule the exact check would decline is not
// worth a paid request whose answer is thrown away: the compaction is
// skipped at once (declined is its result). Otherwise predicted is that
// capsule, which is the capsule itself when no summary is asked for.
// Forced and explicit compactions are not subject to R-R2, so they are
// not predicted.
func (b *Barrier) predict(in RunInput) (predicted *Capsule, declined *CompactionResult) {
	p := in.Plan
	if !IsSoft(p.Trigger) {
		return nil, nil
	}
	cp, err := BuildCapsule(in.Transcript, b.Counter, p, nil, false)
	if err != nil {
		// The build after generation reports the same error.
		return nil, nil
	}
	if ok, why := p.Accept(cp); !ok {
		return nil, &CompactionResult{Outcome: OutcomeSkipped, Reason: "predicted before generating: " + why, TokensBefore: p.TokensBefore,
			Declined: &Declined{Before: p.TokensBefore, After: cp.TokensAfter}}
	}
	return &cp, nil
}

// summarize asks the summary model, in chunks when the history is larger
// than its window, under the timeoutMs deadline. A summarizer that ignores
// its context cannot hold the barrier: the wait ends at the deadline.
func (b *Barrier) summarize(ctx context.Context, in RunInput, report *reporter) (capsule.State, error) {
	p := in.Plan
	sctx, cancel := context.WithTimeout(ctx, time.Duration(p.Config.TimeoutMs)*time.Millisecond)
	defer cancel()
	chunks, err := RenderHistory(in.Transcript, p.Base.Start, p.Cut.FirstKept, b.SummaryWindowChars)
	if err != nil {
		return capsule.State{}, err
	}
	type answer struct {
		st  capsule.State
		err error
	}
	done := make(chan answer, 1)
	work := b.Work
	if work == nil {
		work = new(conc.WaitGroup)
	}
	work.Go(func() { // ends when the summarizer returns; its result is dropped after the deadline
		var a answer
		if r := panics.Try(func() { a.st, a.err = b.summarizeChunks(sctx, p, chunks, report) }); r != nil {
			a.err = r.AsError()
		}
		done <- a
	})
	select {
	case a := <-done:
		if a.err != nil && sctx.Err() != nil {
			return capsule.State{}, sctx.Err()
		}
		return a.st, a.err
	case <-sctx.Done():
		return capsule.State{}, sctx.Err()
	}
}

func (b *Barrier) summarizeChunks(ctx context.Context, p Plan, chunks []string, report *reporter) (capsule.State, error) {
	prev := p.Base.State
	var acc *capsule.State
	for i, chunk := range chunks {
		req := SummaryRequest{
			System:          SummarySystemPrompt,
			Prompt:          SummaryPrompt(SummaryPromptOptions{Previous: prev, History: chunk, Instructions: p.Instructions, Part: i + 1, Parts: len(chunks)}),
			MaxOutputTokens: b.SummaryMaxOutputTokens,
		}
		report.part(i+1, len(chunks))
		md, err := b.Summarizer.Summarize(ctx, req, report.delta)
		if err != nil {
			return capsule.State{}, err
		}
		st, err := ParseSummary(md)
		if err != nil {
			return capsule.State{}, err
		}
		if acc == nil {
			acc = &st
		} else {
			merged := Roll(*acc, st)
			acc = &merged
		}
		prev = acc
	}
	if acc == nil {
		return capsule.State{}, ErrUnusableSummary
	}
	return *acc, nil
}

func (b *Barrier) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// Skipped is the result of a compaction that did not run past its plan:
// nothing to compact, or a pre-generation gate declined.
func Skipped(operationID, trigger, reason string, tokensBefore int) CompactionResult {
	r := CompactionResult{OperationID: operationID, Trigger: trigger, Outcome: OutcomeSkipped, Reason: reason, TokensBefore: tokensBefore}
	r.Line = ResultLine(r)
	return r
}

// Failed is the result of a compaction that could not run at all.
func Failed(operationID, trigger, reason string, tokensBefore int) CompactionResult {
	r := CompactionResult{OperationID: operationID, Trigger: trigger, Outcome: OutcomeFailed, Reason: reason, TokensBefore: tokensBefore}
	r.Line = ResultLine(r)
	return r
}

// ResultLine is the one line that remains after a barrier (R-B3), naming
// trigger, tokens before → after, reclaimed share and checkpoint id, e.g.
// "Compacted context · auto_threshold · 45,210 → 14,870 tokens (67% reclaimed) · ck_8f2a1c".
func ResultLine(r CompactionResult) string {
	if r.Outcome == OutcomeCompleted {
		share := fmt.Sprintf("%d%% reclaimed", int(r.ReclaimedRatio*100+0.5))
		if r.ReclaimedRatio < 0 {
			// An explicit or forced compaction of a tiny history can grow
			// the input (the capsule outweighs what it replaced).
			share = fmt.Sprintf("grew %d%%", int(-r.ReclaimedRatio*100+0.5))
		}
		line := fmt.Sprintf("Compacted context · %s · %s → %s tokens (%s) · %s",
			r.Trigger, text.Thousands(r.TokensBefore), text.Thousands(r.TokensAfter), share, r.CheckpointID)
		if r.Quality == capsule.QualityDegraded {
			line += " · degraded (fallback capsule)"
		}
		if r.Native {
			line += " · native"
		}
		return line
	}
	// Any other outcome says what happened and why in words first, with
	// no token figures: "→ 0" would read as a context emptied.
	word := strings.ToUpper(r.Outcome[:min(1, len(r.Outcome))]) + r.Outcome[min(1, len(r.Outcome)):]
	line := fmt.Sprintf("%s · %s", word, r.Trigger)
	if r.Reason != "" {
		line = fmt.Sprintf("%s: %s · %s", word, r.Reason, r.Trigger)
	}
	if r.Outcome == OutcomeSkipped {
		// Whether a skip cost a summary request is what the user pays for.
		if r.SummaryAsked {
			line += " · the summary model was asked"
		} else {
			line += " · the summary model was not asked"
		}
	}
	return line
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return text.Clip(s, 200)
}
