package agent

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/compaction/tokens"
	"github.com/soba-agent/soba-lsp/session"
)

// smallWindow makes a few kilobytes of history meaningful: hard limit
// 12000 − 1000 − 1000 = 10000, soft 8000.
func smallWindow(o *Options) {
	c := compaction.DefaultConfig()
	c.ContextWindow, c.MaxOutputTokens, c.SafetyReserveTokens = 12000, 1000, 1000
	c.KeepRecentTokens = 1500
	c.MinTokensForAutoCompact = 3000
	c.MinReclaimableTokens = 1000
	o.Compaction = c
}

var bigText = strings.Repeat("The quick brown fox jumps over the lazy dog. ", 60) // ~2.7 KB, ~680 tokens

func (f *fixture) prompt(t *testing.T, text string) Event {
	t.Helper()
	id, _, err := f.agent.Prompt(text)
	if err != nil {
		t.Fatal(err)
	}
	return f.rec.turnEnd(t, id)
}

func (f *fixture) capsules(t *testing.T) []*session.Capsule {
	var out []*session.Capsule
	for _, e := range f.entries(t) {
		if e.Capsule != nil {
			out = append(out, e.Capsule)
		}
	}
	return out
}

func TestAutoThresholdCompactsAtPreflight_RB2_RG5(t *testing.T) {
	var script []providertest.Reply
	for i := 0; i < 14; i++ {
		script = append(script, providertest.Text("answer "+bigText))
	}
	f := newFixture(t, smallWindow, script...)
	for i := 0; i < 14; i++ {
		if end := f.prompt(t, "question "+bigText); end.Outcome != "completed" {
			t.Fatalf("turn %d: %s %s", i, end.Outcome, end.Error)
		}
	}
	caps := f.capsules(t)
	if len(caps) == 0 {
		t.Fatal("no compaction happened past the soft limit")
	}
	for _, c := range caps {
		if c.Trigger != compaction.TriggerAutoThreshold && c.Trigger != compaction.TriggerTurnComplete {
			t.Fatalf("trigger %s", c.Trigger)
		}
	}
	// The barrier showed start, progress and end with the result line.
	f.rec.mu.Lock()
	var phases []string
	for _, c := range f.rec.comps {
		phases = append(phases, c.Phase)
	}
	logs := append([]string(nil), f.rec.logs...)
	f.rec.mu.Unlock()
	if !strings.Contains(strings.Join(phases, ","), "start,progress") || phases[len(phases)-1] != "end" {
		t.Fatalf("phases %v", phases)
	}
	if !strings.Contains(strings.Join(logs, "\n"), "Compacted context · ") {
		t.Fatalf("no result line in %q", logs)
	}
	// Every request stayed under the hard limit, and the one after a
	// compaction carried the capsule.
	found := false
	for _, r := range f.model.Requests() {
		if len(r.Messages) > 0 && strings.HasPrefix(r.Messages[0].Text, compaction.CapsulePreamble) {
			found = true
		}
	}
	if !found {
		t.Fatal("no request carried the capsule")
	}
	b, _ := f.agent.Budget()
	if b.EffectiveTokens > b.HardLimit {
		t.Fatalf("budget %d over hard limit %d", b.EffectiveTokens, b.HardLimit)
	}
}

func TestHardLimitFailsClosed_RG4(t *testing.T) {
	f := newFixture(t, smallWindow, providertest.Text("never sent"))
	// A prompt over the hard limit on its own is refused before it is
	// stored (R-W7, TestOverHardLimitNeverStored_RW7); this one fits the
	// room the system prompt leaves to the token, and the request it would
	// make (the message's framing on top) does not.
	b, _ := f.agent.Budget()
	huge := strings.Repeat("x", 4*(b.HardLimit-b.EffectiveTokens))
	end := f.prompt(t, huge)
	// The user reads what happened and what to do; the engine's figures
	// go to the log (issue 26 point 5).
	if end.Outcome != "failed" || !strings.HasPrefix(end.Error, "SOBA could not fit this turn into the model's 10,000-token limit") ||
		!strings.Contains(end.Error, "your message alone is") || !strings.Contains(end.Error, "Raise `model.contextWindow`") {
		t.Fatalf("turn %s: %q", end.Outcome, end.Error)
	}
	f.rec.mu.Lock()
	logs := strings.Join(f.rec.logs, "\n")
	f.rec.mu.Unlock()
	if !strings.Contains(logs, "over the hard limit of 10000") || !strings.Contains(logs, "nothing was sent") {
		t.Fatalf("the engine's figures are not in the log: %q", logs)
	}
	if n := len(f.model.Requests()); n != 0 {
		t.Fatalf("%d requests reached the provider; a request known to exceed the limit must never be sent", n)
	}
	// The user's message is kept in the transcript (nothing recorded is lost).
	found := false
	for _, e := range f.entries(t) {
		if e.User != nil && e.User.Text == huge {
			found = true
		}
	}
	if !found {
		t.Fatal("the prompt was not recorded")
	}
}

func TestOverflowRecoveredOnce_RG3_RG9(t *testing.T) {
	script := []providertest.Reply{}
	for i := 0; i < 6; i++ {
		script = append(script, providertest.Text("answer "+bigText))
	}
	script = append(script, overflowNoCount, providertest.Text("recovered"))
	f := newFixture(t, smallWindow, script...)
	for i := 0; i < 6; i++ {
		f.prompt(t, "q "+bigText)
	}
	before := len(f.model.Requests())
	end := f.prompt(t, "one more")
	if end.Outcome != "completed" {
		t.Fatalf("turn %s: %s", end.Outcome, end.Error)
	}
	if n := len(f.model.Requests()) - before; n != 2 {
		t.Fatalf("%d requests in the overflowing turn, want the request and exactly one retry", n)
	}
	caps := f.capsules(t)
	if len(caps) == 0 || caps[len(caps)-1].Trigger != compaction.TriggerContextOverflow {
		t.Fatalf("no context_overflow capsule: %+v", caps)
	}
}

func TestOverflowNotRetriedTwice_RG9(t *testing.T) {
	script := []providertest.Reply{}
	for i := 0; i < 6; i++ {
		script = append(script, providertest.Text("answer "+bigText))
	}
	script = append(script, providertest.OverflowOpenAI(13000, 12000), providertest.OverflowOpenAI(12500, 12000))
	f := newFixture(t, smallWindow, script...)
	for i := 0; i < 6; i++ {
		f.prompt(t, "q "+bigText)
	}
	before := len(f.model.Requests())
	end := f.prompt(t, "one more")
	if end.Outcome != "failed" || !strings.Contains(end.Error, "not sent again") || !strings.Contains(end.Error, "Set `model.contextWindow` to the window the server really has") {
		t.Fatalf("turn %s: %q", end.Outcome, end.Error)
	}
	if n := len(f.model.Requests()) - before; n != 2 {
		t.Fatalf("%d requests, want 2: the same oversized request is not sent a third time", n)
	}
}

func TestRateLimitIsNotOverflow_RG9(t *testing.T) {
	f := newFixture(t, smallWindow, providertest.Reply{Status: 529, Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
		providertest.Reply{Status: 529, Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
		providertest.Reply{Status: 529, Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`})
	end := f.prompt(t, "hi")
	if end.Outcome != "failed" {
		t.Fatalf("turn %s", end.Outcome)
	}
	if caps := f.capsules(t); len(caps) != 0 {
		t.Fatal("an overload answer triggered a compaction")
	}
}

// gatedSummarizer blocks each summary until released and records the
// agent's state while it runs.
type gatedSummarizer struct {
	a       **Agent
	release chan struct{}
	mu      sync.Mutex
	states  []string
	calls   int
}

func (g *gatedSummarizer) Summarize(ctx context.Context, req compaction.SummaryRequest, _ func(string)) (string, error) {
	g.mu.Lock()
	g.calls++
	g.mu.Unlock()
	go func() { // reading the budget from the summarizer's goroutine is what an editor does
		b, _ := (*g.a).Budget()
		g.mu.Lock()
		g.states = append(g.states, b.State)
		g.mu.Unlock()
	}()
	select {
	case <-g.release:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return "## Goal\nkeep going\n## Done\n- things\n", nil
}

// waitStates waits until n budget states were read during summaries.
func (g *gatedSummarizer) waitStates(n int) {
	for {
		g.mu.Lock()
		c := len(g.states)
		g.mu.Unlock()
		if c >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitCalled waits until a summary request has arrived.
func (g *gatedSummarizer) waitCalled() {
	for {
		g.mu.Lock()
		c := g.calls
		g.mu.Unlock()
		if c > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestExplicitCompactWaitsForPreflight_RB1_RB3(t *testing.T) {
	var holder *Agent
	g := &gatedSummarizer{a: &holder, release: make(chan struct{})}
	script := []providertest.Reply{}
	for i := 0; i < 6; i++ {
		script = append(script, providertest.Text("answer "+bigText))
	}
	slow := providertest.Call("c1", "read_file", map[string]any{"path": "missing.txt"})
	slow.Delay = 300 * time.Millisecond
	script = append(script, slow, providertest.Text("done"), providertest.Text("queued answer"))
	f := newFixture(t, func(o *Options) { smallWindow(o); o.Compaction.Auto = false; o.Summarizer = g }, script...)
	holder = f.agent
	for i := 0; i < 6; i++ {
		f.prompt(t, "q "+bigText)
	}
	turn, _, _ := f.agent.Prompt("read missing.txt")
	time.Sleep(50 * time.Millisecond) // the slow inference is streaming
	done := make(chan compaction.CompactionResult, 1)
	go func() {
		r, _ := f.agent.Compact(context.Background(), "focus on the fox")
		done <- r
	}()
	time.Sleep(100 * time.Millisecond)
	g.mu.Lock()
	early := g.calls
	g.mu.Unlock()
	if early != 0 {
		t.Fatal("a summary was generated while the model was working (R-B1)")
	}
	// While the barrier waits, the editor is answered and prompts queue.
	f.rec.await(t, "the barrier", func(r *recorder) bool {
		for _, c := range r.comps {
			if c.Phase == "start" && c.Trigger == compaction.TriggerUser {
				return true
			}
		}
		return false
	})
	b, err := f.agent.Budget()
	if err != nil || b.State != compaction.StateCompacting {
		t.Fatalf("budget during the barrier: %+v %v", b.State, err)
	}
	q, queued, _ := f.agent.Prompt("queued while compacting")
	if !queued {
		t.Fatal("a prompt during the barrier must be queued")
	}
	// The summary request is under way and the editor has read the budget
	// during it; only then may the summary finish.
	g.waitCalled()
	g.waitStates(1)
	close(g.release)
	r := <-done
	if r.Outcome != compaction.OutcomeCompleted || r.Trigger != compaction.TriggerUser {
		t.Fatalf("compact result %+v", r)
	}
	f.rec.turnEnd(t, turn)
	if end := f.rec.turnEnd(t, q); end.Outcome != "completed" {
		t.Fatalf("queued turn %s: %s", end.Outcome, end.Error)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, s := range g.states {
		if s != compaction.StateCompacting {
			t.Fatalf("state %q while summarizing (states %v, %d calls), want compacting (never concurrent with generation)", s, g.states, g.calls)
		}
	}
}

func TestCancelDuringBarrierAppendsNothing_RF2(t *testing.T) {
	var holder *Agent
	g := &gatedSummarizer{a: &holder, release: make(chan struct{})}
	script := []providertest.Reply{}
	for i := 0; i < 6; i++ {
		script = append(script, providertest.Text("answer "+bigText))
	}
	f := newFixture(t, func(o *Options) { smallWindow(o); o.Compaction.Auto = false; o.Summarizer = g }, script...)
	holder = f.agent
	for i := 0; i < 6; i++ {
		f.prompt(t, "q "+bigText)
	}
	done := make(chan compaction.CompactionResult, 1)
	go func() { r, _ := f.agent.Compact(context.Background(), ""); done <- r }()
	f.rec.await(t, "the barrier", func(r *recorder) bool { return len(r.comps) > 0 })
	g.waitCalled()
	ok, what, _ := f.agent.Cancel()
	if !ok || what != "compaction" {
		t.Fatalf("cancel = %v %s", ok, what)
	}
	close(g.release) // the summary finishes after the cancel
	r := <-done
	if r.Outcome != compaction.OutcomeCancelled {
		t.Fatalf("outcome %s", r.Outcome)
	}
	if caps := f.capsules(t); len(caps) != 0 {
		t.Fatal("a cancelled compaction appended a capsule")
	}
}

func TestCalibrationFromUsage_RO1(t *testing.T) {
	// The fake provider counts a request as its bytes / 4, which differs
	// from our tokenizer by a roughly fixed factor. After the first response
	// the estimate of a new request (after a rewind, so no provider figure
	// applies) is within 5 % of what the provider then reports.
	f := newFixture(t, func(o *Options) {
		o.Counter = tokens.Default()
		o.EntryTokens = tokens.Estimator{Counter: tokens.Default()}.EntryTokens
	}, providertest.Text("Sure, here is what I found in the repository."), providertest.Text("Second answer."))
	f.prompt(t, "Look at the repository layout and tell me what the main packages do.")
	es := f.entries(t)
	if _, err := f.agent.Rewind(es[0].ID); err != nil {
		t.Fatal(err)
	}
	id, _, _ := f.agent.Prompt("Now explain how the session store keeps its index on resume.")
	f.rec.turnEnd(t, id)
	// The budget published when the user entry was appended is the
	// estimate of the request about to be sent.
	f.rec.mu.Lock()
	var estimate int
	for _, b := range f.rec.budgets {
		if b.Source == "estimated" && b.State == "generating" {
			estimate = b.EffectiveTokens // the last such is turn 2's
		}
	}
	f.rec.mu.Unlock()
	var reported int
	for _, e := range f.entries(t) {
		if e.Assistant != nil && e.Assistant.Text == "Second answer." {
			reported = e.Assistant.Usage.InputTokens
		}
	}
	if estimate == 0 || reported == 0 {
		t.Fatalf("estimate %d, reported %d", estimate, reported)
	}
	if d := float64(estimate-reported) / float64(reported); d > 0.05 || d < -0.05 {
		t.Fatalf("calibrated estimate %d vs provider %d (%.1f%% off)", estimate, reported, 100*d)
	}
	t.Logf("estimate %d, provider %d", estimate, reported)
}

// overflowNoCount is an OpenAI-compatible overflow answer that states no
// token counts (so calibration has nothing to learn from it).
var overflowNoCount = providertest.Reply{Status: 400, Body: `{"error":{"message":"Request exceeds the context window of this model.","type":"invalid_request_error","code":"context_length_exceeded"}}`}

// Cancelling a turn's barrier from its progress stops the compaction only:
// the waiting inference proceeds and the turn completes (a compaction never
// ends the user's task); nothing is appended for the cancelled compaction.
func TestProgressCancelLetsTurnProceed_RF2(t *testing.T) {
	var holder *Agent
	g := &gatedSummarizer{a: &holder, release: make(chan struct{})}
	defer close(g.release)
	script := []providertest.Reply{}
	for i := 0; i < 6; i++ {
		script = append(script, providertest.Text("answer "+bigText))
	}
	slow := providertest.Call("c1", "read_file", map[string]any{"path": "missing.txt"})
	slow.Delay = 200 * time.Millisecond
	script = append(script, slow, providertest.Text("finished anyway"))
	f := newFixture(t, func(o *Options) { smallWindow(o); o.Compaction.Auto = false; o.Summarizer = g }, script...)
	holder = f.agent
	for i := 0; i < 6; i++ {
		f.prompt(t, "q "+bigText)
	}
	turn, _, _ := f.agent.Prompt("read missing.txt")
	time.Sleep(50 * time.Millisecond)
	done := make(chan compaction.CompactionResult, 1)
	go func() { r, _ := f.agent.Compact(context.Background(), ""); done <- r }()
	var op string
	f.rec.await(t, "the barrier", func(r *recorder) bool {
		for _, c := range r.comps {
			if c.Phase == "start" {
				op = c.OperationID
				return true
			}
		}
		return false
	})
	g.waitCalled()
	if !f.agent.CancelCompaction(op) {
		t.Fatal("CancelCompaction found no running compaction")
	}
	if r := <-done; r.Outcome != compaction.OutcomeCancelled {
		t.Fatalf("compaction outcome %s", r.Outcome)
	}
	if end := f.rec.turnEnd(t, turn); end.Outcome != "completed" {
		t.Fatalf("turn %s: %s", end.Outcome, end.Error)
	}
	if len(f.capsules(t)) != 0 {
		t.Fatal("a cancelled compaction appended a capsule")
	}
}

// An explicit compact whose request is cancelled before its barrier began
// is withdrawn at once: it answers cancelled and leaves no pending intent.
func TestCompactRequestCancelledBeforeItStarts(t *testing.T) {
	slow := providertest.Text("slow answer")
	slow.Delay = 400 * time.Millisecond
	f := newFixture(t, nil, slow)
	turn, _, _ := f.agent.Prompt("take your time")
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan compaction.CompactionResult, 1)
	go func() { r, _ := f.agent.Compact(ctx, ""); done <- r }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case r := <-done:
		if r.Outcome != compaction.OutcomeCancelled {
			t.Fatalf("outcome %s", r.Outcome)
		}
	case <-time.After(200 * time.Millisecond):
		t.Fatal("a cancelled compact request waited for the turn")
	}
	f.rec.turnEnd(t, turn)
	if b, _ := f.agent.Budget(); len(b.Pending) != 0 {
		t.Fatalf("pending intents %v after the request was withdrawn", b.Pending)
	}
}

// TestDeclinedCompactionWaitsForGrowth_RG6_RR2: when the exact check (R-R2)
// declines a soft compaction, the turns after it do not run the same
// barrier again (with a model summarizer, a summary request each turn)
// until enough history has been added for it to pass.
func TestDeclinedCompactionWaitsForGrowth_RG6_RR2(t *testing.T) {
	// Short answers: the history grows by what the prompts add.
	var script []providertest.Reply
	for range 16 {
		script = append(script, providertest.Text("fine"))
	}
	f := newFixture(t, func(o *Options) {
		smallWindow(o)
		// R-R1 sees (effective − keep) / effective; R-R2 also pays for the
		// system prompt and the capsule, so a high ratio floor passes the
		// first and fails the second.
		o.Compaction.MinSavingsRatio = 0.55
		o.Compaction.ContextWindow = 40000 // far from the hard limit: only soft triggers here
	}, script...)
	barriers := func() (starts int, declined int) {
		f.rec.mu.Lock()
		defer f.rec.mu.Unlock()
		for _, c := range f.rec.comps {
			if c.Phase == "start" {
				starts++
			}
			if c.Phase == "end" && c.CompactionResult != nil && c.CompactionResult.Outcome == compaction.OutcomeSkipped &&
				c.CompactionResult.Declined != nil { // by the prediction or by the exact check
				declined++
			}
		}
		return starts, declined
	}
	turn := 0
	for ; turn < 8; turn++ {
		f.prompt(t, "question "+bigText)
		if _, declined := barriers(); declined > 0 {
			break
		}
	}
	startsAtDecline, declined := barriers()
	if declined == 0 {
		t.Fatalf("no soft compaction was declined by R-R2 in %d turns (%d barriers); the test proves nothing", turn+1, startsAtDecline)
	}
	for range 3 { // a few tokens each: far from enough, and far from a keep window
		f.prompt(t, "ok")
	}
	if starts, _ := barriers(); starts != startsAtDecline {
		for _, c := range f.rec.comps {
			if c.CompactionResult != nil {
				t.Logf("%s %s %s %s", c.Phase, c.Trigger, c.CompactionResult.Outcome, c.CompactionResult.Reason)
			} else {
				t.Logf("%s %s", c.Phase, c.Trigger)
			}
		}
		t.Fatalf("%d more barriers ran after the decline with almost no growth", starts-startsAtDecline)
	}
	for range 3 { // now the history grows by thousands of tokens
		f.prompt(t, "question "+bigText+bigText)
	}
	if starts, _ := barriers(); starts == startsAtDecline {
		t.Fatal("soft compaction never ran again once the history had grown")
	}
}

// TestCheckpointToolRecordsMilestone_RG7: the model's checkpoint tool records
// a checkpoint with its intent; the next preflight (before the model's next
// request in the same turn) compacts with trigger milestone and consumes the
// intent; a bad kind is refused as a failed tool result. (It found that the
// consumed intent's settings entry was appended after the plan froze the
// expected leaf, so every milestone compaction ended stale, R-B5.)
func TestCheckpointToolRecordsMilestone_RG7(t *testing.T) {
	// Three turns of history: enough for R-R1, below the soft limit, so the
	// milestone is the turn's one soft compaction (R-G5).
	var script []providertest.Reply
	for range 3 {
		script = append(script, providertest.Text("answer "+bigText))
	}
	script = append(script,
		providertest.Call("k1", "checkpoint", map[string]any{"kind": "milestone", "note": "the lexer is done"}),
		providertest.Call("k2", "checkpoint", map[string]any{"kind": "someday", "note": "x"}),
		providertest.Text("done"))
	f := newFixture(t, func(o *Options) { smallWindow(o); o.Compaction.CompactOnTurnComplete = false; o.Compaction.Auto = true }, script...)
	for range 3 {
		f.prompt(t, "question "+bigText)
	}
	before := len(f.capsules(t))
	if end := f.prompt(t, "finish the lexer"); end.Outcome != "completed" {
		t.Fatalf("turn %s %s", end.Outcome, end.Error)
	}
	var ck *session.Checkpoint
	var refused *session.ToolResult
	for _, e := range f.entries(t) {
		if e.Checkpoint != nil {
			ck = e.Checkpoint
		}
		if e.ToolResult != nil && e.ToolResult.ToolCallID == "k2" {
			refused = e.ToolResult
		}
	}
	if ck == nil || ck.Kind != compaction.TriggerMilestone || ck.Note != "the lexer is done" || ck.Intent != compaction.TriggerMilestone {
		t.Fatalf("checkpoint %+v, want a milestone with its intent", ck)
	}
	if refused == nil || refused.OK || !strings.Contains(refused.Content, `kind must be "milestone" or "plan_pivot"`) {
		t.Fatalf("bad kind: %+v", refused)
	}
	caps := f.capsules(t)
	if len(caps) <= before || caps[len(caps)-1].Trigger != compaction.TriggerMilestone {
		var triggers []string
		for _, c := range caps {
			triggers = append(triggers, c.Trigger)
		}
		b, _ := f.agent.Budget()
		f.rec.mu.Lock()
		for _, c := range f.rec.comps {
			if c.CompactionResult != nil {
				t.Logf("%s %s %s %s", c.Phase, c.Trigger, c.CompactionResult.Outcome, c.CompactionResult.Reason)
			}
		}
		f.rec.mu.Unlock()
		t.Fatalf("capsules %v: no milestone compaction after the checkpoint (budget %d, pending %v)", triggers, b.EffectiveTokens, b.Pending)
	}
	if b, _ := f.agent.Budget(); slices.Contains(b.Pending, compaction.TriggerMilestone) {
		t.Errorf("the milestone intent is still pending: %v", b.Pending)
	}
}

// explicitCompactFixture is a session long enough for an explicit compact,
// whose summaries wait for g.release.
func explicitCompactFixture(t *testing.T) (*fixture, *gatedSummarizer) {
	t.Helper()
	var holder *Agent
	g := &gatedSummarizer{a: &holder, release: make(chan struct{})}
	script := []providertest.Reply{}
	for i := 0; i < 6; i++ {
		script = append(script, providertest.Text("answer "+bigText))
	}
	f := newFixture(t, func(o *Options) { smallWindow(o); o.Compaction.Auto = false; o.Summarizer = g }, script...)
	holder = f.agent
	for i := 0; i < 6; i++ {
		f.prompt(t, "q "+bigText)
	}
	return f, g
}

// awaitWaiters waits until n compact requests wait on the operation op.
func (f *fixture) awaitWaiters(t *testing.T, op string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := 0
		_ = f.agent.do(func(st *state) { got = len(st.waiters[op]) })
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests wait on %s, want %d", got, op, n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// startedCompaction waits for the first compaction's start and returns its
// operation id.
func (f *fixture) startedCompaction(t *testing.T) string {
	t.Helper()
	var op string
	f.rec.await(t, "the compaction's start", func(r *recorder) bool {
		for _, c := range r.comps {
			if c.Phase == "start" {
				op = c.OperationID
				return true
			}
		}
		return false
	})
	return op
}

// Two soba.compact requests wait on one compaction: cancelling the second
// request withdraws that request alone (it answers cancelled at once), and
// the compaction the first request started goes on and completes.
func TestCancelSecondCompactRequestOnly_FirstCompletes(t *testing.T) {
	f, g := explicitCompactFixture(t)
	first := make(chan compaction.CompactionResult, 1)
	go func() { r, _ := f.agent.Compact(context.Background(), ""); first <- r }()
	op := f.startedCompaction(t)
	g.waitCalled()
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan compaction.CompactionResult, 1)
	go func() { r, _ := f.agent.Compact(ctx, ""); second <- r }()
	f.awaitWaiters(t, op, 2) // the second request joined the running compaction
	cancel()
	select {
	case r := <-second:
		if r.Outcome != compaction.OutcomeCancelled || r.OperationID != "" {
			t.Fatalf("second request answered %+v, want its own cancelled outcome", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled second request waited for the compaction")
	}
	select {
	case r := <-first:
		t.Fatalf("the first request answered %s while its compaction still ran", r.Outcome)
	default:
	}
	if b, _ := f.agent.Budget(); b.State != compaction.StateCompacting {
		t.Fatalf("state %s after the second request was cancelled, want compacting", b.State)
	}
	close(g.release)
	r := <-first
	if r.Outcome != compaction.OutcomeCompleted || r.OperationID != op {
		t.Fatalf("first request answered %+v, want %s completed", r, op)
	}
	if n := len(f.capsules(t)); n != 1 {
		t.Fatalf("%d capsules appended, want 1", n)
	}
	if b, _ := f.agent.Budget(); b.State != compaction.StateIdle || len(b.Pending) != 0 {
		t.Fatalf("budget after: state %s, pending %v", b.State, b.Pending)
	}
}

// Cancelling the request that started a compaction cancels the compaction:
// every request waiting on it answers cancelled, and nothing is appended.
func TestCancelFirstCompactRequestCancelsItsCompaction_RF2(t *testing.T) {
	f, g := explicitCompactFixture(t)
	defer close(g.release)
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan compaction.CompactionResult, 1)
	go func() { r, _ := f.agent.Compact(ctx, ""); first <- r }()
	op := f.startedCompaction(t)
	g.waitCalled()
	second := make(chan compaction.CompactionResult, 1)
	go func() { r, _ := f.agent.Compact(context.Background(), ""); second <- r }()
	f.awaitWaiters(t, op, 2)
	cancel()
	for name, ch := range map[string]chan compaction.CompactionResult{"first": first, "second": second} {
		if r := <-ch; r.Outcome != compaction.OutcomeCancelled || r.OperationID != op {
			t.Fatalf("%s request answered %+v, want %s cancelled", name, r, op)
		}
	}
	if n := len(f.capsules(t)); n != 0 {
		t.Fatalf("a cancelled compaction appended %d capsules", n)
	}
}

// A checkpoint recorded while an explicit compaction summarises moves the
// leaf: the capsule would land on a session that changed since the plan, so
// the compaction ends stale and appends nothing (R-B5); the session is idle
// again and the next compact runs.
func TestCompactionStaleWhenLeafMoves_RB5(t *testing.T) {
	f, g := explicitCompactFixture(t)
	done := make(chan compaction.CompactionResult, 1)
	go func() { r, _ := f.agent.Compact(context.Background(), ""); done <- r }()
	f.startedCompaction(t)
	g.waitCalled()
	if _, err := f.agent.Checkpoint(compaction.TriggerMilestone, "moved on"); err != nil {
		t.Fatal(err)
	}
	close(g.release)
	if r := <-done; r.Outcome != compaction.OutcomeStale {
		t.Fatalf("outcome %s (%s), want stale", r.Outcome, r.Reason)
	}
	if n := len(f.capsules(t)); n != 0 {
		t.Fatalf("a stale compaction appended %d capsules", n)
	}
	if b, _ := f.agent.Budget(); b.State != compaction.StateIdle {
		t.Fatalf("state %s after a stale compaction", b.State)
	}
	if r, _ := f.agent.Compact(context.Background(), ""); r.Outcome != compaction.OutcomeCompleted {
		t.Fatalf("the next compact: %s (%s)", r.Outcome, r.Reason)
	}
}
