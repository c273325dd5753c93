package lsp

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/lsp/slash"
)

// RunArgs are the arguments of soba.run: what the user typed to the agent.
type RunArgs struct {
	Text string `json:"text"`
}

// What soba.run found the typed text to be.
const (
	RunKindCommand = "command"
	RunKindPrompt  = "prompt"
)

// RunPromptResult is soba.run's answer for a prompt: soba.prompt's result
// plus kind "prompt".
type RunPromptResult struct {
	Kind   string `json:"kind"`
	TurnID string `json:"turnId"`
	Queued bool   `json:"queued"`
}

// RunCommandResult is soba.run's answer for a slash command: the lines to
// show, and (additions to PROTOCOL.md's `{kind, lines}`) the command it ran
// with that command's result, so an editor can also update its own views
// (status bar, capsule tab) without parsing anything; Error is set, and
// nothing ran, when the text was a slash command typed wrong.
type RunCommandResult struct {
	Kind    string   `json:"kind"`
	Lines   []string `json:"lines"`
	Command string   `json:"command,omitempty"`
	Result  any      `json:"result,omitempty"`
	Error   string   `json:"error,omitempty"`
}

func init() {
	// Registered here, not in commandTable's literal: run dispatches
	// through commandTable, and a reference from the literal would be an
	// initialization cycle.
	commandTable[CommandRun] = withArgs(run)
}

// run is soba.run: the server owns the slash grammar (lsp/slash). A slash
// command runs through the same handler, argument checks included, as the
// executeCommand of its ID; anything else is soba.prompt.
func run(b Backend, ctx context.Context, args RunArgs) (any, error) {
	p := slash.Parse(args.Text)
	switch p.Kind {
	case slash.Prompt:
		r, err := b.Prompt(ctx, PromptArgs{Text: p.Text})
		if err != nil {
			return nil, err
		}
		return RunPromptResult{Kind: RunKindPrompt, TurnID: r.TurnID, Queued: r.Queued}, nil
	case slash.Help:
		return RunCommandResult{Kind: RunKindCommand, Lines: slash.HelpLines()}, nil
	case slash.Usage:
		return RunCommandResult{Kind: RunKindCommand, Lines: []string{p.Err.Error()}, Error: p.Err.Error()}, nil
	}
	raw, err := json.Marshal(p.Args)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding arguments: %w", p.Command, err)
	}
	result, err := commandTable[p.Command](ctx, b, p.Command, []json.RawMessage{raw})
	if err != nil {
		return nil, err
	}
	lines := resultLines(ctx, b, p, result)
	if p.Hint != "" {
		lines = append(lines, p.Hint)
	}
	return RunCommandResult{Kind: RunKindCommand, Command: p.Command, Result: result, Lines: lines}, nil
}

// resultLines are the lines that show a command's result to the user.
func resultLines(ctx context.Context, b Backend, p slash.Parsed, result any) []string {
	switch r := result.(type) {
	case compaction.Budget:
		if p.Command == CommandAutoCompact {
			if r.AutoCompact {
				return []string{"auto-compact is on"}
			}
			return []string{"auto-compact is off (the hard limit still compacts)"}
		}
		return budgetLines(r)
	case compaction.CompactionResult:
		return []string{cmp.Or(r.Line, compaction.ResultLine(r))}
	case CancelResult:
		if r.Cancelled {
			return []string{"cancelled the " + r.What}
		}
		return []string{"nothing to cancel"}
	case CheckpointResult:
		what := "milestone"
		if p.Args["kind"] == CheckpointPlanPivot {
			what = "plan pivot"
		}
		return []string{fmt.Sprintf("marked %s · %s (the next preflight compacts here)", what, r.CheckpointID)}
	case CapsuleCreateResult:
		return []string{fmt.Sprintf("created capsule %s · %s", r.CheckpointID, r.Path)}
	case CapsuleExportResult:
		return []string{fmt.Sprintf("exported %s · %s", p.Args["checkpointId"], r.Path)}
	case CapsuleLoadResult:
		lines := []string{fmt.Sprintf("loaded capsule %q · %s", r.Title, r.CheckpointID)}
		for _, w := range r.Warnings {
			lines = append(lines, "warning: "+w)
		}
		return lines
	case CapsuleShowResult:
		return append([]string{"capsule " + r.CheckpointID + ":"}, strings.Split(strings.TrimRight(r.Markdown, "\n"), "\n")...)
	case []CapsuleInfo:
		return capsuleListLines(r)
	case SessionInfo:
		return []string{fmt.Sprintf("session %s · %d entries · leaf %s · %s", r.SessionID, r.Entries, r.LeafID, r.Path)}
	case []SessionSummary:
		current := ""
		if info, err := b.SessionInfo(ctx); err == nil {
			current = info.SessionID
		}
		return sessionListLines(r, current)
	case SessionNewResult:
		return []string{"new session " + r.SessionID + " · " + r.Path}
	case SessionResumeResult:
		return []string{fmt.Sprintf("resumed session %s at %s", r.SessionID, r.LeafID)}
	case SessionRewindResult:
		return []string{fmt.Sprintf("rewound the session to %s · leaf %s", p.Args["entryId"], r.LeafID)}
	}
	b2, _ := json.Marshal(result)
	return []string{string(b2)}
}

// budgetLines shows a budget: the figures on one line, then the last
// compaction's result line.
func budgetLines(b compaction.Budget) []string {
	parts := []string{
		fmt.Sprintf("%s / %s tokens", compaction.Thousands(b.EffectiveTokens), compaction.Thousands(b.HardLimit)),
		"soft " + compaction.Thousands(b.SoftLimit),
		strings.ReplaceAll(b.Source, "_", " "),
		"auto-compact " + onOff(b.AutoCompact),
		b.State,
	}
	if len(b.Pending) > 0 {
		parts = append(parts, "pending "+strings.Join(b.Pending, ", "))
	}
	lines := []string{"budget · " + strings.Join(parts, " · ")}
	if b.LastCompaction != nil {
		lines = append(lines, "last: "+cmp.Or(b.LastCompaction.Line, compaction.ResultLine(*b.LastCompaction)))
	}
	return lines
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// capsuleListLines list checkpoints newest first, id first so it can be
// copied into /capsule export.
func capsuleListLines(list []CapsuleInfo) []string {
	if len(list) == 0 {
		return []string{"no checkpoints yet. Create a capsule or compact first."}
	}
	list = newestFirst(list, func(c CapsuleInfo) time.Time { return c.CreatedAt })
	lines := []string{count(len(list), "checkpoint") + ", newest first"}
	for _, c := range list {
		parts := []string{c.CheckpointID, c.Trigger, cmp.Or(c.Quality, "—"), c.CreatedAt.UTC().Format(time.RFC3339)}
		if c.Title != "" {
			parts = append(parts, fmt.Sprintf("%q", c.Title))
		}
		lines = append(lines, strings.Join(parts, " · "))
	}
	return lines
}

// sessionListLines list sessions most recently updated first, marking the
// current one.
func sessionListLines(list []SessionSummary, current string) []string {
	if len(list) == 0 {
		return []string{"no sessions yet"}
	}
	list = newestFirst(list, func(s SessionSummary) time.Time { return s.UpdatedAt })
	lines := []string{count(len(list), "session") + ", most recent first"}
	for _, s := range list {
		line := fmt.Sprintf("%s · %d entries · %s · %s", s.SessionID, s.Entries, s.UpdatedAt.UTC().Format(time.RFC3339), s.Path)
		if s.SessionID == current {
			line += " · current"
		}
		lines = append(lines, line)
	}
	return lines
}

func newestFirst[T any](list []T, at func(T) time.Time) []T {
	list = slices.Clone(list)
	slices.SortStableFunc(list, func(a, b T) int { return at(b).Compare(at(a)) })
	return list
}

// count is "1 checkpoint", "3 checkpoints".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
