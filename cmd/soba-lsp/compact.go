package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/soba-agent/soba-lsp/agent"
	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/internal/id"
	"github.com/soba-agent/soba-lsp/internal/text"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/workspace"
)

// runCompact runs the real engine on a session file with the deterministic
// summarizer: plan, outcome and result line on stderr, the capsule as
// .capsule.md text on stdout. --dry-run reads the file without locking or
// writing it; otherwise the capsule is appended through the store, only if
// the leaf is still the planned one (R-B5).
func runCompact(ctx context.Context, env *cmdEnv, args []string) int {
	defer boundMemory()()
	fs := subcommandFlags(env, "compact")
	ws, cfg := offlineFlags(fs)
	dry := fs.Bool("dry-run", false, "build the capsule and print it without touching the session file")
	trigger := fs.String("trigger", compaction.TriggerUser, "the `TRIGGER` of the compaction: user, auto_threshold, turn_complete, milestone, plan_pivot, hard_limit or context_overflow")
	setUsage(fs, env, "usage: soba-lsp compact [--dry-run] [flags] <session.jsonl>\n\nCompacts the session with the deterministic capsule (no model). The plan, the outcome and the result\nline go to stderr, the capsule as .capsule.md text to stdout.")
	if !parseExact(fs, args, 1) {
		return 2
	}
	if !compaction.ValidTrigger(*trigger) {
		fmt.Fprintf(env.stderr, "soba-lsp compact: --trigger %q: must be one of user, auto_threshold, turn_complete, milestone, plan_pivot, hard_limit, context_overflow\n", *trigger)
		return 2
	}
	file := fs.Arg(0)
	o, err := openOffline(file, *ws, *cfg, env.stderr)
	if err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp compact:", err)
		return 2
	}
	// A dry run reads the file as the offline commands do; a real run takes
	// the lock first, so that the file indexed is the one appended to.
	var store *session.Store
	if *dry {
		store, err = o.openSession(file, env.stderr)
	} else {
		var rep *session.OpenReport
		store, rep, err = session.Open(file, session.Options{Estimate: entryTokens(o.counter)})
		if err == nil {
			if err = foreignTranscript(file, store); err != nil {
				store.Close()
			} else {
				printProblems(env.stderr, rep)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp compact:", err)
		return 1
	}
	defer store.Close()
	res, cp, err := o.compact(ctx, file, *trigger, store, *dry, env.stderr)
	if err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp compact:", err)
		return 1
	}
	fmt.Fprintln(env.stderr, "outcome:", res.Outcome, dryNote(*dry, res))
	if res.Reason != "" {
		fmt.Fprintln(env.stderr, "reason:", res.Reason)
	}
	fmt.Fprintln(env.stderr, res.Line)
	if cp != nil {
		id := strings.TrimSuffix(filepath.Base(file), ".jsonl")
		doc := capsule.Document{Meta: capsule.Meta{CheckpointID: cp.CheckpointID, Title: "Compact " + cp.CheckpointID, Created: time.Now().UTC(),
			Session: id, Project: filepath.Base(o.root), Trigger: cp.Trigger, Quality: cp.Quality}, State: cp.State}
		if _, err := env.stdout.Write(capsule.Render(doc)); err != nil {
			fmt.Fprintln(env.stderr, "soba-lsp compact:", err)
			return 1
		}
	}
	switch res.Outcome {
	case compaction.OutcomeCompleted, compaction.OutcomeSkipped:
		return 0
	}
	return 1
}

func dryNote(dry bool, r compaction.CompactionResult) string {
	if dry && r.Outcome == compaction.OutcomeCompleted {
		return "(dry run: nothing appended)"
	}
	return ""
}

// compact plans and runs one compaction of the session held by store,
// through the server's own path. A dry run builds the capsule and returns
// it, never appending.
func (o *offline) compact(ctx context.Context, file, trigger string, store *session.Store, dry bool, log io.Writer) (compaction.CompactionResult, *session.Capsule, error) {
	path := agent.StoreTranscript(store)
	if path.Len() == 0 {
		return compaction.CompactionResult{}, nil, errors.New("the session has no entries")
	}
	st, err := o.restoreState(path)
	if err != nil {
		return compaction.CompactionResult{}, nil, err
	}
	leaf := path.Node(path.Len() - 1).ID
	req := compaction.PlanRequest{OperationID: id.Operation(), CheckpointID: id.Checkpoint(), Trigger: trigger, Config: o.config,
		SystemTokens: o.systemTokens(st.PromptSkills), AfterSystemTokens: o.systemTokens(st.ActiveSkills), ExpectedLeaf: leaf, Extras: compaction.Extras{ActiveSkills: st.ActiveSkills}}
	p, err := compaction.MakePlan(path, o.counter, req)
	var skip *compaction.Skip
	switch {
	case errors.As(err, &skip):
		printPlan(log, p, path)
		return compaction.Skipped(req.OperationID, trigger, skip.Reason, p.TokensBefore), nil, nil
	case err != nil:
		return compaction.Failed(req.OperationID, trigger, err.Error(), p.TokensBefore), nil, nil
	}
	printPlan(log, p, path)
	sessionID := strings.TrimSuffix(filepath.Base(file), ".jsonl")
	// Measured as the server measures: the budget before the plan, and
	// after it the budget of the path the capsule now ends.
	before := o.budget(st)
	ap := &offlineAppender{}
	if !dry {
		ap.store = store
	}
	barrier := &compaction.Barrier{Counter: o.counter}
	if !dry {
		// A compaction that changes the session leaves its flight record,
		// as the server's do (R-O2).
		ff, err := o.openFlight(sessionID)
		if err != nil {
			return compaction.CompactionResult{}, nil, err
		}
		defer ff.Close()
		barrier.Flight = ff
	}
	res := barrier.Run(ctx, compaction.RunInput{Plan: p, Transcript: path, Appender: ap, Source: before.Source, SessionID: sessionID})
	if res.Outcome != compaction.OutcomeCompleted || ap.capsule == nil {
		return res, ap.capsule, nil
	}
	res = res.InBudgetTerms(before.EffectiveTokens, o.budgetAfter(path, *ap.capsule))
	if !dry {
		o.mirror(sessionID, *ap.capsule, p.Extras, log)
	}
	return res, ap.capsule, nil
}

// budgetAfter is the effective tokens of path with capsule c appended at
// its end, as the server reports them once the capsule is in the session.
func (o *offline) budgetAfter(path compaction.Transcript, c session.Capsule) int {
	leaf := path.Node(path.Len() - 1).ID
	e := session.Entry{ID: "capsule-" + c.CheckpointID, ParentID: &leaf, Type: session.TypeCapsule, Capsule: &c}
	e.Tokens = entryTokens(o.counter)(&e)
	st, err := o.restoreState(withEntry{path, &e})
	if err != nil {
		return 0 // unknown: the result keeps the engine's figures
	}
	return o.budget(st).EffectiveTokens
}

// withEntry is a transcript with one more entry at the end of its path.
type withEntry struct {
	compaction.Transcript
	last *session.Entry
}

func (w withEntry) Len() int { return w.Transcript.Len() + 1 }

func (w withEntry) Node(i int) compaction.Node {
	if i < w.Transcript.Len() {
		return w.Transcript.Node(i)
	}
	return compaction.Entries{*w.last}.Node(0)
}

func (w withEntry) Entry(i int) (*session.Entry, error) {
	if i < w.Transcript.Len() {
		return w.Transcript.Entry(i)
	}
	return w.last, nil
}

func (w withEntry) LatestCapsule() int {
	if w.last.Type == session.TypeCapsule || w.last.Type == session.TypeCapsuleLoad {
		return w.Transcript.Len()
	}
	return w.Transcript.LatestCapsule()
}

// openFlight opens the session's flight record file in the workspace's
// .soba/flight, created inside the workspace only (R-W2).
func (o *offline) openFlight(sessionID string) (*compaction.FlightFile, error) {
	r, err := workspace.NewRoot(o.root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if err := r.MkdirAllInside(workspace.SobaDirName + "/flight"); err != nil {
		return nil, fmt.Errorf("flight records: %w", err)
	}
	return agent.OpenFlight(filepath.Join(o.root, workspace.SobaDirName, "flight"), sessionID)
}

// mirror mirrors a completed capsule to the workspace's Project Memory
// when it qualifies, as the server does (R-C4); what happened goes to log.
func (o *offline) mirror(sessionID string, c session.Capsule, recorded compaction.Extras, log io.Writer) {
	r, err := workspace.NewRoot(o.root)
	if err == nil {
		defer r.Close()
		var mem *workspace.Memory
		if mem, err = workspace.OpenMemory(r); err == nil {
			var note string
			note, err = agent.MirrorCapsule(mem, o.root, sessionID, c, recorded, time.Now().UTC())
			if note != "" {
				fmt.Fprintln(log, note)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(log, "warning:", err)
	}
}

// printPlan writes the frozen plan (R-B2) in one line.
func printPlan(w io.Writer, p compaction.Plan, path compaction.Transcript) {
	base := "none (from the root)"
	if p.Base.CapsuleIndex >= 0 {
		base = p.Base.CheckpointID
	}
	kept := "nothing"
	if p.Cut.FirstKeptID != "" {
		kept = fmt.Sprintf("from entry %s (%s tokens)", p.Cut.FirstKeptID, text.Thousands(p.Cut.KeptTokens))
	}
	from := ""
	if p.Base.Start < path.Len() {
		from = path.Node(p.Base.Start).ID
	}
	fmt.Fprintf(w, "plan: %s · trigger %s · base capsule %s · summarise path [%d, %d) from entry %s (%s tokens) · keep %s · tokens before %s (system %s) · hard limit %s · soft limit %s · expected leaf %s\n",
		p.OperationID, p.Trigger, base, p.Base.Start, p.Cut.FirstKept, from, text.Thousands(p.Cut.CompactTokens), kept,
		text.Thousands(p.TokensBefore), text.Thousands(p.SystemTokens), text.Thousands(p.HardLimit), text.Thousands(p.SoftLimit), p.ExpectedLeaf)
}

// offlineAppender lands a capsule: into the store after the leaf check
// (R-B5), or, in a dry run (store nil), only into capsule.
type offlineAppender struct {
	store   *session.Store
	capsule *session.Capsule
}

// AppendCapsule implements compaction.Appender.
func (a *offlineAppender) AppendCapsule(ctx context.Context, expectedLeaf string, c session.Capsule) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if a.store != nil {
		if a.store.Leaf() != expectedLeaf {
			return compaction.ErrStale
		}
		if _, err := a.store.Append(session.Entry{Type: session.TypeCapsule, Capsule: &c}); err != nil {
			return err
		}
	}
	a.capsule = &c
	return nil
}
