package compaction

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/session"
)

// benchSession builds a path of n entries with realistic contents (~4 bytes
// a token): turns of a user message, a read, an edit and a test run.
func benchSession(n int) *builder {
	b := newBuilder()
	body := strings.Repeat("func handler(w http.ResponseWriter, r *http.Request) { /* … */ }\n", 12)
	for i := 0; len(b.es) < n; i++ {
		b.user(fmt.Sprintf("Step %d: make the handler in pkg/h%d.go return 404 for unknown ids. Don't break the API.", i, i%40), 30)
		b.read(fmt.Sprintf("pkg/h%d.go", i%40), 200)
		b.es[len(b.es)-1].ToolResult.Content = body
		b.edit(fmt.Sprintf("pkg/h%d.go", i%40), 120)
		b.bash("go test ./pkg/...", i%3, 150)
		b.reply("Done: the handler now returns 404 for unknown ids and the tests pass.", 40)
	}
	return b
}

func BenchmarkPreflightNothingDue(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		s := benchSession(n)
		eff := 0
		for _, e := range s.es {
			eff += e.Tokens
		}
		cfg := DefaultConfig()
		cfg.ContextWindow = 10 * eff // nothing is due
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d := Preflight(PreflightInput{Effective: eff, Config: cfg, AutoCompact: true}); d.Due() {
					b.Fatal("due")
				}
			}
		})
	}
}

// BenchmarkCutAndDeterministicCapsule measures the plan (base, safe cut) and
// the deterministic capsule over ~200k compactable tokens.
func BenchmarkCutAndDeterministicCapsule(b *testing.B) {
	s := benchSession(1) // grown below to 200k tokens
	for total := 0; total < 220000; {
		before := len(s.es)
		s = growBench(s)
		for _, e := range s.es[before:] {
			total += e.Tokens
		}
	}
	cfg := DefaultConfig()
	var compact int
	b.ReportAllocs()
	for b.Loop() {
		p, err := MakePlan(s.es, quarterCounter{}, PlanRequest{Trigger: TriggerUser, Config: cfg, CheckpointID: "ck_b"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := BuildCapsule(s.es, quarterCounter{}, p, nil, true); err != nil {
			b.Fatal(err)
		}
		compact = p.Cut.CompactTokens
	}
	b.ReportMetric(float64(compact), "compactable-tokens")
}

func growBench(s *builder) *builder {
	n := len(s.es) + 5
	t := benchSession(n)
	// keep ids unique by continuing from s
	for _, e := range t.es[len(s.es):] {
		e.ID = ""
		e.ParentID = nil
		tokens := e.Tokens
		s.add(e, tokens)
	}
	return s
}

// BenchmarkBuildInput measures the model input of a ~20k-token tail after a
// capsule, with 1k and 100k entries of history before it.
func BenchmarkBuildInput(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		s := benchSession(n)
		cfg := DefaultConfig()
		if _, _, err := s.compact(TriggerUser, cfg, "ck_in"); err != nil {
			b.Fatal(err)
		}
		idx := s.es.LatestCapsule()
		fk := s.index(s.es[idx].Capsule.FirstKeptEntryID)
		tail := 0
		for _, e := range s.es[fk:] {
			tail += e.Tokens
		}
		tr := &cachedTranscript{Entries: s.es, latest: idx}
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				in, err := BuildInput(tr, InputOptions{})
				if err != nil || len(in.Messages) == 0 {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(tail), "tail-tokens")
		})
	}
}

// cachedTranscript is a path whose newest capsule index is known, as the
// session store keeps it, so the view's cost is the tail's.
type cachedTranscript struct {
	Entries
	latest int
}

func (c *cachedTranscript) LatestCapsule() int { return c.latest }

var _ = session.TypeUser

// BenchmarkBarrierDeterministic measures a whole barrier run (plan, build,
// post gate, append) with the deterministic summarizer over ~200k
// compactable tokens.
func BenchmarkBarrierDeterministic(b *testing.B) {
	s := benchSession(1)
	for total := 0; total < 220000; {
		before := len(s.es)
		s = growBench(s)
		for _, e := range s.es[before:] {
			total += e.Tokens
		}
	}
	cfg := DefaultConfig()
	bar := &Barrier{Counter: quarterCounter{}}
	leaf := s.es[len(s.es)-1].ID
	b.ReportAllocs()
	for b.Loop() {
		p, err := MakePlan(s.es, quarterCounter{}, PlanRequest{Trigger: TriggerUser, Config: cfg, CheckpointID: "ck_b", ExpectedLeaf: leaf})
		if err != nil {
			b.Fatal(err)
		}
		res := bar.Run(context.Background(), RunInput{Plan: p, Transcript: s.es, Appender: &ownerAppender{leaf: leaf}})
		if res.Outcome != OutcomeCompleted {
			b.Fatal(res.Reason)
		}
	}
}

// BenchmarkTimeoutToDegradedCapsule measures the time from the summary
// deadline to the degraded capsule appended: the summarizer never answers
// and timeoutMs is 1, so each run is the fallback path plus that 1 ms.
func BenchmarkTimeoutToDegradedCapsule(b *testing.B) {
	s := benchSession(2000)
	cfg := DefaultConfig()
	cfg.TimeoutMs = 1
	gate := make(chan struct{})
	defer close(gate)
	bar := &Barrier{Counter: quarterCounter{}, Summarizer: &fakeSummarizer{gate: gate, ignoreCtx: true}}
	leaf := s.es[len(s.es)-1].ID
	b.ReportAllocs()
	for b.Loop() {
		p, err := MakePlan(s.es, quarterCounter{}, PlanRequest{Trigger: TriggerUser, Config: cfg, CheckpointID: "ck_t", ExpectedLeaf: leaf})
		if err != nil {
			b.Fatal(err)
		}
		res := bar.Run(context.Background(), RunInput{Plan: p, Transcript: s.es, Appender: &ownerAppender{leaf: leaf}})
		if res.Quality != "degraded" {
			b.Fatal(res.Outcome, res.Reason)
		}
	}
}
