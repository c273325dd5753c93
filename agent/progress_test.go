package agent

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soba-agent/soba-lsp/agent/provider"
	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
	"github.com/soba-agent/soba-lsp/compaction"
)

// streamedSummary is what the scripted summary model answers.
const streamedSummary = "## Goal\nKeep the fox answers going\n## Done\n- answered six questions about the fox\n## Next steps\n- read missing.txt\n"

// TestCompactionProgressIsHonest_RB3: a compaction's progress says what it
// waits for with the elapsed time, then how much of the summary streamed;
// no percentage is invented for a single summary request; the summary's
// text streams as the model answers, all before the end; the title says
// "before response" only when a response waits.
func TestCompactionProgressIsHonest_RB3(t *testing.T) {
	tests := []struct {
		name      string
		inTurn    bool
		queue     bool // a prompt is sent while the compaction runs
		wantTitle string
	}{
		{"manual compact between turns", false, false, TitleCompacting},
		{"compact at a turn's preflight", true, false, TitleBeforeResponse},
		{"manual compact, then a prompt waits for it", false, true, TitleCompacting},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			summaryModel := providertest.NewOpenAI(t, providertest.Reply{Text: streamedSummary, Delay: 1200 * time.Millisecond, ChunkDelay: 20 * time.Millisecond})
			sp, err := provider.New(provider.Config{Provider: "openai", BaseURL: summaryModel.URL, Model: "summary-model", ContextWindow: 65000, MaxOutputTokens: 2000})
			if err != nil {
				t.Fatal(err)
			}
			var script []providertest.Reply
			for i := 0; i < 6; i++ {
				script = append(script, providertest.Text("answer "+bigText))
			}
			slow := providertest.Call("c1", "read_file", map[string]any{"path": "missing.txt"})
			slow.Delay = 300 * time.Millisecond
			script = append(script, slow, providertest.Text("done"))
			f := newFixture(t, func(o *Options) {
				smallWindow(o)
				o.Compaction.Auto = false
				o.Summarizer = &ModelSummarizer{Provider: sp, Model: "summary-model"}
			}, script...)
			for i := 0; i < 6; i++ {
				f.prompt(t, "q "+bigText)
			}
			var turn string
			if tt.inTurn {
				turn, _, _ = f.agent.Prompt("read missing.txt")
				time.Sleep(50 * time.Millisecond) // the slow inference is streaming
			}
			done := make(chan compaction.CompactionResult, 1)
			go func() { r, _ := f.agent.Compact(context.Background(), ""); done <- r }()
			if tt.queue {
				f.rec.await(t, "the compaction's start", func(r *recorder) bool {
					return slices.ContainsFunc(r.comps, func(c CompactionEvent) bool { return c.Phase == "start" })
				})
				var queued bool
				turn, queued, _ = f.agent.Prompt("read missing.txt")
				if !queued {
					t.Fatal("a prompt during the compaction was not queued")
				}
			}
			res := <-done
			if res.Outcome != compaction.OutcomeCompleted {
				t.Fatalf("compact %+v", res)
			}
			if tt.inTurn || tt.queue {
				f.rec.turnEnd(t, turn)
			}
			f.rec.mu.Lock()
			comps := append([]CompactionEvent(nil), f.rec.comps...)
			f.rec.mu.Unlock()
			var (
				title    string
				streamed strings.Builder
				msgs     []string
				ended    bool
				last     int64
			)
			for _, c := range comps {
				if c.OperationID != res.OperationID {
					continue
				}
				if ended {
					t.Fatalf("%s event after the end", c.Phase)
				}
				switch c.Phase {
				case "start":
					title = c.Title
				case "summary":
					streamed.WriteString(c.SummaryDelta)
				case "progress":
					if c.Percentage != nil {
						t.Fatalf("progress %q with %d%%: one summary request has no real percentage", c.Message, *c.Percentage)
					}
					if c.ElapsedMs < last {
						t.Fatalf("elapsed went back: %d after %d", c.ElapsedMs, last)
					}
					last = c.ElapsedMs
					msgs = append(msgs, c.Message)
				case "end":
					ended = true
				}
			}
			if title != tt.wantTitle {
				t.Fatalf("title %q, want %q", title, tt.wantTitle)
			}
			if streamed.String() != streamedSummary {
				t.Fatalf("streamed summary %q, want the model's answer %q", streamed.String(), streamedSummary)
			}
			waits := slices.ContainsFunc(msgs, func(m string) bool { return strings.HasSuffix(m, " · a prompt waits") })
			if waits != tt.queue {
				t.Fatalf("progress says a prompt waits: %v, want %v (messages %q)", waits, tt.queue, msgs)
			}
			for i, m := range msgs {
				msgs[i] = strings.TrimSuffix(m, " · a prompt waits")
			}
			all := strings.Join(msgs, "\n")
			for _, want := range []*regexp.Regexp{
				regexp.MustCompile(`(?m)^waiting for the summary model · 0 s$`),
				regexp.MustCompile(`(?m)^waiting for the summary model · 1 s$`), // the tick while nothing streams
				regexp.MustCompile(`(?m)^summarizing · [1-9][0-9]* tokens? · 1 s$`),
				regexp.MustCompile(`(?m)^building the capsule · [0-9]+ s$`),
			} {
				if !want.MatchString(all) {
					t.Fatalf("no progress matching %s in:\n%s", want, all)
				}
			}
		})
	}
}

// TestProgressMessage_RB3: the words of each stage.
func TestProgressMessage_RB3(t *testing.T) {
	tests := []struct {
		pr      compaction.Progress
		elapsed time.Duration
		want    string
	}{
		{compaction.Progress{Stage: compaction.StageWaiting, Part: 1, Parts: 1}, 12 * time.Second, "waiting for the summary model · 12 s"},
		{compaction.Progress{Stage: compaction.StageSummarizing, Part: 1, Parts: 1, OutputTokens: 640}, 15 * time.Second, "summarizing · 640 tokens · 15 s"},
		{compaction.Progress{Stage: compaction.StageSummarizing, Part: 1, Parts: 1, OutputTokens: 1}, 500 * time.Millisecond, "summarizing · 1 token · 0 s"},
		{compaction.Progress{Stage: compaction.StageWaiting, Part: 2, Parts: 3, Percent: 33}, 65 * time.Second, "waiting for the summary model · part 2 of 3 · 1 min 05 s"},
		{compaction.Progress{Stage: compaction.StageSummarizing, Part: 3, Parts: 3, OutputTokens: 12040}, 3 * time.Second, "summarizing part 3 of 3 · 12,040 tokens · 3 s"},
		{compaction.Progress{Stage: compaction.StageNative, Part: 1, Parts: 1, OutputTokens: 80}, 14 * time.Second, "waiting for the provider's native compaction · 14 s"},
		{compaction.Progress{Stage: compaction.StageBuilding}, 0, "building the capsule · 0 s"},
	}
	for _, tt := range tests {
		if got := progressMessage(tt.pr, tt.elapsed); got != tt.want {
			t.Errorf("progressMessage(%+v, %v) = %q, want %q", tt.pr, tt.elapsed, got, tt.want)
		}
	}
}
