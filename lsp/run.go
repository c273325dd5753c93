package lsp

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/soba-agent/soba-lsp/internal/text"
	"github.com/soba-agent/soba-lsp/lsp/protocol"
	"github.com/soba-agent/soba-lsp/lsp/slash"
)

func init() {
	// Registered here, not in commandTable's literal: run dispatches
	// through commandTable, and a reference from the literal would be an
	// initialization cycle.
	commandTable[protocol.CommandRun] = withArgs(run)
}

// RunText runs what the user typed exactly as soba.run does (the same
// grammar, handlers, argument checks and result lines), for a front end
// other than the language server: the ACP adapter runs slash commands
// through it. The result is a protocol.RunPromptResult or a
// protocol.RunCommandResult.
func RunText(ctx context.Context, b Backend, text string) (any, error) {
	return run(b, ctx, protocol.RunArgs{Text: text})
}

// run is soba.run: the server owns the slash grammar (lsp/slash). A slash
// command runs through the same handler, argument checks included, as the
// executeCommand of its ID; anything else is soba.prompt.
func run(b Backend, ctx context.Context, args protocol.RunArgs) (any, error) {
	p := slash.Parse(args.Text)
	switch p.Kind {
	case slash.Prompt:
		r, err := b.Prompt(ctx, protocol.PromptArgs{Text: p.Text})
		if err != nil {
			return nil, err
		}
		return protocol.RunPromptResult{Kind: protocol.RunKindPrompt, TurnID: r.TurnID, Queued: r.Queued, Text: p.Text}, nil
	case slash.Help:
		return protocol.RunCommandResult{Kind: protocol.RunKindCommand, Lines: slash.HelpLines()}, nil
	case slash.Usage:
		return protocol.RunCommandResult{Kind: protocol.RunKindCommand, Lines: []string{p.Err.Error()}, Error: p.Err.Error()}, nil
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
	return protocol.RunCommandResult{Kind: protocol.RunKindCommand, Command: p.Command, Result: result, Lines: lines}, nil
}

// resultLines are the lines that show a command's result to the user.
func resultLines(ctx context.Context, b Backend, p slash.Parsed, result any) []string {
	switch r := result.(type) {
	case protocol.Budget:
		if p.Command == protocol.CommandAutoCompact {
			if r.AutoCompact {
				return []string{"auto-compact is on"}
			}
			return []string{"auto-compact is off (the hard limit still compacts)"}
		}
		return budgetLines(r)
	case protocol.CompactionResult:
		return []string{r.Line}
	case protocol.CancelResult:
		if r.Cancelled {
			return []string{"cancelled the " + string(r.What)}
		}
		return []string{"nothing to cancel"}
	case protocol.CheckpointResult:
		what := "milestone"
		if p.Args["kind"] == protocol.CheckpointPlanPivot {
			what = "plan pivot"
		}
		return []string{fmt.Sprintf("marked %s · %s (the next preflight compacts here)", what, r.CheckpointID)}
	case protocol.CapsuleCreateResult:
		return []string{fmt.Sprintf("created capsule %s · %s", r.CheckpointID, r.Path)}
	case protocol.CapsuleExportResult:
		return []string{fmt.Sprintf("exported %s · %s", p.Args["checkpointId"], r.Path)}
	case protocol.CapsuleLoadResult:
		lines := []string{fmt.Sprintf("loaded capsule %q · %s", r.Title, r.CheckpointID)}
		for _, w := range r.Warnings {
			lines = append(lines, "warning: "+w)
		}
		return lines
	case protocol.CapsuleShowResult:
		return append([]string{"capsule " + r.CheckpointID + ":"}, strings.Split(strings.TrimRight(r.Markdown, "\n"), "\n")...)
	case []protocol.CapsuleInfo:
		return capsuleListLines(r)
	case protocol.SessionInfo:
		return []string{fmt.Sprintf("session %s · %d entries · leaf %s · %s", r.SessionID, r.Entries, r.LeafID, r.Path)}
	case []protocol.SessionSummary:
		current := ""
		if info, err := b.SessionInfo(ctx); err == nil {
			current = info.SessionID
		}
		return sessionListLines(r, current)
	case protocol.SessionNewResult:
		return []string{"new session " + r.SessionID + " · " + r.Path}
	case protocol.SessionResumeResult:
		return []string{fmt.Sprintf("resumed session %s at %s", r.SessionID, r.LeafID)}
	case []protocol.HistoryPoint:
		return historyLines(r)
	case protocol.SessionRewindResult:
		return []string{fmt.Sprintf("rewound the session to %s · leaf %s", p.Args["entryId"], r.LeafID)}
	}
	b2, _ := json.Marshal(result)
	return []string{string(b2)}
}

// budgetLines shows a budget: the figures on one line, then the last
// compaction's result line.
func budgetLines(b protocol.Budget) []string {
	parts := []string{
		fmt.Sprintf("%s / %s tokens", text.Thousands(b.EffectiveTokens), text.Thousands(b.HardLimit)),
		"soft " + text.Thousands(b.SoftLimit),
		strings.ReplaceAll(string(b.Source), "_", " "),
		"auto-compact " + onOff(b.AutoCompact),
		string(b.State),
	}
	if len(b.Pending) > 0 {
		pending := make([]string, len(b.Pending))
		for i, t := range b.Pending {
			pending[i] = string(t)
		}
		parts = append(parts, "pending "+strings.Join(pending, ", "))
	}
	lines := []string{"budget · " + strings.Join(parts, " · ")}
	if b.LastCompaction != nil {
		lines = append(lines, "last: "+b.LastCompaction.Line)
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
func capsuleListLines(list []protocol.CapsuleInfo) []string {
	if len(list) == 0 {
		return []string{"no checkpoints yet. Create a capsule or compact first."}
	}
	list = newestFirst(list, func(c protocol.CapsuleInfo) time.Time { return c.CreatedAt })
	lines := []string{count(len(list), "checkpoint") + ", newest first"}
	for _, c := range list {
		parts := []string{c.CheckpointID, string(c.Trigger), cmp.Or(string(c.Quality), "—"), c.CreatedAt.UTC().Format(time.RFC3339)}
		if c.Title != "" {
			parts = append(parts, fmt.Sprintf("%q", c.Title))
		}
		lines = append(lines, strings.Join(parts, " · "))
	}
	return lines
}

// sessionListLines list sessions most recently updated first, marking the
// current one.
func sessionListLines(list []protocol.SessionSummary, current string) []string {
	if len(list) == 0 {
		return []string{"no sessions yet"}
	}
	list = newestFirst(list, func(s protocol.SessionSummary) time.Time { return s.UpdatedAt })
	lines := []string{count(len(list), "session") + ", most recent first"}
	for _, s := range list {
		title := s.Title
		if title == "" {
			title = "(no request yet)"
		}
		line := fmt.Sprintf("%s · %s · %s · %s · %s", s.SessionID, title, count(s.Entries, "entry"), s.UpdatedAt.UTC().Format(time.RFC3339), s.Path)
		if s.SessionID == current {
			line += " · current"
		}
		lines = append(lines, line)
	}
	return lines
}

// historyLines list the points a rewind can go back to, newest first: the
// id to give /rewind, when, what, and the files a rewind leaves as they are.
func historyLines(points []protocol.HistoryPoint) []string {
	if len(points) == 0 {
		return []string{"nothing to rewind to: the session has no request yet"}
	}
	lines := []string{count(len(points), "point") + " to rewind to, most recent first"}
	for _, p := range slices.Backward(points) {
		what := strings.Join(strings.Fields(p.Text), " ")
		if p.Kind == protocol.HistoryCheckpoint {
			what = "checkpoint " + what
		}
		line := fmt.Sprintf("%s · %s · %s", p.RewindTo, p.CreatedAt.UTC().Format(time.RFC3339), text.Clip(what, 100))
		if n := len(p.FilesModifiedAfter); n > 0 {
			line += fmt.Sprintf(" · %s modified after it (not reverted): %s", count(n, "file"), strings.Join(p.FilesModifiedAfter, ", "))
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
