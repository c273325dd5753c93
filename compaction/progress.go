package compaction

import "sync"

// Stage is what a running compaction is doing.
type Stage string

// Stages of a running compaction, in the order they happen.
const (
	// StageWaiting: the summary request is sent and no answer has arrived.
	StageWaiting Stage = "waiting"
	// StageSummarizing: the summary model's answer is streaming.
	StageSummarizing Stage = "summarizing"
	// StageNative: the summary is done (or there is none) and the
	// provider's native compaction of the same history is awaited.
	StageNative Stage = "native"
	// StageBuilding: the capsule is assembled, checked and appended.
	StageBuilding Stage = "building"
)

// Progress is what a running compaction is doing, said honestly (R-B3): the
// stage, which summary request of how many, how much of the answer has
// streamed. Percent is 0 (unknown) unless it is real: with a history
// summarized in several parts, the share of parts answered.
type Progress struct {
	Stage Stage
	// Part is the summary request being answered (1-based) of Parts; 0
	// before the first and when there is no summary model.
	Part, Parts int
	// OutputTokens counts the summary answers streamed so far, all parts.
	OutputTokens int
	// Percent complete, 0 when not known.
	Percent int
}

// reporter turns a run's events into Hooks calls. A summarizer may stream
// after the wait for it ended (it ignored its deadline); close makes every
// later call a no-op, so nothing is reported after Run returned.
type reporter struct {
	hooks   Hooks
	counter Counter

	mu     sync.Mutex
	closed bool
	cur    Progress
}

func (r *reporter) stage(s Stage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur.Stage == s {
		return
	}
	r.cur.Stage = s
	r.sendLocked()
}

// part starts summary request part of parts.
func (r *reporter) part(part, parts int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur.Stage, r.cur.Part, r.cur.Parts = StageWaiting, part, parts
	r.cur.Percent = 0
	if parts > 1 {
		r.cur.Percent = 100 * (part - 1) / parts
	}
	r.sendLocked()
}

// delta is one streamed piece of the summary answer.
func (r *reporter) delta(d string) {
	if d == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.cur.Stage == StageBuilding || r.cur.Stage == StageNative { // the wait for the summary is over
		return
	}
	if r.hooks.Summary != nil {
		r.hooks.Summary(d)
	}
	if r.counter != nil {
		r.cur.OutputTokens += r.counter.Count(d)
	}
	r.cur.Stage = StageSummarizing
	r.sendLocked()
}

func (r *reporter) sendLocked() {
	if !r.closed && r.hooks.Progress != nil {
		r.hooks.Progress(r.cur)
	}
}

func (r *reporter) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
}
