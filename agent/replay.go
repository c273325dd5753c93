package agent

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/soba-agent/soba-lsp/agent/provider"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/internal/text"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/workspace"
)

// Recorded is a provider that answers from a recorded session: each
// inference returns the next recorded assistant response of the current
// turn, streamed in pieces, with its recorded usage. Replay uses it to run
// a session through the real turn loop and compaction engine without a model
// server.
type Recorded struct {
	mu      sync.Mutex
	answers []session.Assistant
	// Requests counts the inferences made.
	Requests int
}

// Name implements provider.Provider.
func (r *Recorded) Name() string { return "replay" }

// SetTurn sets the recorded answers of the turn about to run.
func (r *Recorded) SetTurn(answers []session.Assistant) {
	r.mu.Lock()
	r.answers = answers
	r.mu.Unlock()
}

// replayEnd closes a turn whose recording ended without a final answer.
const replayEnd = "[replay: the recorded turn ends here]"

// Stream implements provider.Provider.
func (r *Recorded) Stream(ctx context.Context, req provider.Request, onEvent func(provider.Event)) (provider.Response, error) {
	r.mu.Lock()
	r.Requests++
	var a session.Assistant
	if len(r.answers) == 0 {
		a = session.Assistant{Text: replayEnd}
	} else {
		a, r.answers = r.answers[0], r.answers[1:]
	}
	r.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return provider.Response{}, err
	}
	const piece = 64
	for i := 0; i < len(a.Text); i += piece {
		if onEvent != nil {
			onEvent(provider.Event{Kind: provider.EventText, Delta: a.Text[i:min(i+piece, len(a.Text))]})
		}
	}
	resp := provider.Response{Text: a.Text, StopReason: a.StopReason, Model: a.Model}
	for _, c := range a.ToolCalls {
		resp.ToolCalls = append(resp.ToolCalls, provider.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	if a.Usage != nil {
		resp.Usage = &provider.Usage{InputTokens: a.Usage.InputTokens, OutputTokens: a.Usage.OutputTokens, CachedTokens: a.Usage.CachedTokens}
	}
	return resp, nil
}

// recordedTurn is one user message and the model's recorded answers to it.
type recordedTurn struct {
	text    string
	answers []session.Assistant
}

// readRecording walks a session's leaf path into turns and recorded results.
// The provider usage recorded in an imported session measured another
// agent's requests (its own system prompt, its own compactions), not the
// requests this replay makes, so it is dropped there and the budget is
// estimated; foreign says so.
func readRecording(path string) (turns []recordedTurn, results map[string]session.ToolResult, foreign bool, err error) {
	s, _, err := session.Open(path, session.Options{})
	if err != nil {
		return nil, nil, false, err
	}
	defer s.Close()
	if h, ok := s.Header(); ok && h.ImportedFrom != "" {
		foreign = true
	}
	results = map[string]session.ToolResult{}
	for _, m := range s.Path() {
		switch m.Type {
		case session.TypeUser, session.TypeAssistant, session.TypeToolResult:
		default:
			continue
		}
		e, err := s.Load(m.ID)
		if err != nil {
			return nil, nil, false, err
		}
		if foreign && e.Assistant != nil {
			e.Assistant.Usage = nil
		}
		switch {
		case e.User != nil:
			turns = append(turns, recordedTurn{text: e.User.Text})
		case e.Assistant != nil && len(turns) > 0:
			if e.Assistant.Error != "" && e.Assistant.Text == "" && len(e.Assistant.ToolCalls) == 0 {
				continue
			}
			t := &turns[len(turns)-1]
			t.answers = append(t.answers, *e.Assistant)
		case e.ToolResult != nil:
			results[e.ToolResult.ToolCallID] = *e.ToolResult
		}
	}
	if len(turns) == 0 {
		return nil, nil, false, fmt.Errorf("%s has no user message to replay", path)
	}
	return turns, results, foreign, nil
}

// ReplayOptions configure Replay.
type ReplayOptions struct {
	// Workspace is the directory the replayed session is written to.
	Workspace   string
	Compaction  compaction.Config
	Counter     compaction.Counter
	EntryTokens func(*session.Entry) int
	Resolver    *workspace.Root
	Out         io.Writer
}

// ReplayReport sums up a replay.
type ReplayReport struct {
	Turns, Compactions int
	SessionPath        string
	Final              compaction.Budget
}

// Replay re-runs a recorded session through the real agent loop and
// compaction engine with the deterministic summarizer: model answers come
// from the record, tools are not re-executed. It prints budgets, barrier
// progress and result lines to opt.Out.
func Replay(ctx context.Context, recording string, opt ReplayOptions) (ReplayReport, error) {
	turns, results, foreign, err := readRecording(recording)
	if err != nil {
		return ReplayReport{}, err
	}
	model := &Recorded{}
	pr := &replayPrinter{out: opt.Out, turnEnded: make(chan Event, 1)}
	a, err := New(Options{
		Root: opt.Workspace, Resolver: opt.Resolver, SessionDir: filepath.Join(opt.Workspace, ".soba", "sessions"),
		FlightDir: filepath.Join(opt.Workspace, ".soba", "flight"), Model: model, ModelName: "replay", ProviderName: "replay",
		Compaction: opt.Compaction, Approval: "auto", Notifier: pr, Counter: opt.Counter, EntryTokens: opt.EntryTokens,
		RecordedResults: results,
	})
	if err != nil {
		return ReplayReport{}, err
	}
	defer a.Close()
	info, _ := a.Info()
	c := opt.Compaction
	fmt.Fprintf(opt.Out, "replaying %d turns of %s\nlimits: hard %s, soft %s (context window %s, max output %s, reserve %s)\n",
		len(turns), filepath.Base(recording), text.Thousands(c.HardLimit()), text.Thousands(c.SoftLimit()), text.Thousands(c.ContextWindow),
		text.Thousands(c.MaxOutputTokens), text.Thousands(c.SafetyReserveTokens))
	if foreign {
		fmt.Fprintln(opt.Out, "imported session: its recorded provider usage measured the other agent's requests, so budgets here are estimated")
	}
	rep := ReplayReport{SessionPath: info.Path}
	for i, t := range turns {
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		model.SetTurn(t.answers)
		turnID, _, err := a.Prompt(t.text)
		if err != nil {
			return rep, err
		}
		var end Event
		select {
		case end = <-pr.turnEnded:
		case <-ctx.Done():
			return rep, ctx.Err()
		case <-time.After(2 * time.Minute):
			return rep, fmt.Errorf("turn %d did not end", i+1)
		}
		if end.TurnID != turnID {
			return rep, fmt.Errorf("turn %s ended while %s ran", end.TurnID, turnID)
		}
		b, _ := a.Budget()
		fmt.Fprintf(opt.Out, "turn %d/%d · %s · budget %s/%s (%s)\n", i+1, len(turns), quoteShort(t.text), text.Thousands(b.EffectiveTokens), text.Thousands(b.HardLimit), b.Source)
		if end.Outcome != "completed" {
			fmt.Fprintf(opt.Out, "  turn %s: %s\n", end.Outcome, end.Error)
		}
		rep.Turns++
	}
	rep.Final, _ = a.Budget()
	rep.Compactions = pr.completed()
	fmt.Fprintf(opt.Out, "replayed %d turns · %d compactions completed · final budget %s/%s (%s)\nsession: %s\n",
		rep.Turns, rep.Compactions, text.Thousands(rep.Final.EffectiveTokens), text.Thousands(rep.Final.HardLimit), rep.Final.Source, rep.SessionPath)
	return rep, nil
}

// replayPrinter prints what an editor would show.
type replayPrinter struct {
	mu        sync.Mutex
	out       io.Writer
	done      int
	lastPct   int
	turnEnded chan Event
}

func (p *replayPrinter) Event(e Event) {
	if e.Type == "turn_end" {
		p.turnEnded <- e
	}
}
func (p *replayPrinter) Budget(compaction.Budget) {}
func (p *replayPrinter) Compaction(c CompactionEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch c.Phase {
	case "start":
		p.lastPct = 0
		fmt.Fprintf(p.out, "  Compacting context before response · %s\n", c.Trigger)
	case "progress":
		if c.Percentage != nil && *c.Percentage >= p.lastPct+25 {
			p.lastPct = *c.Percentage
			fmt.Fprintf(p.out, "  Compacting context before response · %d%%\n", *c.Percentage)
		}
	case "end":
		if c.CompactionResult != nil && c.Outcome == compaction.OutcomeCompleted {
			p.done++
		}
	}
}
func (p *replayPrinter) Log(m string) {
	p.mu.Lock()
	fmt.Fprintf(p.out, "  %s\n", m)
	p.mu.Unlock()
}
func (p *replayPrinter) Warn(m string) {
	p.mu.Lock()
	fmt.Fprintf(p.out, "  warning: %s\n", m)
	p.mu.Unlock()
}
func (p *replayPrinter) completed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

func quoteShort(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = text.Clip(s, 47+len("…"))
	return fmt.Sprintf("%q", s)
}
