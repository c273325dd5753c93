package agent

import (
	"fmt"
	"sync"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/internal/background"
	"github.com/soba-agent/soba-lsp/internal/text"
)

// progressTick is how often a running compaction's progress is repeated
// with its elapsed time while nothing else changes: a summary model that
// takes minutes must not look frozen.
const progressTick = time.Second

// progressMinGap bounds progress events that only update the streamed token
// count; a stage change is sent at once.
const progressMinGap = 250 * time.Millisecond

// compactionProgress reports one running compaction's progress (R-B3): what
// it waits for, what has streamed and the elapsed time, as a message every
// front end shows as is, and the summary's text as it streams. stop ends
// it before the compaction's end event is sent.
type compactionProgress struct {
	n           Notifier
	op, trigger string
	title       string

	mu       sync.Mutex
	began    time.Time
	cur      compaction.Progress
	known    bool
	waits    bool // a prompt was queued behind a compaction titled without "before response"
	lastSent time.Time
	stopped  bool
	done     chan struct{}
	wg       conc.WaitGroup // runs tick
}

// newProgress is the progress of a planned compaction; start begins its
// reports when it runs.
func newProgress(n Notifier, op, trigger, title string) *compactionProgress {
	return &compactionProgress{n: n, op: op, trigger: trigger, title: title, done: make(chan struct{})}
}

func (p *compactionProgress) start(at time.Time) {
	p.mu.Lock()
	p.began = at
	p.mu.Unlock()
	p.wg.Go(p.tick)
}

// promptWaits notes a prompt queued behind the compaction: its title
// ("Compacting context") cannot change once shown, so the messages say it
// from now on.
func (p *compactionProgress) promptWaits() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waits || p.title == TitleBeforeResponse {
		return
	}
	p.waits = true
	if p.known {
		p.sendLocked()
	}
}

func (p *compactionProgress) tick() {
	t := time.NewTicker(progressTick)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
			p.mu.Lock()
			if p.known && time.Since(p.lastSent) >= progressTick/2 {
				p.sendLocked()
			}
			p.mu.Unlock()
		}
	}
}

// update is the barrier's Progress hook.
func (p *compactionProgress) update(pr compaction.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	changed := !p.known || pr.Stage != p.cur.Stage || pr.Part != p.cur.Part
	p.cur, p.known = pr, true
	if changed || time.Since(p.lastSent) >= progressMinGap {
		p.sendLocked()
	}
}

// summary is the barrier's Summary hook.
func (p *compactionProgress) summary(delta string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.n.Compaction(CompactionEvent{Phase: "summary", OperationID: p.op, Trigger: p.trigger, SummaryDelta: delta})
}

func (p *compactionProgress) sendLocked() {
	if p.stopped {
		return
	}
	now := time.Now()
	p.lastSent = now
	elapsed := now.Sub(p.began)
	msg := progressMessage(p.cur, elapsed)
	if p.waits {
		msg += " · a prompt waits"
	}
	ev := CompactionEvent{Phase: "progress", OperationID: p.op, Trigger: p.trigger,
		Message: msg, ElapsedMs: elapsed.Milliseconds()}
	if p.cur.Percent > 0 {
		v := p.cur.Percent
		ev.Percentage = &v
	}
	p.n.Compaction(ev)
}

// stop ends the reports; none is sent after it returns.
func (p *compactionProgress) stop() {
	p.mu.Lock()
	if !p.stopped {
		p.stopped = true
		close(p.done)
	}
	p.mu.Unlock()
	if r := p.wg.WaitAndRecover(); r != nil {
		// A panic in the reports ends them, not the compaction.
		p.n.Log("compaction progress stopped: " + background.Error(r).Error())
	}
}

// progressMessage says what a compaction is doing, for people:
// "waiting for the summary model · 12 s", "summarizing · 640 tokens · 15 s",
// "waiting for the provider's native compaction · 14 s", "building the
// capsule · 16 s"; "part 2 of 3" when the history is
// summarized in several requests.
func progressMessage(pr compaction.Progress, elapsed time.Duration) string {
	part := ""
	if pr.Parts > 1 {
		part = fmt.Sprintf(" part %d of %d", pr.Part, pr.Parts)
	}
	var what string
	switch pr.Stage {
	case compaction.StageWaiting:
		what = "waiting for the summary model"
		if part != "" {
			what += " ·" + part
		}
	case compaction.StageSummarizing:
		what = "summarizing" + part + " · " + text.Thousands(pr.OutputTokens) + " " + plural(pr.OutputTokens, "token", "tokens")
	case compaction.StageNative:
		what = "waiting for the provider's native compaction"
	default:
		what = "building the capsule"
	}
	return what + " · " + elapsedText(elapsed)
}

// elapsedText is a duration to the second: "0 s", "12 s", "2 min 05 s".
func elapsedText(d time.Duration) string {
	s := int(d / time.Second)
	if s < 60 {
		return fmt.Sprintf("%d s", s)
	}
	return fmt.Sprintf("%d min %02d s", s/60, s%60)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
