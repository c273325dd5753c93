package compaction

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/soba-agent/soba-lsp/session"
)

// ownerAppender is a session owner in miniature: one mutex serialises the
// leaf and the append, and the abort signal and expected leaf are checked
// inside it, atomically with the append (R-B5).
type ownerAppender struct {
	mu       sync.Mutex
	leaf     string
	appended []session.Capsule
	fail     error
}

func (o *ownerAppender) AppendCapsule(ctx context.Context, expected string, c session.Capsule) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	if o.leaf != expected {
		return ErrStale
	}
	if o.fail != nil {
		return o.fail
	}
	o.appended = append(o.appended, c)
	o.leaf = c.CheckpointID
	return nil
}

func (o *ownerAppender) moveLeaf(id string) {
	o.mu.Lock()
	o.leaf = id
	o.mu.Unlock()
}

func (o *ownerAppender) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.appended)
}

// fakeSummarizer answers with a fixed capsule after an optional delay or
// gate; it can ignore its context like a misbehaving client.
type fakeSummarizer struct {
	answer    string
	err       error
	delay     time.Duration
	gate      chan struct{} // when set, waits for it to close
	ignoreCtx bool
	calls     atomic.Int32
}

func (f *fakeSummarizer) Summarize(ctx context.Context, req SummaryRequest, stream func(string)) (string, error) {
	f.calls.Add(1)
	wait := func(ch <-chan struct{}) error {
		if f.ignoreCtx {
			<-ch
			return nil
		}
		select {
		case <-ch:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if f.gate != nil {
		if err := wait(f.gate); err != nil {
			return "", err
		}
	}
	if f.delay > 0 {
		ch := make(chan struct{})
		time.AfterFunc(f.delay, func() { close(ch) })
		if err := wait(ch); err != nil {
			return "", err
		}
	}
	// The answer streams line by line, as a provider's deltas arrive.
	for _, line := range strings.SplitAfter(f.answer, "\n") {
		stream(line)
	}
	return f.answer, f.err
}

const goodSummary = "## Goal\nFix the bugs in pkg/a.go\n## Done\n- fixed several bugs\n## Decisions\n- keep the API — users depend on it\n## Next steps\n- run the tests\n"

func planFor(t *testing.T, b *builder, trigger string, cfg Config) Plan {
	t.Helper()
	p, err := MakePlan(b.es, quarterCounter{}, PlanRequest{OperationID: "op_1", CheckpointID: "ck_t1", Trigger: trigger, Config: cfg,
		SystemTokens: 500, ExpectedLeaf: b.es[len(b.es)-1].ID})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func runBarrier(b *Barrier, ctx context.Context, tr Transcript, p Plan, app Appender, warns *[]string) CompactionResult {
	return b.Run(ctx, RunInput{Plan: p, Transcript: tr, Appender: app, Source: "estimated", SessionID: "s1",
		Hooks: Hooks{Warn: func(m string) { *warns = append(*warns, m) }}})
}

func TestOutcomes_RB4(t *testing.T) {
	cfg := smallConfig()
	tests := []struct {
		name    string
		trigger string
		sum     *fakeSummarizer
		cfg     func(*Config)
		app     func(*ownerAppender)
		cancel  bool
		want    string
	}{
		{name: "completed with a model summary", trigger: TriggerAutoThreshold, sum: &fakeSummarizer{answer: goodSummary}, want: OutcomeCompleted},
		{name: "completed deterministically", trigger: TriggerUser, want: OutcomeCompleted},
		{name: "skipped by the post gate", trigger: TriggerAutoThreshold, cfg: func(c *Config) { c.MinReclaimableTokens = 1 << 20 }, want: OutcomeSkipped},
		{name: "cancelled", trigger: TriggerUser, sum: &fakeSummarizer{answer: goodSummary}, cancel: true, want: OutcomeCancelled},
		{name: "stale", trigger: TriggerUser, app: func(o *ownerAppender) { o.leaf = "moved" }, want: OutcomeStale},
		{name: "failed", trigger: TriggerUser, app: func(o *ownerAppender) { o.fail = errors.New("disk full") }, want: OutcomeFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := longSession(8)
			c := cfg
			if tt.cfg != nil {
				tt.cfg(&c)
			}
			p := planFor(t, b, tt.trigger, c)
			app := &ownerAppender{leaf: p.ExpectedLeaf}
			if tt.app != nil {
				tt.app(app)
			}
			bar := &Barrier{Counter: quarterCounter{}}
			if tt.sum != nil {
				bar.Summarizer = tt.sum
			}
			ctx, cancel := context.WithCancel(context.Background())
			if tt.cancel {
				cancel()
			}
			defer cancel()
			var warns []string
			res := runBarrier(bar, ctx, b.es, p, app, &warns)
			if res.Outcome != tt.want {
				t.Fatalf("outcome %q (%s), want %q", res.Outcome, res.Reason, tt.want)
			}
			wantAppended := 0
			if tt.want == OutcomeCompleted {
				wantAppended = 1
				if res.CheckpointID != "ck_t1" || res.Quality != "full" || res.TokensAfter >= res.TokensBefore {
					t.Fatalf("result %+v", res)
				}
			} else if res.Reason == "" {
				t.Fatal("a non-completed outcome must say why")
			}
			if app.count() != wantAppended {
				t.Fatalf("%d capsules appended, want %d", app.count(), wantAppended)
			}
			if res.Line == "" || !strings.Contains(res.Line, tt.trigger) {
				t.Fatalf("line %q", res.Line)
			}
		})
	}
}

func TestLateSummaryNeverAppends_RB5_RF2(t *testing.T) {
	// A summary that finishes after a cancel, or after the leaf moved, must
	// never append. Repeated to shake out races (run with -race).
	for i := range 50 {
		for _, mode := range []string{"cancel", "rewind"} {
			b := longSession(8)
			p := planFor(t, b, TriggerUser, smallConfig())
			app := &ownerAppender{leaf: p.ExpectedLeaf}
			gate := make(chan struct{})
			sum := &fakeSummarizer{answer: goodSummary, gate: gate, ignoreCtx: true}
			bar := &Barrier{Counter: quarterCounter{}, Summarizer: sum}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan CompactionResult, 1)
			go func() {
				var w []string
				done <- runBarrier(bar, ctx, b.es, p, app, &w)
			}()
			for sum.calls.Load() == 0 {
				time.Sleep(time.Millisecond)
			}
			if mode == "cancel" {
				cancel()
			} else {
				app.moveLeaf("rewound")
			}
			close(gate) // the late summary arrives
			res := <-done
			cancel()
			want := OutcomeCancelled
			if mode == "rewind" {
				want = OutcomeStale
			}
			if res.Outcome != want || app.count() != 0 {
				t.Fatalf("run %d %s: outcome %s, %d appended; want %s and nothing appended", i, mode, res.Outcome, app.count(), want)
			}
		}
	}
}

func TestTimeoutFallbackDegraded_RF1(t *testing.T) {
	cfg := smallConfig()
	cfg.TimeoutMs = 150
	b := longSession(8)
	p := planFor(t, b, TriggerAutoThreshold, cfg)
	app := &ownerAppender{leaf: p.ExpectedLeaf}
	gate := make(chan struct{})
	defer close(gate)
	// The summarizer ignores its context: the barrier must not wait for it.
	bar := &Barrier{Counter: quarterCounter{}, Summarizer: &fakeSummarizer{answer: goodSummary, gate: gate, ignoreCtx: true}}
	var warns []string
	start := time.Now()
	res := runBarrier(bar, context.Background(), b.es, p, app, &warns)
	elapsed := time.Since(start)
	if res.Outcome != OutcomeCompleted || res.Quality != "degraded" {
		t.Fatalf("result %+v, want a completed degraded capsule", res)
	}
	if elapsed > time.Duration(cfg.TimeoutMs)*time.Millisecond+100*time.Millisecond {
		t.Fatalf("fallback took %v, want within timeoutMs + 100 ms", elapsed)
	}
	if len(warns) != 1 || warns[0] != NoticeSummaryTimeout(time.Duration(cfg.TimeoutMs)*time.Millisecond) {
		t.Fatalf("warnings %q, want one naming the fallback", warns)
	}
	if app.appended[0].Quality != "degraded" || !strings.Contains(res.Line, "degraded") {
		t.Fatalf("appended %+v line %q", app.appended[0].Quality, res.Line)
	}
}

func TestSummaryErrorFallsBack_RF1(t *testing.T) {
	for _, sum := range []*fakeSummarizer{{err: errors.New("500 internal error")}, {answer: "I can't do that"}} {
		b := longSession(8)
		p := planFor(t, b, TriggerUser, smallConfig())
		app := &ownerAppender{leaf: p.ExpectedLeaf}
		var warns []string
		res := runBarrier(&Barrier{Counter: quarterCounter{}, Summarizer: sum}, context.Background(), b.es, p, app, &warns)
		if res.Outcome != OutcomeCompleted || res.Quality != "degraded" || len(warns) != 1 {
			t.Fatalf("result %+v warnings %q", res, warns)
		}
	}
}

func TestChunkedSummaryForLongHistory(t *testing.T) {
	b := longSession(30)
	p := planFor(t, b, TriggerUser, smallConfig())
	app := &ownerAppender{leaf: p.ExpectedLeaf}
	sum := &fakeSummarizer{answer: goodSummary}
	var warns []string
	bar := &Barrier{Counter: quarterCounter{}, Summarizer: sum, SummaryWindowChars: 2000}
	res := runBarrier(bar, context.Background(), b.es, p, app, &warns)
	if res.Outcome != OutcomeCompleted || res.Quality != "full" {
		t.Fatalf("result %+v", res)
	}
	if sum.calls.Load() < 3 {
		t.Fatalf("%d summary requests, want the history split into several", sum.calls.Load())
	}
}

// TestProgressReported_RB3: a running compaction says what it waits for
// and what has streamed, never an invented percentage: one summary request
// has no percentage, several have the share of parts answered; the
// streamed text is the model's answer, and nothing is reported after Run.
func TestProgressReported_RB3(t *testing.T) {
	tests := []struct {
		name        string
		windowChars int
		wantParts   bool
	}{
		{"one summary request", 0, false},
		{"history in several parts", 2000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := longSession(8)
			p := planFor(t, b, TriggerUser, smallConfig())
			app := &ownerAppender{leaf: p.ExpectedLeaf}
			var (
				mu       sync.Mutex
				got      []Progress
				streamed strings.Builder
				closed   bool
				late     bool
			)
			sum := &fakeSummarizer{answer: goodSummary}
			bar := &Barrier{Counter: quarterCounter{}, Summarizer: sum, SummaryWindowChars: tt.windowChars}
			res := bar.Run(context.Background(), RunInput{Plan: p, Transcript: b.es, Appender: app, Hooks: Hooks{
				Progress: func(pr Progress) { mu.Lock(); got = append(got, pr); late = late || closed; mu.Unlock() },
				Summary:  func(d string) { mu.Lock(); streamed.WriteString(d); late = late || closed; mu.Unlock() },
			}})
			mu.Lock()
			closed = true
			defer mu.Unlock()
			if res.Outcome != OutcomeCompleted {
				t.Fatal(res.Reason)
			}
			parts := int(sum.calls.Load())
			if tt.wantParts != (parts > 1) {
				t.Fatalf("%d summary requests", parts)
			}
			if want := strings.Repeat(goodSummary, parts); streamed.String() != want {
				t.Fatalf("streamed %q, want each answer whole: %q", streamed.String(), want)
			}
			if len(got) < 3 || got[0].Stage != StageWaiting || got[0].Part != 1 || got[len(got)-1].Stage != StageBuilding {
				t.Fatalf("progress %+v, want waiting for part 1 … building", got)
			}
			sawSummarizing := false
			for i, pr := range got {
				sawSummarizing = sawSummarizing || pr.Stage == StageSummarizing
				if pr.Parts != parts && pr.Stage != StageBuilding {
					t.Fatalf("progress %d %+v: parts %d, want %d", i, pr, pr.Parts, parts)
				}
				if parts == 1 && pr.Percent != 0 {
					t.Fatalf("progress %d %+v: a percentage for a single request is invented", i, pr)
				}
				if parts > 1 && pr.Percent != 100*(pr.Part-1)/parts {
					t.Fatalf("progress %d %+v: percent, want the parts answered", i, pr)
				}
				if i > 0 && (pr.OutputTokens < got[i-1].OutputTokens || pr.Percent < got[i-1].Percent) {
					t.Fatalf("progress went backwards: %+v then %+v", got[i-1], pr)
				}
			}
			tokens := 0
			for _, line := range strings.SplitAfter(goodSummary, "\n") {
				tokens += quarterCounter{}.Count(line)
			}
			if !sawSummarizing || got[len(got)-1].OutputTokens != tokens*parts {
				t.Fatalf("progress %+v: want summarizing with the answer's tokens", got)
			}
			if late {
				t.Fatal("a hook ran after Run returned")
			}
		})
	}
}

// TestNoSummaryAfterDeadline_RF1: a summarizer that ignores its deadline
// and streams later reports nothing after the barrier stopped waiting.
func TestNoSummaryAfterDeadline_RF1(t *testing.T) {
	b := longSession(8)
	cfg := smallConfig()
	cfg.TimeoutMs = 50
	p := planFor(t, b, TriggerUser, cfg)
	app := &ownerAppender{leaf: p.ExpectedLeaf}
	gate := make(chan struct{})
	sum := &fakeSummarizer{answer: goodSummary, gate: gate, ignoreCtx: true}
	var streamed atomic.Int32
	bar := &Barrier{Counter: quarterCounter{}, Summarizer: sum}
	res := bar.Run(context.Background(), RunInput{Plan: p, Transcript: b.es, Appender: app, Hooks: Hooks{
		Summary: func(string) { streamed.Add(1) },
	}})
	close(gate) // the straggler streams its whole answer now
	for sum.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	if res.Quality != "degraded" || streamed.Load() != 0 {
		t.Fatalf("quality %q, %d chunks streamed after the deadline", res.Quality, streamed.Load())
	}
}

func TestResultLine_RB3(t *testing.T) {
	r := CompactionResult{Trigger: TriggerAutoThreshold, Outcome: OutcomeCompleted, TokensBefore: 45210, TokensAfter: 14870,
		ReclaimedRatio: float64(45210-14870) / 45210, CheckpointID: "ck_8f2a1c", Quality: "full"}
	if got, want := ResultLine(r), "Compacted context · auto_threshold · 45,210 → 14,870 tokens (67% reclaimed) · ck_8f2a1c"; got != want {
		t.Fatalf("line %q\nwant %q", got, want)
	}
	// Outcomes other than completed say what happened and why in words,
	// without token figures; a skip says whether it cost a summary request.
	tests := []struct {
		r    CompactionResult
		want string
	}{
		{CompactionResult{Trigger: TriggerUser, Outcome: OutcomeSkipped, Reason: "nothing old enough to compact", TokensBefore: 844},
			"Skipped: nothing old enough to compact · user · the summary model was not asked"},
		{CompactionResult{Trigger: TriggerTurnComplete, Outcome: OutcomeSkipped, Reason: "the capsule would not reclaim enough", SummaryAsked: true},
			"Skipped: the capsule would not reclaim enough · turn_complete · the summary model was asked"},
		{CompactionResult{Trigger: TriggerUser, Outcome: OutcomeCancelled, Reason: "cancelled by the user"}, "Cancelled: cancelled by the user · user"},
		{CompactionResult{Trigger: TriggerHardLimit, Outcome: OutcomeFailed, Reason: "summary model unreachable"}, "Failed: summary model unreachable · hard_limit"},
		{CompactionResult{Trigger: TriggerMilestone, Outcome: OutcomeStale}, "Stale · milestone"},
	}
	for _, tt := range tests {
		got := ResultLine(tt.r)
		if got != tt.want {
			t.Errorf("line %q\nwant %q", got, tt.want)
		}
		if strings.Contains(got, "→") || strings.Contains(got, "0%") {
			t.Errorf("line %q shows token figures for a compaction that did not complete", got)
		}
	}
}

func TestFlightRecordsNoSummaryContent_RO2(t *testing.T) {
	dir := t.TempDir()
	ff, err := OpenFlightFile(filepath.Join(dir, "flight", "s1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	const phrase = "zebra-quartz-unique-phrase-4417"
	b := longSession(8)
	b.user("please remember "+phrase, 100)
	p := planFor(t, b, TriggerUser, smallConfig())
	app := &ownerAppender{leaf: p.ExpectedLeaf}
	sum := &fakeSummarizer{answer: "## Goal\n" + phrase + "\n## Done\n- " + phrase + "\n"}
	bar := &Barrier{Counter: quarterCounter{}, Summarizer: sum, Flight: ff}
	var w []string
	res := runBarrier(bar, context.Background(), b.es, p, app, &w)
	// And one failing operation, whose reason must not leak either.
	p2 := planFor(t, b, TriggerUser, smallConfig())
	runBarrier(&Barrier{Counter: quarterCounter{}, Summarizer: &fakeSummarizer{err: errors.New(phrase)}, Flight: ff}, context.Background(), b.es, p2, &ownerAppender{leaf: "x"}, &w)
	ff.Close()
	data, err := os.ReadFile(ff.Path())
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != OutcomeCompleted || !strings.Contains(app.appended[0].State.Goal, phrase) {
		t.Fatal("the capsule itself should carry the phrase; the test would prove nothing otherwise")
	}
	if bytes.Contains(data, []byte(phrase)) || bytes.Contains(data, []byte("zebra")) {
		t.Fatalf("flight file leaks content:\n%s", data)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	if len(lines) != 2 {
		t.Fatalf("%d flight lines, want 2", len(lines))
	}
	for _, field := range []string{`"operationId":"op_1"`, `"trigger":"user"`, `"outcome":"completed"`, `"hardLimit":17000`, `"checkpointId":"ck_t1"`, `"durationMs"`, `"reclaimedTokens"`, `"source":"estimated"`} {
		if !bytes.Contains(lines[0], []byte(field)) {
			t.Fatalf("flight record lacks %s: %s", field, lines[0])
		}
	}
}

func TestResultLineWhenInputGrew(t *testing.T) {
	r := CompactionResult{Trigger: TriggerUser, Outcome: OutcomeCompleted, TokensBefore: 611, TokensAfter: 672, ReclaimedRatio: -61.0 / 611, CheckpointID: "ck_1", Quality: "full"}
	if got := ResultLine(r); got != "Compacted context · user · 611 → 672 tokens (grew 10%) · ck_1" {
		t.Fatalf("line %q", got)
	}
}
