package agent

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/agent/provider"
	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
	"github.com/soba-agent/soba-lsp/compaction"
)

// corpusDir holds the error bodies and streams collected from the servers'
// sources and their users' reports, each with its sidecar.
var corpusDir = filepath.Join("provider", "testdata", "errors")

type corpusEntry struct {
	Name     string
	Server   string `json:"server"`
	Provider string `json:"provider"`
	Status   int    `json:"status"`
	Kind     string `json:"kind"`
	File     string `json:"file"`
	Stated   *int   `json:"stated"`
	Limit    *int   `json:"limit"`
	Output   *int   `json:"output"`
	Body     string `json:"-"`
}

// errorCorpus returns the collected entries of the given kinds, by name.
func errorCorpus(t *testing.T, kinds ...string) []corpusEntry {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(corpusDir, "*.source.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no corpus in %s: %v", corpusDir, err)
	}
	var out []corpusEntry
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var e corpusEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		e.Name = strings.TrimSuffix(filepath.Base(p), ".source.json")
		body, err := os.ReadFile(filepath.Join(corpusDir, e.File))
		if err != nil {
			t.Fatal(err)
		}
		e.Body = string(body)
		for _, k := range kinds {
			if e.Kind == k {
				out = append(out, e)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// reply is the entry as the scripted server answers it: its status and
// body, or its stream after a 200.
func (e corpusEntry) reply() providertest.Reply {
	if e.Status == 0 {
		return providertest.Reply{Body: e.Body}
	}
	return providertest.Reply{Status: e.Status, Body: e.Body}
}

// historyTurns builds a history the recovery compaction can shorten, and
// small enough that the calibration an overflow's stated figures teach
// (at most ×2, tokens.MaxRatio) keeps it under smallWindow's hard limit:
// the collected bodies state their own servers' figures, not this
// request's.
const historyTurns = 3

// recovered is the answer to the retry. Its usage is the server's count of
// the retried request, in line with the calibration the overflow's figures
// taught (a report far below the calibrated estimate would be taken for
// silent truncation).
var recovered = providertest.Reply{Text: "recovered", Usage: &provider.Usage{InputTokens: 6000, OutputTokens: 2}}

// expectedFit is the output budget the one retry must carry for an
// overflow the requested output caused, from the sidecar's figures (0 when
// the prompt must shrink instead): what fits beside the stated prompt,
// when that is below what was sent and at least half of it (smallWindow
// sends 1000, below the 1,024 floor).
func expectedFit(e corpusEntry, sent int) int {
	if e.Output == nil || e.Stated == nil || e.Limit == nil || *e.Stated >= *e.Limit {
		return 0
	}
	fit := *e.Limit - *e.Stated
	if fit >= sent || fit < sent/2 {
		return 0
	}
	return fit
}

// Every collected overflow wording, answered by a fake server speaking the
// provider's own wire (an HTTP error, or a stream that fails after the
// 200): the agent compacts once and retries once (R-G9) — or, when the
// server's figures show only the requested output does not fit, retries
// once with max_tokens lowered to what fits and compacts nothing.
func TestEveryOverflowWordingRecoversOnce_RG9(t *testing.T) {
	entries := errorCorpus(t, string(provider.KindOverflowPrompt), string(provider.KindOverflowOutput))
	if len(entries) < 40 {
		t.Fatalf("only %d overflow entries", len(entries))
	}
	streams, lowered := 0, 0
	for _, e := range entries {
		if e.Status == 0 {
			streams++
		}
		t.Run(e.Name, func(t *testing.T) {
			const sent = 1000 // smallWindow's maxOutputTokens
			fit := expectedFit(e, sent)
			var script []providertest.Reply
			for i := 0; i < historyTurns; i++ {
				script = append(script, providertest.Text("answer "+bigText))
			}
			script = append(script, e.reply(), recovered)
			f := newFormatFixture(t, e.Provider, nil, script) // smallWindow
			for i := 0; i < historyTurns; i++ {
				if end := f.prompt(t, "q "+bigText); end.Outcome != "completed" {
					t.Fatalf("history turn %d: %s %s", i, end.Outcome, end.Error)
				}
			}
			capsBefore := len(f.capsules(t))
			before := len(f.model.Requests())
			end := f.prompt(t, "one more")
			if end.Outcome != "completed" {
				t.Fatalf("turn %s: %s", end.Outcome, end.Error)
			}
			reqs := f.model.Requests()[before:]
			if len(reqs) != 2 {
				t.Fatalf("%d requests in the overflowing turn, want the request and exactly one retry", len(reqs))
			}
			caps := f.capsules(t)
			if fit > 0 {
				lowered++
				if reqs[0].MaxTokens != sent || reqs[1].MaxTokens != fit {
					t.Errorf("max_tokens %d then %d, want %d then %d", reqs[0].MaxTokens, reqs[1].MaxTokens, sent, fit)
				}
				if len(caps) != capsBefore {
					t.Errorf("an overflow caused by the output compacted the history")
				}
				return
			}
			if len(caps) != capsBefore+1 || caps[len(caps)-1].Trigger != compaction.TriggerContextOverflow {
				t.Fatalf("want one context_overflow capsule, got %d new", len(caps)-capsBefore)
			}
			if reqs[1].MaxTokens != sent {
				t.Errorf("the retry after compacting asked for max_tokens %d, want %d", reqs[1].MaxTokens, sent)
			}
		})
	}
	if streams == 0 || lowered == 0 {
		t.Errorf("%d mid-stream failures and %d lowered retries among the overflows; want some of each", streams, lowered)
	}
}

// With a large output budget, each overflow whose figures show only the
// output does not fit is retried once with the budget that fits, without
// compacting (there is nothing to compact: a fresh session).
func TestOverflowFromOutputLowersMaxTokens(t *testing.T) {
	const sent = 65536
	big := func(o *Options) {
		c := compaction.DefaultConfig()
		c.ContextWindow, c.MaxOutputTokens = 400000, sent
		o.Compaction = c
	}
	n := 0
	for _, e := range errorCorpus(t, string(provider.KindOverflowOutput)) {
		fit := 0
		if e.Limit != nil && e.Stated != nil {
			fit = *e.Limit - *e.Stated
		}
		if fit < 1024 || fit >= sent {
			continue // answered by compaction (TestEveryOverflowWordingRecoversOnce_RG9)
		}
		n++
		t.Run(e.Name, func(t *testing.T) {
			f := newFormatFixture(t, e.Provider, big, []providertest.Reply{e.reply(), providertest.Text("short answer")})
			if end := f.prompt(t, "hello"); end.Outcome != "completed" {
				t.Fatalf("turn %s: %s", end.Outcome, end.Error)
			}
			reqs := f.model.Requests()
			if len(reqs) != 2 || reqs[0].MaxTokens != sent || reqs[1].MaxTokens != fit {
				t.Fatalf("requests %d, max_tokens %v, want %d then %d", len(reqs), maxTokensOf(reqs), sent, fit)
			}
			if len(f.capsules(t)) != 0 {
				t.Error("compacted")
			}
		})
	}
	if n < 5 {
		t.Errorf("only %d output overflows exercised", n)
	}
}

func maxTokensOf(reqs []providertest.Received) []int {
	var out []int
	for _, r := range reqs {
		out = append(out, r.MaxTokens)
	}
	return out
}

// A used-up quota or credit is never retried, and the user reads so
// plainly, with the server's own words.
func TestQuotaIsNotRetried(t *testing.T) {
	entries := errorCorpus(t, string(provider.KindQuota))
	if len(entries) < 4 {
		t.Fatalf("only %d quota entries", len(entries))
	}
	for _, e := range entries {
		t.Run(e.Name, func(t *testing.T) {
			f := newFormatFixture(t, e.Provider, nil, []providertest.Reply{e.reply()})
			end := f.prompt(t, "hello")
			if end.Outcome != "failed" || !strings.Contains(end.Error, "quota or credit is used up") ||
				!strings.Contains(end.Error, "SOBA did not retry, since waiting will not help") {
				t.Fatalf("turn %s: %q", end.Outcome, end.Error)
			}
			if n := len(f.model.Requests()); n != 1 {
				t.Fatalf("%d requests: a used-up quota was retried", n)
			}
			if len(f.capsules(t)) != 0 {
				t.Fatal("a quota answer compacted the history")
			}
		})
	}
}

// The user-facing sentences, one row each (docs/messages.md).
func TestUserMessages(t *testing.T) {
	for _, tc := range userMessageCases() {
		if tc.got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, tc.got, tc.want)
		}
	}
}

// userMessageCases are the agent's user-facing sentences as the code
// writes them (got) and as they should read (want).
func userMessageCases() []struct{ name, got, want string } {
	return []struct {
		name, got, want string
	}{
		{"over limit, latest tool result", msgOverLimit(overLimit{Limit: 17000, Needed: 22162, How: overCompacted, Part: partToolResult, PartTokens: 12000, Latest: true}),
			"SOBA could not fit this turn into the model's 17,000-token limit even after compacting: the latest tool result alone is 12,000 tokens. Raise `model.contextWindow` if the model allows it, or ask for a smaller part."},
		{"over limit, older tool result", msgOverLimit(overLimit{Limit: 17000, How: overCompacted, Part: partToolResult, PartTokens: 9000}),
			"SOBA could not fit this turn into the model's 17,000-token limit even after compacting: one tool result alone is 9,000 tokens. Raise `model.contextWindow` if the model allows it, or ask for a smaller part."},
		{"over limit, user message, nothing to compact", msgOverLimit(overLimit{Limit: 10000, Part: partUser, PartTokens: 12001}),
			"SOBA could not fit this turn into the model's 10,000-token limit, and there is nothing older to compact: your message alone is 12,001 tokens. Raise `model.contextWindow` if the model allows it, or send a shorter message."},
		{"over limit, what must stay is over by itself", msgOverLimit(overLimit{Limit: 17000, How: overCannotCompact, Part: partToolResult, PartTokens: 18000, Latest: true}),
			"SOBA could not fit this turn into the model's 17,000-token limit, and compacting cannot bring it under: the latest tool result alone is 18,000 tokens. Raise `model.contextWindow` if the model allows it, or ask for a smaller part."},
		{"over limit, answer", msgOverLimit(overLimit{Limit: 8000, How: overCompacted, Part: partAnswer, PartTokens: 5000}),
			"SOBA could not fit this turn into the model's 8,000-token limit even after compacting: the model's last answer alone is 5,000 tokens. Raise `model.contextWindow` if the model allows it, or ask for a shorter answer."},
		{"over limit, system prompt", msgOverLimit(overLimit{Limit: 6000, How: overCompacted, Part: partSystem, PartTokens: 4000}),
			"SOBA could not fit this turn into the model's 6,000-token limit even after compacting: the system prompt and tool descriptions alone are 4,000 tokens. Raise `model.contextWindow` if the model allows it, or turn off skills or MCP servers this session does not need."},
		{"over limit, no single part", msgOverLimit(overLimit{Limit: 1000000, Needed: 1000500, How: overCompacted}),
			"SOBA could not fit this turn into the model's 1,000,000-token limit even after compacting: what must stay is still 1,000,500 tokens. Raise `model.contextWindow` if the model allows it, or start a new session."},
		{"quota", msgQuota("anthropic", "Your credit balance is too low to access the Anthropic API."),
			"The model provider (anthropic) says the account's quota or credit is used up: \"Your credit balance is too low to access the Anthropic API.\". SOBA did not retry, since waiting will not help: add credit or raise the limit with the provider, or switch `model.provider` or `model.name`."},
		{"overflow again, server window smaller", msgOverflowAgain(true, 8192, 32768),
			"The model server still answered that the request does not fit its context window after SOBA compacted once, so the request was not sent again. The server says its window is 8,192 tokens but `model.contextWindow` is 32,768: set `model.contextWindow` to 8,192 or less, or start the server with a larger context."},
		{"overflow, nothing to compact", msgOverflowAgain(false, 0, 32768),
			"The model server answered that the request does not fit its context window, and there is nothing older to compact, so the request was not sent again. Set `model.contextWindow` to the window the server really has (llama.cpp -c, Ollama num_ctx, vLLM --max-model-len), or start a new session."},
	}
}

// The sentence a user reads wraps the engine's error: errors.As still
// finds the provider's type.
func TestUserErrorKeepsTheEngineError(t *testing.T) {
	qe := &provider.QuotaError{Provider: "openai", Status: 429, Message: "You exceeded your current quota"}
	var err error = &UserError{Message: msgQuota(qe.Provider, qe.Message), Err: qe}
	var got *provider.QuotaError
	if !errors.As(err, &got) || got != qe || provider.Kind(err) != provider.KindQuota {
		t.Fatalf("errors.As lost the provider error: %v", err)
	}
}

// A turn that cannot meet the hard limit even by compacting tells the user
// what is too big and what to do, not the engine's figures (R-G4, issue 26
// point 5); nothing is sent, and the figures are in the log.
func TestHardLimitAfterCompactingNamesTheCause_RG4(t *testing.T) {
	var script []providertest.Reply
	for i := 0; i < historyTurns; i++ {
		script = append(script, providertest.Text("answer "+bigText))
	}
	f := newFixture(t, smallWindow, script...)
	b0, _ := f.agent.Budget() // the system prompt alone
	for i := 0; i < historyTurns; i++ {
		if end := f.prompt(t, "q "+bigText); end.Outcome != "completed" {
			t.Fatalf("history turn %d: %s %s", i, end.Outcome, end.Error)
		}
	}
	before := len(f.model.Requests())
	// A message over the hard limit with the system prompt is refused
	// before it is stored (R-W7, TestOverHardLimitNeverStored_RW7); this one
	// fills the room the system prompt leaves to the token, so the request
	// it makes (its framing on top) is over by itself.
	huge := strings.Repeat("y", 4*(b0.HardLimit-b0.EffectiveTokens))
	end := f.prompt(t, huge)
	want := "SOBA could not fit this turn into the model's 10,000-token limit, and compacting cannot bring it under: your message alone is "
	if end.Outcome != "failed" || !strings.HasPrefix(end.Error, want) || !strings.HasSuffix(end.Error, "Raise `model.contextWindow` if the model allows it, or send a shorter message.") {
		f.rec.mu.Lock()
		defer f.rec.mu.Unlock()
		t.Fatalf("turn %s: %q\nlog: %q", end.Outcome, end.Error, f.rec.logs)
	}
	if n := len(f.model.Requests()) - before; n != 0 {
		t.Fatalf("%d requests sent over the hard limit", n)
	}
	f.rec.mu.Lock()
	logs := strings.Join(f.rec.logs, "\n")
	f.rec.mu.Unlock()
	// The hard_limit compaction was planned and found the message alone
	// over the limit; the engine's figures are in the log.
	if !strings.Contains(logs, "cannot fit the request under the hard limit of 10000 tokens") ||
		!strings.Contains(logs, "over the hard limit of 10000, and compaction could not bring it under; nothing was sent") {
		t.Fatalf("the engine's figures are not in the log: %q", logs)
	}
}
