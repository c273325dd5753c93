package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/soba-agent/soba-lsp/internal/id"

	"github.com/sourcegraph/conc/panics"

	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/session"
)

// Compact runs an explicit compaction (R-G8) and returns its terminal
// result. Between turns it runs at once; while a turn runs it runs at that
// turn's next preflight (never concurrently with generation), or right
// after the turn ends. A request that arrives while an explicit compaction
// runs joins it and answers its result. A cancelled compaction is a result,
// not an error.
//
// Cancelling ctx cancels only what this request started: the compaction,
// when this request started it; otherwise the request alone is withdrawn
// (it answers cancelled) and the compaction goes on for the others
// (docs/decisions.md).
func (a *Agent) Compact(ctx context.Context, instructions string) (compaction.CompactionResult, error) {
	var w *compactWaiter
	if err := a.do(func(st *state) {
		if st.closing {
			w = &compactWaiter{done: make(chan compaction.CompactionResult, 1)}
			w.resolve(compaction.Skipped("", compaction.TriggerUser, "the session is closed", 0))
			return
		}
		if c := st.compaction; c != nil && c.explicit {
			// Its plan is frozen: this request's instructions do not apply.
			w = st.addWaiter(c.operationID)
			return
		}
		w = st.addWaiter(unplanned)
		if strings.TrimSpace(instructions) != "" {
			st.instructions = instructions
		}
		if st.phase != phaseIdle {
			st.intents.Add(compaction.TriggerUser)
			a.publishBudget(st)
			return
		}
		a.startIdleCompact(st, compaction.TriggerUser, st.instructions)
	}); err != nil {
		return compaction.CompactionResult{}, err
	}
	select {
	case r := <-w.done:
		return r, nil
	case <-ctx.Done():
		_ = a.do(func(st *state) { a.withdraw(st, w) }) // after Close, w is answered
		return <-w.done, nil
	}
}

// withdraw handles a compact request whose context was cancelled: before its
// compaction is planned the request is withdrawn (the user intent goes when
// no request is left); the request that started a compaction cancels it
// (the terminal result reaches every request waiting on it); any other
// request detaches alone.
func (a *Agent) withdraw(st *state, w *compactWaiter) {
	if w.resolved {
		return
	}
	if c := st.compaction; c != nil && c.operationID == w.op && c.starter == w {
		c.cancel()
		return
	}
	st.removeWaiter(w)
	if w.op == unplanned {
		if len(st.waiters[unplanned]) == 0 {
			st.intents.Consume(compaction.TriggerUser)
			st.instructions = ""
		}
		w.resolve(cancelledRequest("cancelled before it started"))
		a.publishBudget(st)
		return
	}
	w.resolve(cancelledRequest("the request was cancelled; the compaction " + w.op + " it joined goes on"))
}

// cancelledRequest answers a withdrawn compact request: its own outcome,
// with no operation id (the compaction's own result, if one runs, arrives
// in its end notification).
func cancelledRequest(reason string) compaction.CompactionResult {
	r := compaction.CompactionResult{Trigger: compaction.TriggerUser, Outcome: compaction.OutcomeCancelled, Reason: reason}
	r.Line = compaction.ResultLine(r)
	return r
}

// startIdleCompact runs a compaction between turns (idle → compacting).
// Prompts that arrive meanwhile are queued and run after it (R-B3).
func (a *Agent) startIdleCompact(st *state, trigger, instructions string) {
	p, run, res, due := a.planCompaction(st, trigger, instructions)
	if !due {
		// Nothing to run: answer at once, still holding the lock.
		r := res
		st.lastResult = &r
		// The editor hears the compaction's start and end before the
		// request that asked for it is answered.
		a.opt.Notifier.Compaction(CompactionEvent{Phase: "start", OperationID: res.OperationID, Trigger: res.Trigger})
		a.opt.Notifier.Compaction(CompactionEvent{Phase: "end", OperationID: res.OperationID, Trigger: res.Trigger, CompactionResult: &r})
		a.opt.Notifier.Log(res.Line)
		st.resolveWaiters(res.OperationID, res)
		a.next(st)
		return
	}
	a.work.Go(func() {
		var res compaction.CompactionResult
		if r := panics.Try(func() { res = a.runCompaction(nil, p, run) }); r != nil {
			res = compaction.Failed(p.OperationID, p.Trigger, "internal error: "+r.String(), p.TokensBefore)
		}
		a.finishCompaction(res, p) // → idle, then what waited starts
	})
}

// Cancel cancels the running turn (and with it any barrier it waits on),
// or else a compaction running between turns. A cancelled compaction
// appends nothing (R-F2). To stop only a turn's barrier and let the turn
// go on, the editor cancels its progress (CancelCompaction).
func (a *Agent) Cancel() (cancelled bool, what string, err error) {
	what = "none"
	err = a.do(func(st *state) {
		switch {
		case st.turn != nil:
			st.turn.cancel()
			if st.compaction != nil {
				st.compaction.cancel()
			}
			cancelled, what = true, "turn"
		case st.compaction != nil:
			st.compaction.cancel()
			cancelled, what = true, "compaction"
		}
	})
	return cancelled, what, err
}

// CancelCompaction cancels the running compaction with this operation id
// (the editor cancelled its progress).
func (a *Agent) CancelCompaction(operationID string) bool {
	ok := false
	_ = a.do(func(st *state) {
		if st.compaction != nil && st.compaction.operationID == operationID {
			st.compaction.cancel()
			ok = true
		}
	})
	return ok
}

// Checkpoint records a milestone or plan pivot (R-G7) and returns its id.
func (a *Agent) Checkpoint(kind, note string) (string, error) {
	if kind != compaction.TriggerMilestone && kind != compaction.TriggerPlanPivot {
		return "", fmt.Errorf(`kind must be "milestone" or "plan_pivot", got %q`, kind)
	}
	var (
		id  string
		err error
	)
	if e := a.do(func(st *state) { id, err = a.recordCheckpoint(st, kind, note) }); e != nil {
		return "", e
	}
	return id, err
}

func (a *Agent) recordCheckpoint(st *state, kind, note string) (string, error) {
	ck := &session.Checkpoint{CheckpointID: id.Checkpoint(), Kind: kind, Note: note}
	if compaction.MilestoneIntent(kind, a.opt.Compaction, st.autoCompact) {
		ck.Intent = kind
	}
	if _, err := a.appendEntry(st, session.Entry{Type: session.TypeCheckpoint, Checkpoint: ck}); err != nil {
		return "", err
	}
	if ck.Intent != "" {
		st.intents.Add(ck.Intent)
	}
	a.publishBudget(st)
	return ck.CheckpointID, nil
}

// systemPrompt is the system prompt of every request: the agent's role,
// the tools' rules, Project Memory, every skill listed, and the bodies of
// skills (promptSkills) in full.
func (a *Agent) systemPrompt(skills []string) string {
	var b strings.Builder
	b.WriteString("You are SOBA, a coding agent working in the user's workspace through tools. Read before you edit; keep changes small and verify them with the project's tests. Every action is recorded.\n")
	b.WriteString("Paths are relative to the workspace root. Use checkpoint when a piece of work is done (milestone) or the plan changes direction (plan_pivot).\n")
	if a.opt.SystemPrompt != "" {
		b.WriteString("\n")
		b.WriteString(a.opt.SystemPrompt)
		b.WriteString("\n")
	}
	if skills := a.tools.skills.list(); len(skills) > 0 {
		b.WriteString("\nSkills (activate with activate_skill):\n")
		for _, s := range skills {
			fmt.Fprintf(&b, "- %s: %s\n", s.Name, s.Description)
		}
	}
	for _, name := range skills {
		if sk, err := a.tools.skills.load(name); err == nil {
			fmt.Fprintf(&b, "\nActive skill %s:\n%s\n", sk.Name, sk.Body)
		}
	}
	return b.String()
}

func (a *Agent) toolSchemaTokens() int {
	n := 0
	for _, t := range a.toolSpecs() {
		n += a.opt.Counter.Count(t.Name+" "+t.Description+" "+string(t.Parameters)) + 8
	}
	return n
}

var errNoCapsule = errors.New("the session has no capsule yet")
