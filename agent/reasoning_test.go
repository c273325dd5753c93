package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/agent/provider"
	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
	"github.com/soba-agent/soba-lsp/compaction"
)

// thinkingWays are the ways a server sends a model's thinking, as the fake
// server streams them.
var thinkingWays = []struct {
	name, format, as string
}{
	{"<think> in the content", providertest.FormatOpenAI, "tags"},
	{"<thinking> in the content", providertest.FormatOpenAI, "thinking-tags"},
	{"opening tag in the template", providertest.FormatOpenAI, "open-missing"},
	{"reasoning_content", providertest.FormatOpenAI, "reasoning_content"},
	{"reasoning", providertest.FormatOpenAI, "reasoning"},
	{"Ollama thinking", providertest.FormatOllama, "thinking"},
	{"Ollama <think>", providertest.FormatOllama, "tags"},
	{"Anthropic thinking blocks", providertest.FormatAnthropic, ""},
	{"Responses reasoning", providertest.FormatResponses, ""},
}

func newModelServer(t *testing.T, format string, script ...providertest.Reply) *providertest.Server {
	switch format {
	case providertest.FormatOllama:
		return providertest.NewOllama(t, script...)
	case providertest.FormatAnthropic:
		return providertest.NewAnthropic(t, script...)
	case providertest.FormatResponses:
		return providertest.NewResponses(t, script...)
	}
	return providertest.NewOpenAI(t, script...)
}

// TestThinkingIsNotTheAnswer_RC9: for each way a server sends thinking,
// in the turn's answers and in the summary model's answer, the
// transcript's assistant text, the next requests and the capsule hold the
// answer alone; the thinking is kept apart in the assistant entry and
// streamed as thinking events, never as text.
func TestThinkingIsNotTheAnswer_RC9(t *testing.T) {
	for _, way := range thinkingWays {
		t.Run(way.name, func(t *testing.T) {
			think := func(n string) string { return "THINK-" + n + " the user wants go.mod read; draft: DRAFT-GOAL-XYZ" }
			reply := func(r providertest.Reply, n string) providertest.Reply {
				r.Thinking, r.ThinkingAs = think(n), way.as
				return r
			}
			script := []providertest.Reply{
				reply(providertest.Call("c1", "read_file", map[string]any{"path": "go.mod"}), "1"),
				reply(providertest.Text("The module is calc."), "2"),
				reply(providertest.Text("Still calc."), "3"),
				reply(providertest.Text("Yes, calc."), "4"),
			}
			model := newModelServer(t, way.format, script...)
			summary := newModelServer(t, way.format, providertest.Reply{Text: streamedSummary,
				Thinking: "THINK-S DRAFT-GOAL-XYZ OK let me answer.", ThinkingAs: way.as})
			mk := func(srv *providertest.Server, name string) provider.Provider {
				p, err := provider.New(provider.Config{Provider: way.format, BaseURL: srv.URL, Model: name, ContextWindow: 12000, MaxOutputTokens: 1000})
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			f := newFixture(t, func(o *Options) {
				smallWindow(o)
				o.Compaction.Auto = false
				o.Model, o.ProviderName, o.ModelName = mk(model, "test-model"), way.format, "test-model"
				o.Summarizer = &ModelSummarizer{Provider: mk(summary, "summary-model"), Model: "summary-model"}
			})
			if err := os.WriteFile(filepath.Join(f.dir, "go.mod"), []byte("module calc\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			f.prompt(t, "What module is this? "+bigText)
			f.prompt(t, "Sure? "+bigText)
			f.prompt(t, "Really? "+bigText)

			// The transcript: the answer alone as the text, the thinking apart.
			n := 0
			for _, e := range f.entries(t) {
				if e.Assistant == nil {
					continue
				}
				n++
				if strings.Contains(e.Assistant.Text, "THINK-") || strings.Contains(e.Assistant.Text, "think>") {
					t.Errorf("assistant text %q holds thinking", e.Assistant.Text)
				}
				if !strings.Contains(e.Assistant.Thinking, "THINK-") {
					t.Errorf("assistant entry %q has thinking %q, want it kept apart", e.Assistant.Text, e.Assistant.Thinking)
				}
			}
			if n != 4 {
				t.Fatalf("%d assistant entries, want 4", n)
			}
			// The stream: thinking events, and text events without thinking.
			var text, thought strings.Builder
			f.rec.mu.Lock()
			for _, e := range f.rec.events {
				switch e.Type {
				case "text":
					text.WriteString(e.Delta)
				case "thinking":
					if e.Moved {
						// An editor moves what it showed as the answer.
						s := text.String()
						text.Reset()
						text.WriteString(strings.TrimSuffix(s, e.Delta))
					}
					thought.WriteString(e.Delta)
				}
			}
			f.rec.mu.Unlock()
			if strings.Contains(text.String(), "THINK-") || !strings.Contains(text.String(), "Yes, calc.") {
				t.Errorf("streamed answer %q: want the answers without thinking", text.String())
			}
			for _, k := range []string{"THINK-1", "THINK-2", "THINK-3", "THINK-4"} {
				if !strings.Contains(thought.String(), k) {
					t.Errorf("thinking events %q miss %s", thought.String(), k)
				}
			}
			// The next requests: the answers alone. Anthropic's thinking
			// block goes back verbatim, with its signature, with the
			// tool-use answer it came with (the API requires it).
			reqs := model.Requests()
			for i, r := range reqs {
				for _, m := range r.Messages {
					if strings.Contains(m.Text, "THINK-") || strings.Contains(m.Text, "think>") {
						t.Errorf("request %d sends thinking as %s text: %q", i, m.Role, m.Text)
					}
				}
			}
			if way.format == providertest.FormatAnthropic {
				native, _ := json.Marshal(reqs[1].NativeItems)
				if !strings.Contains(string(native), providertest.ThinkingSignature) {
					t.Errorf("the request after the tool call sends no signed thinking block: %s", native)
				}
			}
			if way.as == "reasoning_content" && !strings.Contains(string(reqs[1].Raw), `"reasoning_content":"THINK-1`) {
				t.Errorf("the request after the tool call does not send its reasoning_content back: %s", reqs[1].Raw)
			}

			// The capsule: the summary model's answer alone.
			res, err := f.agent.Compact(context.Background(), "")
			if err != nil || res.Outcome != compaction.OutcomeCompleted {
				t.Fatalf("compact: %+v, %v", res, err)
			}
			caps := f.capsules(t)
			c := caps[len(caps)-1]
			if c.Quality != "full" {
				t.Errorf("capsule quality %q, want full (the summary's answer parsed)", c.Quality)
			}
			state, _ := json.Marshal(c.State)
			for _, leak := range []string{"THINK-", "DRAFT-GOAL", "think>", "let me answer"} {
				if strings.Contains(string(state), leak) {
					t.Errorf("capsule holds thinking %q: %s", leak, state)
				}
			}
			if c.State.Goal != "Keep the fox answers going" {
				t.Errorf("capsule goal %q, want the summary's", c.State.Goal)
			}
		})
	}
}
