package tokens

import (
	"encoding/json"
	"math"
	"os"
	"runtime"
	"testing"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/session"
)

// fakeProvider counts like a model whose tokenizer gives factor times what
// ours does, plus nothing else: the shape self-calibration must learn.
type fakeProvider struct{ factor float64 }

func (p fakeProvider) count(raw int) int { return int(math.Round(float64(raw) * p.factor)) }

func within(got, want int, tol float64) bool {
	return math.Abs(float64(got-want)) <= tol*float64(want)
}

// TestCalibrationAfterOneResponse_RO1: after one usage report from a provider
// whose counts differ by a fixed factor, the estimate of a new, different
// text is within 5% of what the provider will count.
func TestCalibrationAfterOneResponse_RO1(t *testing.T) {
	c := Default()
	src, err := os.ReadFile(runtime.GOROOT() + "/src/net/http/server.go")
	if err != nil {
		t.Skip(err)
	}
	first := string(src[:20000])
	later := "Please rename the handler and explain what ServeMux does with trailing slashes, then run the tests. " +
		string(src[60000:75000])
	for _, factor := range []float64{1.3, 0.8, 1.05} {
		p := fakeProvider{factor}
		var m Meter
		system := c.Count("You are SOBA, a coding agent. Tools: read_file, write_file.")
		m.Reset(system, nil)
		m.Add(c.Count(first))
		reply := c.Count("I read the file.")
		m.Add(reply)
		m.Usage(p.count(system+c.Count(first)), p.count(reply))
		if got, src := m.Effective(); src != SourceProviderUsage || got != p.count(system+c.Count(first))+p.count(reply) {
			t.Fatalf("factor %v: Effective after usage = %d, %s", factor, got, src)
		}
		// A compaction: the old report is stale, the view is rebuilt.
		m.Reset(system, []int{c.Count(later)})
		got, source := m.Effective()
		want := p.count(system + c.Count(later))
		if source != SourceEstimated || !within(got, want, 0.05) {
			t.Errorf("factor %v: estimated %d (%s), provider will count %d: off by %.1f%%", factor, got, source, want, 100*math.Abs(float64(got-want))/float64(want))
		}
	}
}

func TestMeterSources_RO1(t *testing.T) {
	var m Meter
	m.Reset(100, []int{10, 20, 30})
	if got, src := m.Effective(); got != 160 || src != SourceEstimated {
		t.Fatalf("fresh: %d %s, want 160 estimated", got, src)
	}
	m.Add(40) // the response
	m.Usage(150, 45)
	if got, src := m.Effective(); got != 195 || src != SourceProviderUsage {
		t.Fatalf("after usage: %d %s, want 195 provider_usage", got, src)
	}
	ratio := m.Calibration().Ratio() // 195/200
	m.Add(100)                       // a tool result
	if got, _ := m.Effective(); got != 195+int(math.Round(100*ratio)) {
		t.Fatalf("after add: %d, want usage + calibrated estimate %d", got, 195+int(math.Round(100*ratio)))
	}
	m.Invalidate()
	if got, src := m.Effective(); src != SourceEstimated || got != int(math.Round(300*ratio)) {
		t.Fatalf("after invalidate: %d %s, want %d estimated", got, src, int(math.Round(300*ratio)))
	}
	m.Usage(0, 10) // a report without a prompt count measures nothing
	if _, src := m.Effective(); src != SourceEstimated {
		t.Fatalf("a report with no prompt count switched the source to %s", src)
	}
}

func TestMeterResetWithUsage_RT4(t *testing.T) {
	var m Meter
	// resume: entries 0..3, entry 2 is the last response with usage
	m.ResetWithUsage(50, []int{10, 20, 30, 40}, 2, 100, 30)
	got, src := m.Effective()
	// ratio = 130 / (50+10+20+30) = 130/110; since = 40
	want := 130 + int(math.Round(40*130.0/110))
	if src != SourceProviderUsage || got != want {
		t.Fatalf("Effective = %d %s, want %d provider_usage", got, src, want)
	}
	m.ResetWithUsage(50, []int{10}, 5, 100, 30) // out of range: plain reset
	if _, src := m.Effective(); src != SourceEstimated {
		t.Fatalf("out-of-range index kept source %s", src)
	}
}

func TestCalibrationBoundsAndSmoothing(t *testing.T) {
	tests := []struct {
		name    string
		reports [][2]int // actual, estimated
		want    float64
	}{
		{"uncalibrated", nil, 1},
		{"first sets", [][2]int{{130, 100}}, 1.3},
		{"clamped high", [][2]int{{1000, 100}}, MaxRatio},
		{"clamped low", [][2]int{{10, 100}}, MinRatio},
		{"ignored zero", [][2]int{{0, 100}, {100, 0}}, 1},
		{"smoothed", [][2]int{{130, 100}, {100, 100}}, 1.3 + calibrationWeight*(1-1.3)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c Calibration
			for _, r := range tc.reports {
				c.Learn(r[0], r[1])
			}
			if math.Abs(c.Ratio()-tc.want) > 1e-9 {
				t.Errorf("Ratio = %v, want %v", c.Ratio(), tc.want)
			}
		})
	}
}

func TestLearnOverflow_RG9(t *testing.T) {
	var c Calibration
	c.Learn(100, 100)
	c.LearnOverflow(70000, 50000) // full weight: the stated size wins
	if math.Abs(c.Ratio()-1.4) > 1e-9 {
		t.Fatalf("Ratio = %v after an overflow report, want 1.4", c.Ratio())
	}
	var m Meter
	m.Reset(1000, []int{49000})
	m.LearnOverflow(65000)
	if got, _ := m.Effective(); got != 65000 {
		t.Fatalf("Effective after overflow = %d, want the stated 65000", got)
	}
}

func TestMeterSetBase(t *testing.T) {
	var m Meter
	m.Reset(100, []int{50})
	m.Usage(150, 0)
	m.SetBase(130) // a skill added 30 tokens to the system prompt
	if got, _ := m.Effective(); got != 180 {
		t.Fatalf("Effective = %d, want 180", got)
	}
}

func TestEntryTokens(t *testing.T) {
	c := Default()
	args := json.RawMessage(`{"path":"main.go"}`)
	st := capsule.State{Goal: "ship the parser", Done: []string{"lexer"}, FilesRead: []string{"a.go"}}
	tests := []struct {
		name string
		e    session.Entry
		want int
	}{
		{"user", session.Entry{Type: session.TypeUser, User: &session.UserMessage{Text: "fix the bug"}}, MessageOverhead + c.Count("fix the bug")},
		{"assistant with call", session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{Text: "Reading.",
			ToolCalls: []session.ToolCall{{ID: "call_1", Name: "read_file", Arguments: args}}}},
			MessageOverhead + c.Count("Reading.") + ToolCallOverhead + c.Count("call_1") + c.Count("read_file") + c.Count(string(args))},
		{"tool result", session.Entry{Type: session.TypeToolResult, ToolResult: &session.ToolResult{ToolCallID: "call_1", Content: "package main"}},
			MessageOverhead + ToolResultOverhead + c.Count("call_1") + c.Count("package main")},
		{"capsule", session.Entry{Type: session.TypeCapsule, Capsule: &session.Capsule{State: st}}, MessageOverhead + c.Count(capsule.RenderModelText(st))},
		{"capsule load", session.Entry{Type: session.TypeCapsuleLoad, CapsuleLoad: &session.CapsuleLoad{State: st}}, MessageOverhead + c.Count(capsule.RenderModelText(st))},
		{"header", session.Entry{Type: session.TypeSession, Session: &session.SessionHeader{SessionID: "s"}}, 0},
		{"checkpoint", session.Entry{Type: session.TypeCheckpoint, Checkpoint: &session.Checkpoint{Kind: "milestone", Note: "x"}}, 0},
		{"unknown", session.Entry{Type: "future_type"}, 0},
		{"missing payload", session.Entry{Type: session.TypeUser}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := EntryTokens(&tc.e); got != tc.want {
				t.Errorf("EntryTokens = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestUsageCountsThinking_RC9: a completion that counted thinking the
// transcript keeps apart is in the effective size until the next report,
// and does not skew the calibration: an exact provider stays at ratio 1.
func TestUsageCountsThinking_RC9(t *testing.T) {
	tests := []struct {
		name                     string
		thinking                 int
		usage                    func(m *Meter, prompt, completion, thinking int)
		wantEffective, wantAfter int
	}{
		{"thinking estimated", 300, func(m *Meter, p, c, th int) { m.UsageThinking(p, c, th) }, 1000 + 350, 2000},
		{"thinking left out of the estimate", 300, func(m *Meter, p, c, _ int) { m.Usage(p, c) }, 1000 + 350, 0},
	}
	for _, tt := range tests {
		var m Meter
		m.Reset(200, []int{800})
		m.Add(50) // the answer's entry, thinking not included
		tt.usage(&m, 1000, 50+tt.thinking, tt.thinking)
		if got, _ := m.Effective(); got != tt.wantEffective {
			t.Errorf("%s: effective %d, want %d (prompt + the whole completion)", tt.name, got, tt.wantEffective)
		}
		// A compaction rebuilds the view: the estimate is calibrated.
		m.Reset(200, []int{1800})
		got, _ := m.Effective()
		if tt.wantAfter > 0 && got != tt.wantAfter {
			t.Errorf("%s: calibrated estimate %d, want %d (an exact provider)", tt.name, got, tt.wantAfter)
		}
		if tt.wantAfter == 0 && got <= 2000 {
			t.Errorf("%s: calibrated estimate %d: the thinking no longer inflates the ratio?", tt.name, got)
		}
	}
}
