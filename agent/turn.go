package agent

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/soba-agent/soba-lsp/internal/id"
	"github.com/soba-agent/soba-lsp/internal/text"

	"github.com/soba-agent/soba-lsp/agent/provider"
	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/session"
)

// maxToolRounds bounds the inferences of one turn.
const maxToolRounds = 100

// ErrTooManyModelCalls ends a turn that reached maxToolRounds inferences
// without a final answer; its text is the turn_end event's error, which a
// front end may map (ACP's max_turn_requests).
var ErrTooManyModelCalls = fmt.Errorf("the turn stopped after %d model calls without a final answer", maxToolRounds)

// maxToolResultChars shortens tool results in the model input.
const maxToolResultChars = 24000

// Prompt starts a turn, or queues it while a turn or a compaction runs
// (R-B3). It returns at once; the turn's progress arrives as events.
func (a *Agent) Prompt(text string) (turnID string, queued bool, err error) {
	if strings.TrimSpace(text) == "" {
		return "", false, errors.New("soba.prompt: text is empty")
	}
	if err := a.fits("the prompt", text); err != nil {
		return "", false, err
	}
	turnID = id.Turn()
	if e := a.do(func(st *state) {
		if st.closing {
			err = ErrClosed
			return
		}
		if st.phase != phaseIdle || len(st.queue) > 0 {
			st.queue = append(st.queue, queuedPrompt{turnID: turnID, text: text})
			queued = true
			a.opt.Notifier.Event(Event{TurnID: turnID, Type: "queued"})
			if c := st.compaction; c != nil && c.progress != nil {
				c.progress.promptWaits()
			}
			return
		}
		err = a.startTurn(st, turnID, text)
	}); e != nil {
		return "", false, e
	}
	return turnID, queued, err
}

// startTurn begins a turn (idle → generating); the loop runs on its own
// goroutine.
func (a *Agent) startTurn(st *state, turnID, text string) error {
	if err := st.transition(phaseGenerating); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	st.turn = &turnState{id: turnID, cancel: cancel}
	a.opt.Notifier.Event(Event{TurnID: turnID, Type: "turn_start"})
	a.work.Go(func() {
		defer cancel()
		outcome, ferr := "completed", error(nil)
		if r := recoverTurn(func() { outcome, ferr = a.runTurn(ctx, turnID, text) }); r != nil {
			outcome, ferr = "failed", r
		}
		a.endTurn(turnID, outcome, ferr)
	})
	return nil
}

// endTurn records the end of a turn (→ idle): the turn_complete intent
// (R-G6), the event, and then a pending explicit compact or the next queued
// prompt.
func (a *Agent) endTurn(turnID, outcome string, ferr error) {
	_ = a.do(func(st *state) {
		ev := Event{TurnID: turnID, Type: "turn_end", Outcome: outcome}
		if st.turn != nil && st.turn.id == turnID {
			ev.Usage = st.turn.usage
		}
		if ferr != nil {
			ev.Error = ferr.Error()
		}
		if c := st.compaction; c != nil && st.phase == phaseTurnCompacting {
			// A panic ended the turn inside its barrier: the compaction
			// ends with it.
			c.cancel()
			st.resolveWaiters(c.operationID, compaction.Failed(c.operationID, c.trigger, "the turn ended before its compaction did", 0))
		}
		a.step(st, phaseIdle)
		if outcome == "completed" {
			eff, _ := st.effective()
			if compaction.TurnCompleteIntent(eff, a.opt.Compaction, st.autoCompact, st.declined) {
				st.intents.Add(compaction.TriggerTurnComplete)
			}
		}
		a.opt.Notifier.Event(ev)
		if st.closing {
			return
		}
		a.settle(st)
		a.publishBudget(st)
	})
}

// settle starts, when the session is idle, what waited for it: an explicit
// compact asked for during the turn (or a capsule's summary) first, then
// the next queued prompt.
func (a *Agent) settle(st *state) {
	if st.phase != phaseIdle || st.closing {
		return
	}
	if st.intents.Has(compaction.TriggerUser) {
		st.intents.Consume(compaction.TriggerUser)
		a.startIdleCompact(st, compaction.TriggerUser, st.instructions)
		return
	}
	a.next(st)
}

// next starts the next queued prompt, if any.
func (a *Agent) next(st *state) {
	if st.phase != phaseIdle || len(st.queue) == 0 || st.closing {
		return
	}
	q := st.queue[0]
	st.queue = st.queue[1:]
	if err := a.startTurn(st, q.turnID, q.text); err != nil {
		a.opt.Notifier.Event(Event{TurnID: q.turnID, Type: "turn_end", Outcome: "failed", Error: err.Error()})
	}
}

// runTurn is the turn loop: user message, then preflight → inference →
// tools until a final answer.
func (a *Agent) runTurn(ctx context.Context, turnID, text string) (string, error) {
	var err error
	if e := a.do(func(st *state) {
		_, err = a.appendEntry(st, session.Entry{Type: session.TypeUser, User: &session.UserMessage{Text: text}})
		a.publishBudget(st)
	}); e != nil {
		return "failed", e
	}
	if err != nil {
		return "failed", err
	}
	if a.opt.Model == nil {
		msg := "no model server is configured"
		if a.opt.ModelUnavailable != "" {
			msg = a.opt.ModelUnavailable
		}
		return "failed", errors.New(msg)
	}
	for round := 0; round < maxToolRounds; round++ {
		if ctx.Err() != nil {
			return "cancelled", nil
		}
		if err := a.preflight(ctx, turnID); err != nil {
			if ctx.Err() != nil {
				return "cancelled", nil
			}
			return "failed", err
		}
		resp, err := a.infer(ctx, turnID)
		if ctx.Err() != nil {
			return "cancelled", nil
		}
		if err != nil {
			return "failed", err
		}
		if len(resp.ToolCalls) == 0 {
			return "completed", nil
		}
		for _, call := range resp.ToolCalls {
			if ctx.Err() != nil {
				// The calls not run get an explicit result so the
				// transcript never holds an orphan call.
				a.appendToolResult(turnID, session.ToolCall{ID: call.ID, Name: call.Name, Arguments: call.Arguments}, toolRun{content: "interrupted: the turn was cancelled before this call ran"})
				continue
			}
			a.runTool(ctx, turnID, call)
		}
	}
	return "failed", ErrTooManyModelCalls
}

// preflight runs before every inference (R-B2): it picks at most one
// trigger, plans, and waits for the compaction's terminal outcome; after a
// forced compaction the request must fit the hard limit or the turn fails
// closed (R-G4).
func (a *Agent) preflight(ctx context.Context, turnID string) error {
	var (
		plan compaction.Plan
		run  *compactionRun
		due  bool
		res  compaction.CompactionResult
		err  error
	)
	if e := a.do(func(st *state) {
		eff, _ := st.effective()
		d := compaction.Preflight(compaction.PreflightInput{Effective: eff, Config: a.opt.Compaction, AutoCompact: st.autoCompact,
			Pending: st.intents, SoftAttempted: st.turn != nil && st.turn.softAttempted, Declined: st.declined})
		for _, c := range d.Consume {
			st.intents.Consume(c)
		}
		if !d.Due() {
			if len(d.Consume) > 0 {
				a.recordConsumed(st, d.Consume)
			}
			if h := a.opt.Compaction.HardLimit(); eff > h {
				err = a.overLimitError(st, eff, h, overNothingToCompact)
			}
			return
		}
		if compaction.IsSoft(d.Trigger) && st.turn != nil {
			st.turn.softAttempted = true
		}
		// The consumed intents are recorded before the plan freezes the
		// expected leaf: appended after it, they made every milestone and
		// plan-pivot compaction stale (R-B5) before it could append.
		if len(d.Consume) > 0 {
			a.recordConsumed(st, d.Consume)
		}
		plan, run, res, due = a.planCompaction(st, d.Trigger, st.instructions)
	}); e != nil {
		return e
	}
	if err != nil {
		return err
	}
	if !due {
		if res.Outcome != "" {
			a.finishCompaction(res, plan)
		}
		// Not run: nothing older to compact (skipped), or the plan found
		// that what must stay is over the limit by itself (failed).
		how := overNothingToCompact
		if res.Outcome == compaction.OutcomeFailed {
			how = overCannotCompact
		}
		return a.checkFits(how)
	}
	res = a.runCompaction(ctx, plan, run)
	a.finishCompaction(res, plan)
	if res.Outcome == compaction.OutcomeCancelled && ctx.Err() != nil {
		return ctx.Err()
	}
	return a.checkFits(overCompacted)
}

// checkFits fails closed when the next request is known to exceed the hard
// limit (R-G4): it is never sent. how says what compacting did before
// the check (overCompacted, overCannotCompact, overNothingToCompact).
func (a *Agent) checkFits(how string) error {
	var err error
	_ = a.do(func(st *state) {
		eff, _ := st.effective()
		if h := a.opt.Compaction.HardLimit(); eff > h {
			err = a.overLimitError(st, eff, h, how)
		}
	})
	return err
}

// overLimitError is the failure of a turn whose input is over the hard
// limit (R-G4, issue 26 point 5): the user reads what happened and what to
// do (msgOverLimit); the engine's figures go to the log and soba.budget.
// It runs under the state's lock.
func (a *Agent) overLimitError(st *state, eff, h int, how string) error {
	engine := fmt.Sprintf("the request needs %d tokens, over the hard limit of %d; nothing was sent", eff, h)
	if how != overNothingToCompact {
		engine = fmt.Sprintf("the request needs %d tokens, over the hard limit of %d, and compaction could not bring it under; nothing was sent", eff, h)
	}
	a.opt.Notifier.Log("soba: " + engine)
	return &UserError{Message: msgOverLimit(overLimitOf(st, eff, h, how)), Err: errors.New(engine)}
}

// recordConsumed notes consumed intents in the transcript so resume does
// not restore them.
func (a *Agent) recordConsumed(st *state, consumed []string) {
	var list []string
	for _, c := range consumed {
		if c == compaction.TriggerMilestone || c == compaction.TriggerPlanPivot {
			list = append(list, c)
		}
	}
	if len(list) > 0 {
		_, _ = a.appendEntry(st, session.Entry{Type: session.TypeSettings, Settings: &session.Settings{ConsumedIntents: list}})
	}
}

// planCompaction freezes a plan under the state's lock (R-B2) and moves the
// session into a compacting phase: turn_compacting from a turn, compacting
// between turns. A user or hard_limit plan answers the unplanned compact
// requests, which now wait on its operation id. When nothing can be
// compacted it returns the terminal result at once (due false); the caller
// records it with finishCompaction.
func (a *Agent) planCompaction(st *state, trigger, instructions string) (compaction.Plan, *compactionRun, compaction.CompactionResult, bool) {
	opID := id.Operation()
	explicit := trigger == compaction.TriggerUser || trigger == compaction.TriggerHardLimit
	var starter *compactWaiter
	if explicit {
		starter = st.planWaiters(opID)
		st.instructions = ""
	}
	view := newPathView(st.store, st.path, min(st.base.Start, len(st.path)), st.latest)
	req := compaction.PlanRequest{OperationID: opID, CheckpointID: id.Checkpoint(), Trigger: trigger, Config: a.opt.Compaction,
		SystemTokens: st.systemTokens, AfterSystemTokens: a.systemTokens(st.activeSkills), ExpectedLeaf: st.store.Leaf(), Instructions: instructions, Extras: a.extras(st)}
	p, err := compaction.MakePlan(view, a.opt.Counter, req)
	if err != nil {
		p.PlanRequest = req
		var skip *compaction.Skip
		if errors.As(err, &skip) {
			return p, nil, compaction.Skipped(opID, trigger, skip.Reason, p.TokensBefore), false
		}
		return p, nil, compaction.Failed(opID, trigger, err.Error(), p.TokensBefore), false
	}
	to := phaseCompacting
	title := TitleCompacting
	if st.phase.inTurn() || len(st.queue) > 0 {
		title = TitleBeforeResponse
	}
	if st.phase.inTurn() {
		to = phaseTurnCompacting
	}
	if err := st.transition(to); err != nil {
		return p, nil, compaction.Skipped(opID, trigger, err.Error(), p.TokensBefore), false
	}
	ctx, cancel := context.WithCancel(context.Background())
	eff, src := st.effective()
	prog := newProgress(a.opt.Notifier, opID, trigger, title)
	run := &compactionRun{view: view, ctx: ctx, source: src, sessionID: st.sessionID, flight: st.flight, cachedTokens: st.cachedTokens, progress: prog}
	st.compaction = &runningCompaction{operationID: opID, trigger: trigger, cancel: cancel, explicit: explicit, starter: starter, effectiveBefore: eff, progress: prog}
	a.opt.Notifier.Compaction(CompactionEvent{Phase: "start", OperationID: opID, Trigger: trigger, Title: title})
	a.publishBudget(st)
	return p, run, compaction.CompactionResult{}, true
}

// compactionRun is what a planned compaction runs with, outside the lock.
type compactionRun struct {
	view      compaction.Transcript
	ctx       context.Context // cancelled by soba.cancel or the progress cancel
	source    string
	sessionID string
	flight    compaction.FlightRecorder
	// cachedTokens is the last request's cached input, for the flight record.
	cachedTokens int
	progress     *compactionProgress
}

// runCompaction runs a planned compaction outside the lock, to its terminal
// outcome. turnCtx, when set, also cancels it (the turn was cancelled).
func (a *Agent) runCompaction(turnCtx context.Context, p compaction.Plan, run *compactionRun) compaction.CompactionResult {
	ctx := run.ctx
	if turnCtx != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		stop := context.AfterFunc(turnCtx, cancel)
		defer stop()
		defer cancel()
	}
	b := *a.barrier
	b.Flight = run.flight
	prog := run.progress
	prog.start(time.Now())
	defer prog.stop()
	return b.Run(ctx, compaction.RunInput{Plan: p, Transcript: run.view, Appender: appender{a}, Source: run.source, SessionID: run.sessionID, CachedTokens: run.cachedTokens,
		Hooks: compaction.Hooks{Progress: prog.update, Summary: prog.summary, Warn: a.opt.Notifier.Warn}})
}

// finishCompaction records a terminal outcome: the phase goes back to the
// turn (generating) or to idle, then the result line, the end event, the
// requests waiting on this operation, and the budget. Between turns, what
// waited for the session to be idle starts.
func (a *Agent) finishCompaction(res compaction.CompactionResult, p compaction.Plan) {
	_ = a.do(func(st *state) {
		if c := st.compaction; c != nil && c.operationID == res.OperationID {
			c.cancel()
			if d := res.Declined; d != nil && compaction.IsSoft(p.Trigger) {
				// Soft triggers wait until this could pass (Declined.Blocks).
				st.declined = &compaction.Declined{Before: d.Before, After: d.After, Effective: c.effectiveBefore}
			}
			if res.Outcome == compaction.OutcomeCompleted {
				res = inBudgetTerms(res, c.effectiveBefore, st)
			}
			to := phaseIdle
			if st.phase == phaseTurnCompacting {
				to = phaseGenerating
			}
			a.step(st, to)
		}
		r := res
		st.lastResult = &r
		if res.Outcome == compaction.OutcomeCompleted && st.appended != nil && st.appended.CheckpointID == res.CheckpointID {
			a.mirror(st, *st.appended, p)
		}
		st.appended = nil
		// The end notification is queued before the waiting requests are
		// answered, so an editor never gets the answer first.
		a.opt.Notifier.Compaction(CompactionEvent{Phase: "end", OperationID: res.OperationID, Trigger: res.Trigger, CompactionResult: &r})
		a.opt.Notifier.Log(res.Line)
		st.resolveWaiters(res.OperationID, res)
		a.settle(st)
		a.publishBudget(st)
	})
}

// appender appends capsules under the state's lock, checking the abort
// signal and the expected leaf atomically with the append (R-B5).
type appender struct{ a *Agent }

func (ap appender) AppendCapsule(ctx context.Context, expectedLeaf string, c session.Capsule) error {
	var err error
	if e := ap.a.do(func(st *state) {
		if err = ctx.Err(); err != nil {
			return
		}
		if st.store.Leaf() != expectedLeaf {
			err = compaction.ErrStale
			return
		}
		if _, err = ap.a.appendEntry(st, session.Entry{Type: session.TypeCapsule, Capsule: &c}); err == nil {
			st.appended = &c
		}
	}); e != nil {
		return e
	}
	return err
}

// infer builds the model input, checks it against the hard limit, and
// streams one inference; a real context overflow runs one forced recovery
// compaction and one retry in the turn (R-G9).
func (a *Agent) infer(ctx context.Context, turnID string) (provider.Response, error) {
	nativeRetried := false
	// loweredOutput is the output budget of the one retry after an
	// overflow the requested output caused (0: the configured one).
	loweredOutput := 0
	for attempt := 0; ; attempt++ {
		req, native, checkpoint, err := a.buildRequest()
		if err != nil {
			return provider.Response{}, err
		}
		if loweredOutput > 0 {
			req.MaxOutputTokens = loweredOutput
		}
		reasoning := false
		for _, m := range req.Messages {
			reasoning = reasoning || (m.Role == provider.RoleAssistant && len(m.Native) > 0)
		}
		resp, err := a.opt.Model.Stream(ctx, req, func(ev provider.Event) {
			switch {
			case ev.Kind == provider.EventText && ev.Delta != "":
				a.opt.Notifier.Event(Event{TurnID: turnID, Type: "text", Delta: ev.Delta})
			case ev.Kind == provider.EventThinking && ev.Delta != "":
				// Shown folded, apart from the answer (R-C9).
				a.opt.Notifier.Event(Event{TurnID: turnID, Type: "thinking", Delta: ev.Delta, Moved: ev.Moved})
			}
		})
		if ctx.Err() != nil {
			a.appendAssistant(turnID, provider.Response{}, "cancelled")
			return provider.Response{}, ctx.Err()
		}
		if (native != nil || reasoning) && !nativeRetried && nativeRejected(err) {
			// The provider refused a native item it was sent: what the
			// request carried is marked unusable (an entry, so resume
			// knows) and the request goes once more without it, with the
			// portable capsule (R-N2).
			nativeRetried = true
			ck := ""
			if native != nil {
				ck = checkpoint
			}
			if merr := a.markNativeRejected(ck, reasoning, err); merr != nil {
				a.appendAssistant(turnID, provider.Response{}, err.Error())
				return provider.Response{}, merr
			}
			attempt--
			continue
		}
		var of *provider.OverflowError
		if errors.As(err, &of) {
			a.learnOverflow(of)
			if fit := lowerOutputTo(of, req.MaxOutputTokens); fit > 0 && loweredOutput == 0 {
				// The server's figures show the prompt fits and only the
				// requested output does not: one retry with the output
				// budget that fits, no compaction.
				loweredOutput = fit
				a.opt.Notifier.Log(fmt.Sprintf("soba: %s; retrying once with max_tokens %d (the server's window is %d tokens, model.contextWindow is %d)",
					err, fit, of.LimitTokens, a.opt.Compaction.ContextWindow))
				attempt--
				continue
			}
			tried := false
			_ = a.do(func(st *state) {
				if st.turn != nil {
					tried = st.turn.overflowTried
					st.turn.overflowTried = true
				}
			})
			if tried || attempt > 0 {
				a.appendAssistant(turnID, provider.Response{}, err.Error())
				engine := fmt.Errorf("%w; the recovery compaction already ran in this turn, so the request is not sent again", err)
				a.opt.Notifier.Log("soba: " + engine.Error())
				return provider.Response{}, &UserError{Message: msgOverflowAgain(true, of.LimitTokens, a.opt.Compaction.ContextWindow), Err: engine}
			}
			if cerr := a.recoverOverflow(ctx); cerr != nil {
				a.appendAssistant(turnID, provider.Response{}, err.Error())
				if ctx.Err() != nil {
					return provider.Response{}, cerr
				}
				a.opt.Notifier.Log("soba: " + cerr.Error())
				return provider.Response{}, &UserError{Message: msgOverflowAgain(false, of.LimitTokens, a.opt.Compaction.ContextWindow), Err: cerr}
			}
			continue
		}
		var qe *provider.QuotaError
		if errors.As(err, &qe) {
			// Never retried (waiting does not help); the user reads why.
			a.appendAssistant(turnID, provider.Response{}, err.Error())
			a.opt.Notifier.Log("soba: " + err.Error())
			return provider.Response{}, &UserError{Message: msgQuota(qe.Provider, qe.Message), Err: err}
		}
		if err != nil {
			a.appendAssistant(turnID, provider.Response{}, err.Error())
			return provider.Response{}, err
		}
		a.appendAssistant(turnID, resp, "")
		return resp, nil
	}
}

// lowerOutputTo is the output budget of the retry after an overflow the
// requested output caused: what the server says fits beside the prompt,
// when that is below what was sent and leaves room for an answer
// (minLoweredOutput); 0 otherwise, and the overflow is answered as one
// caused by the prompt (R-G9).
func lowerOutputTo(of *provider.OverflowError, sent int) int {
	fit := of.FitsOutput()
	if fit <= 0 || (sent > 0 && fit >= sent) || fit < minLoweredOutput(sent) {
		return 0
	}
	return fit
}

// minLoweredOutput is the least output budget worth a retry: 1,024
// tokens, or half of what was asked for when that is smaller. Below it the
// prompt is what must shrink.
func minLoweredOutput(sent int) int {
	if sent > 0 && sent/2 < 1024 {
		return sent / 2
	}
	return 1024
}

// recoverOverflow runs the forced context_overflow compaction (R-G9).
func (a *Agent) recoverOverflow(ctx context.Context) error {
	var (
		p   compaction.Plan
		run *compactionRun
		res compaction.CompactionResult
		due bool
	)
	if err := a.do(func(st *state) {
		p, run, res, due = a.planCompaction(st, compaction.TriggerContextOverflow, "")
	}); err != nil {
		return err
	}
	if due {
		res = a.runCompaction(ctx, p, run)
	}
	a.finishCompaction(res, p)
	if res.Outcome != compaction.OutcomeCompleted {
		return fmt.Errorf("the provider reported a context overflow and the recovery compaction ended %s (%s); the request is not sent again", res.Outcome, res.Reason)
	}
	return nil
}

// learnOverflow calibrates the estimate from an overflow error that states
// the prompt's size (the whole current input).
func (a *Agent) learnOverflow(of *provider.OverflowError) {
	if of.StatedTokens <= 0 {
		return
	}
	_ = a.do(func(st *state) {
		st.meter.LearnOverflow(of.StatedTokens)
		st.meter.Invalidate() // the provider's figure says our basis was wrong
	})
}

// buildRequest builds the provider request from the model input view
// (R-M1) and fails closed when it is known to exceed the hard limit (R-G4).
//
// native is the native continuation the request carries in place of the
// capsule's text (R-N2), nil when none; checkpoint the capsule's id.
func (a *Agent) buildRequest() (req provider.Request, native *capsule.Native, checkpoint string, err error) {
	if e := a.do(func(st *state) {
		// The system prompt the request carries is the one the budget
		// counts, also after a skill was added or edited on disk.
		system := a.systemPrompt(promptSkills(st.base))
		if system != st.system {
			a.setSystemPrompt(st, system)
			st.meter.SetBase(st.systemTokens)
		}
		// The limit first: an input that cannot be sent is never built
		// (R-G4), so a session over it costs no decoding here.
		eff, _ := st.effective()
		if h := a.opt.Compaction.HardLimit(); eff > h {
			err = a.overLimitError(st, eff, h, overCompacted)
			return
		}
		lp := newPathView(st.store, st.path, 0, st.latest)
		var in compaction.Input
		in, err = compaction.BuildInput(lp, compaction.InputOptions{Provider: a.opt.ProviderName, Model: a.opt.ModelName,
			MaxToolResultChars: maxToolResultChars, MaxTokens: a.inputBound(), Cache: st.decoded})
		if err != nil {
			return
		}
		req = provider.Request{Model: a.opt.ModelName, System: system, MaxOutputTokens: a.opt.Compaction.MaxOutputTokens,
			ContextWindow: a.opt.Compaction.ContextWindow, ExpectedPromptTokens: eff, CacheKey: cacheKey(st.sessionID)}
		for _, t := range a.toolSpecs() {
			req.Tools = append(req.Tools, provider.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
		}
		req.Messages = requestMessages(in)
		native = in.Native
		checkpoint = in.CheckpointID
	}); e != nil {
		return req, nil, "", e
	}
	return req, native, checkpoint, err
}

// appendAssistant records a response (or a failed inference) and learns
// from its usage.
func (a *Agent) appendAssistant(turnID string, resp provider.Response, failure string) {
	_ = a.do(func(st *state) {
		as := &session.Assistant{Text: resp.Text, Thinking: resp.Thinking, Provider: a.opt.ProviderName, Model: a.opt.ModelName, StopReason: resp.StopReason, Error: failure}
		for _, c := range resp.ToolCalls {
			as.ToolCalls = append(as.ToolCalls, session.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		if resp.Usage != nil {
			as.Usage = &session.Usage{InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens, CachedTokens: resp.Usage.CachedTokens}
		}
		if len(resp.Native) > 0 {
			// The answer's own items (encrypted reasoning) go back with it
			// to this provider and model only.
			as.Native = &capsule.Native{Provider: a.opt.ProviderName, Model: a.opt.ModelName, Items: resp.Native}
		}
		_, err := a.appendEntry(st, session.Entry{Type: session.TypeAssistant, Assistant: as})
		if err != nil {
			a.opt.Notifier.Warn("soba: could not record the response: " + err.Error())
			return
		}
		if as.Usage != nil {
			// The provider's count of this request measures the input from
			// now on and calibrates later estimates (R-O1).
			// The completion counts the thinking too (R-C9).
			st.meter.UsageThinking(as.Usage.InputTokens, as.Usage.OutputTokens, a.countThinking(resp.Thinking))
			st.cachedTokens = as.Usage.CachedTokens
			if t := st.turn; t != nil && t.id == turnID {
				if t.usage == nil {
					t.usage = &TurnUsage{}
				}
				t.usage.Input += as.Usage.InputTokens
				t.usage.Output += as.Usage.OutputTokens
				t.usage.Cached += as.Usage.CachedTokens
			}
		}
		a.publishBudget(st)
	})
}

// countThinking estimates a response's thinking, 0 when none.
func (a *Agent) countThinking(thinking string) int {
	if thinking == "" || a.opt.Counter == nil {
		return 0
	}
	return a.opt.Counter.Count(thinking)
}

// runTool runs one tool call through the agent's runner and records its
// result before the next inference: the live runner (runLiveTool), or a
// recording's in replay (recordedTools).
func (a *Agent) runTool(ctx context.Context, turnID string, call provider.ToolCall) {
	a.opt.Notifier.Event(Event{TurnID: turnID, Type: "tool_call", ID: call.ID, Name: call.Name, Arguments: call.Arguments})
	a.runCall(ctx, turnID, session.ToolCall{ID: call.ID, Name: call.Name, Arguments: call.Arguments})
}

// runLiveTool asks the approval rule (decideApproval), asks the user when
// it says so, and runs the tool.
func (a *Agent) runLiveTool(ctx context.Context, turnID string, sc session.ToolCall) {
	scope := a.approvalScope(sc.Name)
	allowed := false
	_ = a.do(func(st *state) { allowed = st.allowSession[scope] })
	v := decideApproval(a.approvalCaseOf(sc, allowed))
	approval := "" // the user's answer, recorded with the result
	switch v.Verdict {
	case VerdictRefuse:
		a.appendToolResult(turnID, sc, fail("%s", v.Why))
		return
	case VerdictAsk, VerdictAskEveryTime:
		everyTime := v.Verdict == VerdictAskEveryTime
		decision := Deny
		if a.opt.Approver != nil {
			req := a.tools.approvalRequest(sc)
			req.Scope, req.EveryTime = scope, everyTime
			if everyTime {
				req.Why = fmt.Sprintf("Asked every time: %s — %s.", v.Path, strings.TrimSuffix(v.Why, "."))
			}
			d, err := a.opt.Approver.Approve(ctx, req)
			if err == nil {
				decision = d
			}
		}
		switch decision {
		case AllowSession:
			approval = session.ApprovalSession
			// An answer for the session never covers a call asked every
			// time: it allows this one only.
			if !everyTime {
				_ = a.do(func(st *state) { st.allowSession[scope] = true })
			}
		case AllowOnce:
			approval = session.ApprovalOnce
		default:
			a.appendToolResult(turnID, sc, toolRun{content: "denied: the user did not allow this " + sc.Name + " call", approval: session.ApprovalDenied})
			return
		}
	}
	_ = a.do(func(st *state) {
		a.step(st, phaseTool)
		a.publishBudget(st)
	})
	var run toolRun
	if r := recoverTurn(func() { run = a.tools.run(ctx, sc) }); r != nil {
		run = fail("%s: internal error: %v", sc.Name, r)
	}
	run = a.sizer().fit(sc, run)
	_ = a.do(func(st *state) {
		a.step(st, phaseGenerating)
		if run.checkpoint != nil {
			ck, err := a.recordCheckpoint(st, run.checkpoint.Kind, run.checkpoint.Note)
			if err != nil {
				run = fail("checkpoint: %v", err)
			} else {
				run.content = "recorded " + run.checkpoint.Kind + " checkpoint " + ck
			}
		}
		if run.skill != "" {
			// The skill's body reaches the model in this tool result (and
			// the budget counts it there); the system prompt takes it at
			// the next compaction, whose capsule lists it (promptSkills).
			st.activeSkills = appendUnique(st.activeSkills, run.skill)
		}
	})
	run.approval = approval
	a.appendToolResult(turnID, sc, run)
}

// appendToolResult records a tool result linked to its call.
func (a *Agent) appendToolResult(turnID string, call session.ToolCall, run toolRun) {
	ok := run.ok
	summary := run.summary
	if summary == "" {
		summary = firstLineOf(run.content, 160)
	}
	_ = a.do(func(st *state) {
		_, err := a.appendEntry(st, session.Entry{Type: session.TypeToolResult, ToolResult: &session.ToolResult{
			ToolCallID: call.ID, ToolName: call.Name, OK: run.ok, Content: run.content, Artifacts: run.artifacts,
			Summary: run.summary, Approval: run.approval}})
		if err != nil {
			a.opt.Notifier.Warn("soba: could not record a tool result: " + err.Error())
		}
		a.publishBudget(st)
	})
	ev := Event{TurnID: turnID, Type: "tool_result", ID: call.ID, OK: &ok, Summary: summary, Output: run.content}
	if ok && run.artifacts != nil {
		ev.FilesRead = slices.Clone(run.artifacts.FilesRead)
		ev.FilesModified = slices.Clone(run.artifacts.FilesModified)
	}
	a.opt.Notifier.Event(ev)
}

func firstLineOf(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return text.Clip(s, n+len("…"))
}

// recoverTurn runs f and turns a panic into an error, so a bug in one turn
// or tool never ends the server.
func recoverTurn(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v", r)
		}
	}()
	f()
	return nil
}

// mirror applies the Project Memory rule of R-C4 to an appended capsule:
// only an explicit compact whose capsule passed validation and is not
// degraded is mirrored; every other capsule belongs to the session only.
func (a *Agent) mirror(st *state, c session.Capsule, p compaction.Plan) {
	if a.opt.Memory == nil {
		return
	}
	note, err := MirrorCapsule(a.opt.Memory, a.opt.Root, st.sessionID, c, p.Extras, a.opt.Now().UTC())
	switch {
	case err != nil:
		a.opt.Notifier.Warn(err.Error())
	case note != "":
		a.opt.Notifier.Log(note)
	}
}

// MirrorCapsule mirrors a completed capsule to Project Memory when it
// qualifies (R-C4: an explicit compact's full capsule that validates against
// what the session recorded). It returns a note when the capsule was left
// out for failing validation, an error when the mirror failed; both empty
// when it was mirrored or does not qualify. The server and the offline
// compact both mirror through it.
func MirrorCapsule(mem interface {
	Mirror(checkpointID, title string, created time.Time, markdown []byte) (string, error)
}, root, sessionID string, c session.Capsule, recorded compaction.Extras, now time.Time) (note string, err error) {
	if !compaction.ShouldMirror(c.Trigger, c.Quality, nil) {
		return "", nil
	}
	title := c.Title
	if title == "" {
		title = "Explicit compact " + c.CheckpointID
	}
	md := capsule.Render(capsule.Document{Meta: capsule.Meta{CheckpointID: c.CheckpointID, Title: title, Created: now,
		Session: sessionID, Project: filepath.Base(root), Trigger: c.Trigger, Quality: c.Quality}, State: c.State})
	invalid := compaction.ValidateForMemory(c.State, recorded, len(md))
	if !compaction.ShouldMirror(c.Trigger, c.Quality, invalid) {
		return "Project Memory: capsule " + c.CheckpointID + " not mirrored: " + invalid.Error(), nil
	}
	if _, err := mem.Mirror(c.CheckpointID, title, now, md); err != nil {
		return "", errors.New("Project Memory: could not mirror capsule " + c.CheckpointID + ": " + err.Error())
	}
	return "", nil
}

// inBudgetTerms restates a completed result in the budget's measure: the
// engine compares raw estimates (its gates need one basis), while the editor
// shows the effective figure (provider usage or the calibrated estimate).
// Before is the budget at the plan, after the calibrated estimate now.
func inBudgetTerms(res compaction.CompactionResult, before int, st *state) compaction.CompactionResult {
	after, _ := st.effective()
	return res.InBudgetTerms(before, after)
}
