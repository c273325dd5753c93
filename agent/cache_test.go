package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/agent/provider"
	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/workspace"
)

// longSessionScript is turns of work: each turn reads a file, lists the
// workspace, then answers (at length unless short), so the history grows
// past the soft limit of smallWindow more than once. With short answers
// the history grows inside the turns, by the file read. Some turns activate
// a skill between the two tool calls (sessionSkills): one in the middle of
// a turn, another turns later, and the first again once it is active.
func longSessionScript(turns int, short bool) []providertest.Reply {
	var out []providertest.Reply
	answer := bigText
	if short {
		answer = "done."
	}
	for i := range turns {
		out = append(out, providertest.Call(fmt.Sprintf("r%d", i), "read_file", map[string]any{"path": "notes.txt"}))
		if name, ok := sessionSkills[i]; ok {
			out = append(out, providertest.Call(fmt.Sprintf("s%d", i), "activate_skill", map[string]any{"name": name}))
		}
		out = append(out,
			providertest.Call(fmt.Sprintf("l%d", i), "list_files", map[string]any{"path": "."}),
			providertest.Text(fmt.Sprintf("answer %d: %s", i, answer)))
	}
	return out
}

// sessionSkills are the skills longSessionScript activates, by turn.
var sessionSkills = map[int]string{1: "go-testing", 4: "review", 6: "go-testing"}

// skillBody is the body of a skill of longSessionScript.
func skillBody(name string) string {
	return "Instructions of " + name + ": " + strings.Repeat("check it twice; ", 40) + "done."
}

// newFormatFixture is newFixture against a fake of the given wire format.
func newFormatFixture(t *testing.T, format string, mod func(*Options), script []providertest.Reply) *fixture {
	t.Helper()
	root, err := workspace.NewRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root.Dir(), "notes.txt"), []byte(bigText), 0o644); err != nil {
		t.Fatal(err)
	}
	var srv *providertest.Server
	switch format {
	case provider.NameOpenAI:
		srv = providertest.NewOpenAI(t, script...)
	case provider.NameOpenAIResponses:
		srv = providertest.NewResponses(t, script...)
	case provider.NameAnthropic:
		srv = providertest.NewAnthropic(t, script...)
	case provider.NameOllama:
		srv = providertest.NewOllama(t, script...)
	}
	p, err := provider.New(provider.Config{Provider: format, BaseURL: srv.URL, Model: "test-model", ContextWindow: 12000, MaxOutputTokens: 1000})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{dir: root.Dir(), rec: newRecorder(), model: srv}
	opt := Options{Root: root.Dir(), Resolver: root, SessionDir: filepath.Join(root.Dir(), ".soba", "sessions"),
		Model: p, ModelName: "test-model", ProviderName: format, Compaction: compaction.DefaultConfig(),
		Approval: "auto", Notifier: f.rec, Counter: quarterCounter{}, EntryTokens: entryTokens}
	smallWindow(&opt)
	if mod != nil {
		mod(&opt)
	}
	a, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	f.agent = a
	return f
}

// capsuleOf is the capsule a request carries, "" without one.
func capsuleOf(r providertest.Received) string {
	if len(r.Messages) > 0 && strings.HasPrefix(r.Messages[0].Text, compaction.CapsulePreamble) {
		return r.Messages[0].Text
	}
	return ""
}

// TestRequestsOfATurnExtendEachOther: over a long scripted session against
// the fake server of each wire format, with compactions along the way,
// every request of a turn after the first repeats the request before it
// byte for byte (Ollama's and the local servers' KV cache needs no more) — tools, system prompt, capsule and every message — and
// only appends, except when a compaction put a new capsule in between.
// The Anthropic fake sees the cache breakpoints (system, capsule, newest
// block; it refuses more than four) and the cached tokens reach the Budget.
func TestRequestsOfATurnExtendEachOther(t *testing.T) {
	const turns = 10
	type mode struct {
		name string
		mod  func(*Options)
	}
	modes := []mode{
		{"compacting between turns", nil},
		// Without turn_complete intents the soft limit is met at a
		// preflight inside a turn: a compaction between two of its requests.
		{"compacting inside turns", func(o *Options) { o.Compaction.CompactOnTurnComplete = false }},
	}
	for _, format := range []string{provider.NameOpenAI, provider.NameOpenAIResponses, provider.NameAnthropic, provider.NameOllama} {
		for _, m := range modes {
			t.Run(format+", "+m.name, func(t *testing.T) {
				testRequestsExtend(t, format, m.mod, turns, m.mod != nil)
			})
		}
	}
}

// testRequestsExtend runs the session of TestRequestsOfATurnExtendEachOther
// against one format; inTurn says a compaction between two requests of a
// turn must have happened.
func testRequestsExtend(t *testing.T, format string, mod func(*Options), turns int, inTurn bool) {
	{
		{
			f := newFormatFixture(t, format, mod, longSessionScript(turns, inTurn))
			for _, name := range sessionSkills {
				writeSkill(t, f.dir, name, "what "+name+" asks for", skillBody(name))
			}
			var bounds []int // index of each turn's first request
			for i := range turns {
				bounds = append(bounds, len(f.model.Requests()))
				if end := f.prompt(t, fmt.Sprintf("task %d: look at the notes", i)); end.Outcome != "completed" {
					t.Fatalf("turn %d: %s %s", i, end.Outcome, end.Error)
				}
			}
			reqs := f.model.Requests()
			extended, renewed, turnsExtended, afterSkill := 0, 0, 0, 0
			for k := 1; k < len(reqs); k++ {
				prev, cur := reqs[k-1], reqs[k]
				if cur.DecodeError != "" || len(cur.PromptItems) == 0 {
					t.Fatalf("request %d not decoded: %s", k, cur.DecodeError)
				}
				n := len(prev.PromptItems)
				if len(cur.PromptItems) > n && slices.Equal(cur.PromptItems[:n], prev.PromptItems) {
					// The first request of a turn extends the last one of
					// the turn before when no compaction ran between them.
					if slices.Contains(bounds, k) {
						turnsExtended++
					} else {
						extended++
					}
					if m := cur.Messages[len(cur.Messages)-1]; m.Role == provider.RoleTool && strings.HasPrefix(m.Text, "Instructions of ") {
						afterSkill++ // the request right after an activation
					}
					continue
				}
				if c := capsuleOf(cur); c != "" && c != capsuleOf(prev) {
					renewed++ // a compaction ran before this request
					continue
				}
				i := 0
				for i < n && i < len(cur.PromptItems) && cur.PromptItems[i] == prev.PromptItems[i] {
					i++
				}
				t.Fatalf("request %d does not extend request %d: item %d differs\nbefore: %.300s\nnow:    %.300s", k, k-1, i,
					at(prev.PromptItems, i), at(cur.PromptItems, i))
			}
			if extended < turns || turnsExtended == 0 || len(f.capsules(t)) == 0 {
				t.Fatalf("%d requests extended the one before (%d of them a turn's first), %d capsules: the session proves nothing",
					extended, turnsExtended, len(f.capsules(t)))
			}
			t.Logf("%d requests, %d extended the one before (and %d first of their turn), %d after a compaction, %d capsules",
				len(reqs), extended, turnsExtended, renewed, len(f.capsules(t)))
			// An activation leaves the prefix alone; the next capsule moves
			// the skill into the system prompt, where later requests keep it.
			if afterSkill == 0 {
				t.Errorf("no request right after a skill's activation extended the one before")
			}
			moved := slices.IndexFunc(reqs, func(r providertest.Received) bool {
				return strings.Contains(r.System, "Active skill go-testing:\n"+skillBody("go-testing"))
			})
			if moved < 0 || capsuleOf(reqs[moved]) == "" {
				t.Errorf("no request after a capsule carries the activated skill in its system prompt (first at %d)", moved)
			}
			if inTurn && renewed == 0 {
				t.Errorf("no compaction ran inside a turn: the exception proves nothing")
			}
			b, _ := f.agent.Budget()
			if b.CachedTokens <= 0 {
				t.Errorf("the Budget's cachedTokens is %d after %d requests that repeat their prefix", b.CachedTokens, len(reqs))
			}
			in, cached := 0, 0
			for _, e := range f.entries(t) {
				if e.Assistant != nil && e.Assistant.Usage != nil {
					in += e.Assistant.Usage.InputTokens
					cached += e.Assistant.Usage.CachedTokens
				}
			}
			t.Logf("input %d tokens, %d of them (%.0f%%) read from the fake's prompt cache", in, cached, 100*float64(cached)/float64(max(in, 1)))
			cachedBefore := 0 // compactions whose flight record carries the cached tokens before them
			for _, r := range f.flight(t) {
				if r.CachedTokens > 0 {
					cachedBefore++
				}
			}
			if cachedBefore == 0 {
				t.Errorf("no flight record carries cachedTokens")
			}
			if format != provider.NameAnthropic {
				for k, r := range reqs {
					if r.PromptCacheKey != "" {
						t.Fatalf("request %d carries prompt_cache_key %q to a server that is not api.openai.com", k, r.PromptCacheKey)
					}
				}
				return
			}
			for k, r := range reqs {
				want := []string{"system[0]"}
				if capsuleOf(r) != "" {
					want = append(want, "messages[0].content[0]")
				}
				if len(r.CacheBreakpoints) != len(want)+1 || !slices.Equal(r.CacheBreakpoints[:len(want)], want) {
					t.Fatalf("request %d breakpoints %v, want %v and the newest block", k, r.CacheBreakpoints, want)
				}
			}
		}
	}
}

func at(items []string, i int) string {
	if i < len(items) {
		return items[i]
	}
	return "(none)"
}
