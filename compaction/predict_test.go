package compaction

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/soba-agent/soba-lsp/capsule"
)

// countingNative is a native compactor that only counts its calls.
type countingNative struct{ calls atomic.Int32 }

func (n *countingNative) NativeTarget() (string, string) { return "anthropic", "m" }
func (n *countingNative) CompactNative(ctx context.Context, history Input, tokens int) (capsule.Native, error) {
	n.calls.Add(1)
	return capsule.Native{}, &NativeSkip{Reason: "below minimum"}
}

// TestNoWastedSummary_RR1_RR2: a soft compaction whose deterministic
// capsule (previous capsule, artifacts, the user's words) the exact check
// (R-R2) would decline is skipped before any summary model or native
// compaction is asked, and says so; R-R1 passed for all of them, so the
// prediction is the stricter condition. Forced and explicit compactions
// are not predicted (R-R2 does not apply to them). A summary that makes the
// capsule larger than predicted is still declined by the exact check, and
// the line then says the summary model was asked.
func TestNoWastedSummary_RR1_RR2(t *testing.T) {
	b := longSession(8)
	base := smallConfig()
	// The deterministic capsule's reclaim at the default config: the floor
	// that lets it pass exactly.
	p0 := planFor(t, b, TriggerAutoThreshold, base)
	det, err := BuildCapsule(b.es, quarterCounter{}, p0, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	exactFloor := p0.TokensBefore - det.TokensAfter
	if exactFloor <= 0 {
		t.Fatalf("the fixture reclaims nothing (%d → %d)", p0.TokensBefore, det.TokensAfter)
	}
	bigSummary := goodSummary + "## Notes\n" + strings.Repeat("- a long note the model wrote about what it saw in the history\n", 200)
	tests := []struct {
		name        string
		trigger     string
		minReclaim  int
		answer      string
		native      bool
		want        string
		wantAsked   bool
		wantCalls   int32
		wantLine    string
		wantDecline bool
	}{
		{name: "soft, prediction declines: nothing asked", trigger: TriggerAutoThreshold, minReclaim: exactFloor + 1, answer: goodSummary,
			want: OutcomeSkipped, wantLine: "predicted before generating: it would free only", wantDecline: true},
		{name: "soft with native, prediction declines: neither asked", trigger: TriggerTurnComplete, minReclaim: exactFloor + 1, answer: goodSummary, native: true,
			want: OutcomeSkipped, wantLine: "the summary model was not asked", wantDecline: true},
		{name: "soft, prediction passes: summary asked, completed", trigger: TriggerMilestone, minReclaim: exactFloor, answer: goodSummary,
			want: OutcomeCompleted, wantAsked: true, wantCalls: 1, wantLine: "Compacted context · milestone"},
		{name: "soft, summary larger than predicted: declined after asking", trigger: TriggerPlanPivot, minReclaim: exactFloor, answer: bigSummary,
			want: OutcomeSkipped, wantAsked: true, wantCalls: 1, wantLine: "· the summary model was asked", wantDecline: true},
		{name: "user compaction is not predicted", trigger: TriggerUser, minReclaim: exactFloor + 1, answer: goodSummary,
			want: OutcomeCompleted, wantAsked: true, wantCalls: 1, wantLine: "Compacted context · user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			c.MinReclaimableTokens = tt.minReclaim
			if ok, why := PreGenerationROI(p0.TokensBefore, c); !ok {
				t.Fatalf("R-R1 must pass for the case to test the stricter check: %s", why)
			}
			p := planFor(t, b, tt.trigger, c)
			sum := &fakeSummarizer{answer: tt.answer}
			bar := &Barrier{Counter: quarterCounter{}, Summarizer: sum}
			nat := &countingNative{}
			if tt.native {
				bar.Native = nat
			}
			var warns []string
			res := runBarrier(bar, context.Background(), b.es, p, &ownerAppender{leaf: p.ExpectedLeaf}, &warns)
			if res.Outcome != tt.want {
				t.Fatalf("outcome %q (%s), want %q", res.Outcome, res.Reason, tt.want)
			}
			if got := sum.calls.Load(); got != tt.wantCalls {
				t.Errorf("%d summary calls, want %d", got, tt.wantCalls)
			}
			if tt.native && nat.calls.Load() != tt.wantCalls {
				t.Errorf("%d native calls, want %d", nat.calls.Load(), tt.wantCalls)
			}
			if res.SummaryAsked != tt.wantAsked {
				t.Errorf("SummaryAsked %v, want %v", res.SummaryAsked, tt.wantAsked)
			}
			if !strings.Contains(res.Line, tt.wantLine) {
				t.Errorf("line %q lacks %q", res.Line, tt.wantLine)
			}
			if (res.Declined != nil) != tt.wantDecline {
				t.Errorf("declined %+v", res.Declined)
			}
			if tt.want == OutcomeSkipped && !tt.wantAsked && res.Generated {
				t.Error("a predicted skip generated nothing")
			}
			if f := NewFlightRecord(bar.now(), "s", "estimated", p, res); f.SummaryAsked != tt.wantAsked {
				t.Errorf("flight record summaryAsked %v", f.SummaryAsked)
			}
		})
	}
}
