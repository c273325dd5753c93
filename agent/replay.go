package agent

import (
	"bytes"
	"context"
	"encoding/json"
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
	// Extended counts the requests that repeated the request before them
	// in their turn — system prompt, tools, every message — and appended
	// to it; Renewed those that carried a new capsule instead (a
	// compaction ran between them); Broken the others, which a prompt
	// cache could not serve.
	Extended, Renewed, Broken int
	prev                      [][]byte // the turn's previous request, encoded
}

// Name implements provider.Provider.
func (r *Recorded) Name() string { return "replay" }

// SetTurn sets the recorded answers of the turn about to run.
func (r *Recorded) SetTurn(answers []session.Assistant) {
	r.mu.Lock()
	r.answers = answers
	r.prev = nil
	r.mu.Unlock()
}

// encodeRequest is a request as a sequence of parts in the order a server
// reads them: system prompt, tools, then each message.
func encodeRequest(req provider.Request) [][]byte {
	parts := make([][]byte, 0, len(req.Messages)+2)
	sys, _ := json.Marshal(req.System)
	tools, _ := json.Marshal(req.Tools)
	parts = append(parts, sys, tools)
	for _, m := range req.Messages {
		b, _ := json.Marshal(m)
		parts = append(parts, b)
	}
	return parts
}

// notePrefix compares a request with the turn's previous one.
func (r *Recorded) notePrefix(req provider.Request) {
	cur := encodeRequest(req)
	if prev := r.prev; prev != nil {
		extends := len(cur) > len(prev)
		for i := 0; extends && i < len(prev); i++ {
			extends = bytes.Equal(prev[i], cur[i])
		}
		switch {
		case extends:
			r.Extended++
		case len(req.Messages) > 0 && req.Messages[0].StablePrefix && (len(prev) < 3 || !bytes.Equal(prev[2], cur[2])):
			r.Renewed++
		default:
			r.Broken++
		}
	}
	r.prev = cur
}

// replayEnd closes a turn whose recording ended without a final answer.
const replayEnd = "[replay: the recorded turn ends here]"

// Stream implements provider.Provider.
func (r *Recorded) Stream(ctx context.Context, req provider.Request, onEvent func(provider.Event)) (provider.Response, error) {
	r.mu.Lock()
	r.Requests++
	r.notePrefix(req)
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
		e, err := s.LoadMeta(m)
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
	// Summarizer, when set, stands in for a summary model; nil builds
	// deterministic capsules, as a session without one does.
	Summarizer compaction.Summarizer
}

// ReplayReport sums up a replay.
type ReplayReport struct {
	Turns, Compactions int
	// Barriers is the number of compactions that ran (any outcome).
	Barriers int
	// WastedGenerations counts compactions that generated a capsule — with
	// a summary model, asked it — and were then declined by the exact check
	// (R-R2): work thrown away, which the prediction is there to avoid.
	WastedGenerations int
	// SummaryRequests counts the summary model's requests.
	SummaryRequests int
	// Requests counts the model requests; PrefixExtended, PrefixRenewed and
	// PrefixBroken are Recorded's comparison of each with the request
	// before it in its turn.
	Requests, PrefixExtended, PrefixRenewed, PrefixBroken int
	SessionPath                                           string
	Final                                                 compaction.Budget
}

// countingSummarizer counts a summarizer's requests.
type countingSummarizer struct {
	compaction.Summarizer
	mu    sync.Mutex
	calls int
}

func (c *countingSummarizer) Summarize(ctx context.Context, req compaction.SummaryRequest, delta func(string)) (string, error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	return c.Summarizer.Summarize(ctx, req, delta)
}

func (c *countingSummarizer) count() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
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
	var summarizer compaction.Summarizer
	var counted *countingSummarizer
	if opt.Summarizer != nil {
		counted = &countingSummarizer{Summarizer: opt.Summarizer}
		summarizer = counted
	}
	a, err := New(Options{
		Summarizer: summarizer,
		Root:       opt.Workspace, Resolver: opt.Resolver, SessionDir: filepath.Join(opt.Workspace, ".soba", "sessions"),
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
	rep.Compactions, rep.Barriers, rep.WastedGenerations = pr.counts()
	rep.SummaryRequests = counted.count()
	model.mu.Lock()
	rep.Requests, rep.PrefixExtended, rep.PrefixRenewed, rep.PrefixBroken = model.Requests, model.Extended, model.Renewed, model.Broken
	model.mu.Unlock()
	summaries := "no summary model"
	if counted != nil {
		summaries = fmt.Sprintf("%d summary requests", rep.SummaryRequests)
	}
	fmt.Fprintf(opt.Out, "replayed %d turns · %d compactions completed of %d run · %d generated and then skipped (%s) · final budget %s/%s (%s)\n",
		rep.Turns, rep.Compactions, rep.Barriers, rep.WastedGenerations, summaries,
		text.Thousands(rep.Final.EffectiveTokens), text.Thousands(rep.Final.HardLimit), rep.Final.Source)
	fmt.Fprintf(opt.Out, "model requests: %d · %d extended the request before them in their turn byte for byte · %d followed a compaction · %d changed an earlier part\nsession: %s\n",
		rep.Requests, rep.PrefixExtended, rep.PrefixRenewed, rep.PrefixBroken, rep.SessionPath)
	return rep, nil
}

// replayPrinter prints what an editor would show.
type replayPrinter struct {
	mu        sync.Mutex
	out       io.Writer
	done      int
	ran       int
	wasted    int
	lastStage string // the last progress message's stage, printed once each
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
		p.lastStage = ""
		title := c.Title
		if title == "" {
			title = TitleCompacting
		}
		fmt.Fprintf(p.out, "  %s · %s\n", title, c.Trigger)
	case "progress":
		stage, _, _ := strings.Cut(c.Message, " · ")
		if stage != "" && stage != p.lastStage {
			p.lastStage = stage
			fmt.Fprintf(p.out, "  %s\n", c.Message)
		}
	case "end":
		if r := c.CompactionResult; r != nil {
			p.ran++
			switch {
			case r.Outcome == compaction.OutcomeCompleted:
				p.done++
			case r.Outcome == compaction.OutcomeSkipped && r.Generated:
				p.wasted++
			}
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
func (p *replayPrinter) counts() (completed, ran, wasted int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done, p.ran, p.wasted
}

func quoteShort(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = text.Clip(s, 47+len("…"))
	return fmt.Sprintf("%q", s)
}

// recordedTools answers tool calls from a recording (replay): nothing runs
// and nothing is asked; a call with no recorded result fails. It stands in
// for the live runner, so the live tool path has no replay branch.
type recordedTools struct {
	a       *Agent
	results map[string]session.ToolResult
}

func (r recordedTools) run(_ context.Context, turnID string, call session.ToolCall) {
	res, ok := r.results[call.ID]
	if !ok {
		res = session.ToolResult{Content: "replay: no recorded result for this call"}
	}
	if res.Artifacts != nil && res.Artifacts.Skill != "" {
		// A recorded activation is one too: the next capsule lists it.
		_ = r.a.do(func(st *state) { st.activeSkills = appendUnique(st.activeSkills, res.Artifacts.Skill) })
	}
	r.a.appendToolResult(turnID, call, toolRun{ok: res.OK, content: res.Content, artifacts: res.Artifacts})
}
