package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/soba-agent/soba-lsp/compaction"
)

// phase is what the session is doing now. It changes only in
// state.transition; docs/architecture.md ("The agent's phases") draws the diagram.
type phase uint8

const (
	// phaseIdle: no turn and no compaction runs. A prompt starts a turn, an
	// explicit compact starts at once.
	phaseIdle phase = iota
	// phaseGenerating: a turn runs its preflight, streams an inference or
	// records what came back (state.turn is set).
	phaseGenerating
	// phaseTool: a turn runs one tool call (state.turn is set).
	phaseTool
	// phaseTurnCompacting: a turn waits on a compaction barrier, at its
	// preflight or in overflow recovery (state.turn and state.compaction
	// are set). Generation waits (R-B1); prompts queue.
	phaseTurnCompacting
	// phaseCompacting: an explicit compaction runs between turns
	// (state.compaction is set); prompts queue.
	phaseCompacting
	// phaseCapsule: soba.capsule.create writes a summary between turns, as
	// a barrier does (state.compaction is set); prompts queue.
	phaseCapsule
	// phaseClosed: Close ended every turn and compaction and closed the
	// session file; every method answers ErrClosed.
	phaseClosed

	numPhases
)

var phaseNames = [numPhases]string{"idle", "generating", "tool", "turn_compacting", "compacting", "capsule_create", "closed"}

func (p phase) String() string {
	if p < numPhases {
		return phaseNames[p]
	}
	return fmt.Sprintf("phase(%d)", p)
}

// inTurn reports whether a turn runs in this phase.
func (p phase) inTurn() bool {
	return p == phaseGenerating || p == phaseTool || p == phaseTurnCompacting
}

// compacting reports whether a compaction (or a capsule's summary) runs in
// this phase.
func (p phase) compacting() bool {
	return p == phaseTurnCompacting || p == phaseCompacting || p == phaseCapsule
}

// wire is the Budget's state (PROTOCOL.md: idle, generating, tool,
// compacting).
func (p phase) wire() string {
	switch {
	case p == phaseGenerating:
		return compaction.StateGenerating
	case p == phaseTool:
		return compaction.StateTool
	case p.compacting():
		return compaction.StateCompacting
	}
	return compaction.StateIdle
}

// transitions lists, for each phase, the phases it may move to. A turn ends
// from any of its phases: from generating normally, from tool or
// turn_compacting only when a panic ended it there. Every phase that works
// goes back to idle before closed, so Close reaches closed from idle only.
var transitions = [numPhases][]phase{
	phaseIdle:           {phaseGenerating, phaseCompacting, phaseCapsule, phaseClosed},
	phaseGenerating:     {phaseTool, phaseTurnCompacting, phaseIdle},
	phaseTool:           {phaseGenerating, phaseIdle},
	phaseTurnCompacting: {phaseGenerating, phaseIdle},
	phaseCompacting:     {phaseIdle},
	phaseCapsule:        {phaseIdle},
	phaseClosed:         nil,
}

// legal reports whether the table allows from → to.
func legal(from, to phase) bool {
	return from < numPhases && slices.Contains(transitions[from], to)
}

// startsWork reports whether from → to begins new work: a turn, a
// compaction or a capsule's summary. Once Close began, none may.
func startsWork(from, to phase) bool {
	return (from == phaseIdle && to != phaseClosed) || to == phaseTurnCompacting
}

// errClosing refuses new work once Close began.
var errClosing = errors.New("the session is closing")

// illegalTransitions counts the transitions refused as illegal (a bug);
// the package's tests fail when it moves.
var illegalTransitions atomic.Int64

// transition is the only place the phase changes. It refuses a move the
// table does not allow (a bug: the error names both phases) and, once
// Close began (state.closing), every move that would start new work
// (errClosing); closed only follows Close. Leaving a phase drops what it
// carried: state.turn outside the turn's phases, state.compaction outside
// the compacting ones.
func (st *state) transition(to phase) error {
	from := st.phase
	if !legal(from, to) || (to == phaseClosed && !st.closing) {
		illegalTransitions.Add(1)
		return fmt.Errorf("agent: illegal phase transition %s → %s", from, to)
	}
	if st.closing && startsWork(from, to) {
		return errClosing
	}
	st.phase = to
	if !to.inTurn() {
		st.turn = nil
	}
	if !to.compacting() {
		st.compaction = nil
	}
	return nil
}

// unplanned keys the soba.compact requests whose compaction is not planned
// yet: the user intent is pending until the running turn's next preflight,
// or until the session is idle again.
const unplanned = ""

// compactWaiter is one soba.compact request waiting for a terminal result.
// Its fields are guarded by Agent.mu, as the state is.
type compactWaiter struct {
	// op is the operation id of the compaction that answers it, unplanned
	// until one is planned.
	op       string
	done     chan compaction.CompactionResult // buffered: resolve never blocks
	resolved bool
}

func (w *compactWaiter) resolve(r compaction.CompactionResult) {
	if !w.resolved {
		w.resolved = true
		w.done <- r
	}
}

// addWaiter registers a request waiting on op.
func (st *state) addWaiter(op string) *compactWaiter {
	w := &compactWaiter{op: op, done: make(chan compaction.CompactionResult, 1)}
	if st.waiters == nil {
		st.waiters = map[string][]*compactWaiter{}
	}
	st.waiters[op] = append(st.waiters[op], w)
	return w
}

// removeWaiter takes w off its operation's list.
func (st *state) removeWaiter(w *compactWaiter) {
	ws := slices.DeleteFunc(st.waiters[w.op], func(x *compactWaiter) bool { return x == w })
	if len(ws) == 0 {
		delete(st.waiters, w.op)
	} else {
		st.waiters[w.op] = ws
	}
}

// planWaiters hands the unplanned requests to the operation op that now
// answers them and returns the first, the request that started it (nil
// when none waits).
func (st *state) planWaiters(op string) *compactWaiter {
	ws := st.waiters[unplanned]
	if len(ws) == 0 {
		return nil
	}
	delete(st.waiters, unplanned)
	for _, w := range ws {
		w.op = op
	}
	st.waiters[op] = append(st.waiters[op], ws...)
	return ws[0]
}

// resolveWaiters answers every request waiting on op.
func (st *state) resolveWaiters(op string, r compaction.CompactionResult) {
	for _, w := range st.waiters[op] {
		w.resolve(r)
	}
	delete(st.waiters, op)
}

// runningCompaction is the compaction (or capsule summary) of the
// compacting phases.
type runningCompaction struct {
	operationID string
	trigger     string
	cancel      context.CancelFunc
	// explicit: the compaction answers soba.compact requests (trigger user
	// or hard_limit); a request that arrives while it runs joins it.
	explicit bool
	// starter is the request that started it; cancelling that request's
	// context cancels the compaction. nil when a trigger started it.
	starter *compactWaiter
	// effectiveBefore is the budget's figure when the plan was made, so
	// the result line speaks in the same measure as the status line.
	effectiveBefore int
	// progress reports it while it runs.
	progress *compactionProgress
}

// step makes a move that only a bug can refuse (a running turn or
// compaction moving on, Close's last move); a refusal is reported to the
// user as an internal error and the work goes on.
func (a *Agent) step(st *state, to phase) {
	if err := st.transition(to); err != nil {
		a.opt.Notifier.Warn("soba: internal error: " + err.Error())
	}
}
