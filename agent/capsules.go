package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/soba-agent/soba-lsp/internal/id"
	"github.com/soba-agent/soba-lsp/internal/text"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/internal/lazyregexp"
	"github.com/soba-agent/soba-lsp/session"
)

// CapsuleInfo is one capsule of the session (soba.capsule.list).
type CapsuleInfo struct {
	CheckpointID, Trigger, Title, Quality string
	CreatedAt                             time.Time
}

// capsuleRecord is a capsule found in the transcript: a compaction, a
// created handoff capsule, or a loaded one.
type capsuleRecord struct {
	info       CapsuleInfo
	state      capsule.State
	onLeafPath bool
	// native is the compaction's native continuation, if it has one.
	native *capsule.Native
}

// capsules lists every capsule of the session file, in file order.
func (a *Agent) capsules(st *state) ([]capsuleRecord, error) {
	return capsuleRecords(st.store, st.path)
}

// capsuleRecords lists every capsule of a session file in file order,
// marking those on the leaf path. It reads only capsule-bearing entries.
func capsuleRecords(s *session.Store, path []session.Meta) ([]capsuleRecord, error) {
	onPath := map[string]bool{}
	for _, m := range path {
		onPath[m.ID] = true
	}
	var out []capsuleRecord
	for _, m := range s.All() {
		switch m.Type {
		case session.TypeCapsule, session.TypeCapsuleLoad, session.TypeCheckpoint:
		default:
			continue
		}
		e, err := s.LoadMeta(m)
		if err != nil {
			return nil, err
		}
		r := capsuleRecord{onLeafPath: onPath[m.ID]}
		switch {
		case e.Capsule != nil:
			r.info = CapsuleInfo{CheckpointID: e.Capsule.CheckpointID, Trigger: e.Capsule.Trigger, Title: e.Capsule.Title, Quality: e.Capsule.Quality, CreatedAt: e.Timestamp}
			r.state = e.Capsule.State
			r.native = e.Capsule.Native
		case e.CapsuleLoad != nil:
			r.info = CapsuleInfo{CheckpointID: e.CapsuleLoad.CheckpointID, Trigger: "load", Title: e.CapsuleLoad.Title, Quality: capsule.QualityFull, CreatedAt: e.Timestamp}
			r.state = e.CapsuleLoad.State
		case e.Checkpoint != nil && e.Checkpoint.State != nil:
			r.info = CapsuleInfo{CheckpointID: e.Checkpoint.CheckpointID, Trigger: "create", Title: e.Checkpoint.Title, Quality: capsule.QualityFull, CreatedAt: e.Timestamp}
			r.state = *e.Checkpoint.State
		default:
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

// CapsuleList lists the session's capsules.
func (a *Agent) CapsuleList() ([]CapsuleInfo, error) {
	var (
		out []CapsuleInfo
		err error
	)
	if e := a.do(func(st *state) {
		var recs []capsuleRecord
		recs, err = a.capsules(st)
		for _, r := range recs {
			out = append(out, r.info)
		}
	}); e != nil {
		return nil, e
	}
	if out == nil {
		out = []CapsuleInfo{}
	}
	return out, err
}

// document renders a capsule record as a portable .capsule.md document.
func (a *Agent) document(st *state, r capsuleRecord) capsule.Document {
	return r.document(st.sessionID, filepath.Base(a.opt.Root))
}

func (r capsuleRecord) document(sessionID, project string) capsule.Document {
	q := r.info.Quality
	if q == "" {
		q = capsule.QualityFull
	}
	return capsule.Document{Meta: capsule.Meta{
		CheckpointID: r.info.CheckpointID, Title: r.info.Title, Created: r.info.CreatedAt.UTC(),
		Session: sessionID, Project: project, Trigger: r.info.Trigger, Quality: q,
	}, State: r.state}
}

// findCapsule returns the capsule with this id, or with "" the newest on the
// leaf path.
func (a *Agent) findCapsule(st *state, id string) (capsuleRecord, error) {
	return findCapsuleRecord(st.store, st.path, id)
}

// SessionCapsule returns a capsule of a session file as a .capsule.md
// document: the one with id, or with "" the newest on the leaf path. It is
// what the offline `soba-lsp capsule export` uses.
func SessionCapsule(s *session.Store, id string) (capsule.Document, error) {
	r, err := findCapsuleRecord(s, s.Path(), id)
	if err != nil {
		return capsule.Document{}, err
	}
	h, _ := s.Header()
	project := filepath.Base(h.Workspace)
	if h.Workspace == "" {
		project = ""
	}
	return r.document(h.SessionID, project), nil
}

func findCapsuleRecord(s *session.Store, path []session.Meta, id string) (capsuleRecord, error) {
	recs, err := capsuleRecords(s, path)
	if err != nil {
		return capsuleRecord{}, err
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if (id == "" && recs[i].onLeafPath) || (id != "" && recs[i].info.CheckpointID == id) {
			return recs[i], nil
		}
	}
	if id == "" {
		return capsuleRecord{}, errNoCapsule
	}
	return capsuleRecord{}, fmt.Errorf("no capsule %s in this session (soba.capsule.list shows them)", id)
}

// CapsuleShow returns a capsule as .capsule.md text: what the model now sees.
func (a *Agent) CapsuleShow(id string) (string, string, error) {
	var (
		md, ck string
		err    error
	)
	if e := a.do(func(st *state) {
		var r capsuleRecord
		if r, err = a.findCapsule(st, id); err != nil {
			return
		}
		ck = r.info.CheckpointID
		md = string(capsule.Render(a.document(st, r))) + nativeNote(r.native)
	}); e != nil {
		return "", "", e
	}
	return ck, md, err
}

// nativeNote says, after a shown capsule, that a native continuation is
// attached: its provider, model and size, never its content (SPEC §11).
func nativeNote(n *capsule.Native) string {
	if n == nil {
		return ""
	}
	size := "size not reported"
	if n.Tokens > 0 {
		size = text.Thousands(n.Tokens) + " tokens"
	}
	return fmt.Sprintf("\n---\n\nA native continuation is attached: %s · %s · %s (%s bytes, opaque). Requests to that provider and model carry it in place of this capsule's text; export, rewind and other models use this portable capsule.\n",
		n.Provider, n.Model, size, text.Thousands(len(n.Items)))
}

// CapsuleExport writes a capsule of the session to path (resolved in the
// workspace), refusing to overwrite an existing file unless overwrite.
func (a *Agent) CapsuleExport(id, path string, overwrite bool) (string, error) {
	if id == "" {
		return "", errors.New("checkpointId is empty")
	}
	abs, err := a.resolveOut(path)
	if err != nil {
		return "", err
	}
	if err := a.refuseReceipt(abs); err != nil {
		return "", err
	}
	var data []byte
	if e := a.do(func(st *state) {
		var r capsuleRecord
		if r, err = a.findCapsule(st, id); err == nil {
			data = capsule.Render(a.document(st, r))
		}
	}); e != nil {
		return "", e
	}
	if err != nil {
		return "", err
	}
	return abs, writeNew(abs, data, overwrite)
}

// resolveOut resolves the path of an export.
func (a *Agent) resolveOut(path string) (string, error) { return a.resolveUserPath(path) }

// resolveUserPath resolves a path the user gave an editor command. An
// absolute path is the user's explicit choice (a save or open dialog, a
// handoff file from another project) and is used as given; a relative path
// resolves against the workspace root and may not escape it. The agent's
// own tools are always confined to the root.
func (a *Agent) resolveUserPath(path string) (string, error) {
	if strings.TrimSpace(path) == "" {
		return "", errors.New("path is empty")
	}
	if filepath.IsAbs(path) {
		return filepath.Clean(path), nil
	}
	abs, _, err := a.opt.Resolver.Resolve(path)
	return abs, err
}

// writeNew writes data to abs atomically; an existing file is an error
// unless overwrite.
func writeNew(abs string, data []byte, overwrite bool) error {
	if !overwrite {
		if _, err := os.Stat(abs); err == nil {
			return fmt.Errorf("%s exists; pass overwrite: true to replace it", abs)
		}
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(abs), ".capsule-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), abs)
}

var slugUnsafe = lazyregexp.New(`[^a-z0-9]+`)

func slug(title string) string {
	s := strings.Trim(slugUnsafe.ReplaceAllString(strings.ToLower(title), "-"), "-")
	if len(s) > 48 {
		s = strings.TrimRight(s[:48], "-")
	}
	if s == "" {
		s = "capsule"
	}
	return s
}

// CapsuleCreate builds a portable capsule of the whole current state (the
// summary model with its timeout fallback, or the deterministic builder),
// records a checkpoint entry, and writes .soba/capsules/<ck>-<slug>.capsule.md.
// The model input is unchanged (R-P1).
func (a *Agent) CapsuleCreate(ctx context.Context, title string) (string, string, error) {
	if strings.TrimSpace(title) == "" {
		return "", "", errors.New("title is empty")
	}
	var (
		view   compaction.Transcript
		prev   *capsule.State
		from   int
		extras compaction.Extras
	)
	var (
		busy error
		run  *runningCompaction
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := a.do(func(st *state) {
		if st.phase != phaseIdle {
			// Summaries are never generated while the model works (R-B1).
			busy = errors.New("capsule create: a turn or compaction is running; try again when it ends")
			return
		}
		// Hold off turns while the summary is written, as a barrier does:
		// prompts queue and run after it; soba.cancel cancels it.
		if busy = st.transition(phaseCapsule); busy != nil {
			return
		}
		run = &runningCompaction{operationID: id.Operation(), trigger: "create", cancel: cancel}
		st.compaction = run
		a.publishBudget(st)
		from = min(st.base.Start, len(st.path))
		view = newPathView(st.store, st.path, from, st.latest)
		prev = st.base.State
		extras = a.extras(st)
	}); err != nil {
		return "", "", err
	}
	if busy != nil {
		return "", "", busy
	}
	defer func() {
		_ = a.do(func(st *state) {
			if st.compaction == run {
				a.step(st, phaseIdle)
				a.settle(st)
				a.publishBudget(st)
			}
		})
	}()
	b, err := compaction.FindBase(view)
	if err != nil {
		return "", "", err
	}
	stt, err := a.handoffState(ctx, view, b, prev, extras)
	if err != nil {
		return "", "", err
	}
	ck := id.Checkpoint()
	var path string
	if e := a.do(func(st *state) {
		rel := filepath.Join(".soba", "capsules", ck+"-"+slug(title)+".capsule.md")
		path = filepath.Join(a.opt.Root, rel)
		doc := capsule.Document{Meta: capsule.Meta{CheckpointID: ck, Title: title, Created: a.opt.Now().UTC(), Session: st.sessionID,
			Project: filepath.Base(a.opt.Root), Trigger: "create", Quality: capsule.QualityFull}, State: stt}
		if err = writeNew(path, capsule.Render(doc), false); err != nil {
			return
		}
		s := stt
		_, err = a.appendEntry(st, session.Entry{Type: session.TypeCheckpoint, Checkpoint: &session.Checkpoint{CheckpointID: ck, Kind: "capsule", Title: title, Path: rel, State: &s}})
	}); e != nil {
		return "", "", e
	}
	return ck, path, err
}

// handoffState is the portable state of everything up to the leaf.
func (a *Agent) handoffState(ctx context.Context, view compaction.Transcript, b compaction.Base, prev *capsule.State, extras compaction.Extras) (capsule.State, error) {
	det, err := compaction.BuildDeterministic(view, b.Start, view.Len(), prev, extras)
	if err != nil {
		return capsule.State{}, err
	}
	if a.opt.Summarizer == nil {
		return det, nil
	}
	chunks, err := compaction.RenderHistory(view, b.Start, view.Len(), a.opt.SummaryWindowChars)
	if err != nil || len(chunks) == 0 {
		return det, err
	}
	sctx, cancel := context.WithTimeout(ctx, time.Duration(a.opt.Compaction.TimeoutMs)*time.Millisecond)
	defer cancel()
	acc := prev
	var sum *capsule.State
	for i, ch := range chunks {
		md, err := a.opt.Summarizer.Summarize(sctx, compaction.SummaryRequest{System: compaction.SummarySystemPrompt,
			Prompt: compaction.SummaryPrompt(compaction.SummaryPromptOptions{Previous: acc, History: ch, Part: i + 1, Parts: len(chunks)}), MaxOutputTokens: 2048}, nil)
		if err != nil && ctx.Err() != nil {
			return capsule.State{}, fmt.Errorf("capsule create: cancelled")
		}
		if err != nil {
			a.opt.Notifier.Warn("The summary model did not produce the capsule (" + firstLineOf(err.Error(), 120) + "); SOBA used the deterministic fallback.")
			return det, nil
		}
		p, err := compaction.ParseSummary(md)
		if err != nil {
			a.opt.Notifier.Warn("The summary model's answer was unusable; SOBA used the deterministic fallback.")
			return det, nil
		}
		if sum == nil {
			sum = &p
		} else {
			r := compaction.Roll(*sum, p)
			sum = &r
		}
		acc = sum
	}
	out := compaction.MergeSummary(det, *sum)
	if prev != nil {
		out = compaction.Roll(*prev, out)
	}
	return out, nil
}

// CapsuleLoad reads a .capsule.md and appends a capsule_load entry, so the
// next model input carries it as the newest capsule (R-P1). A malformed file
// changes nothing (R-P2). Loading never executes anything and never follows
// paths named inside the capsule.
func (a *Agent) CapsuleLoad(path string) (string, string, []string, error) {
	abs, err := a.resolveIn(path)
	if err != nil {
		return "", "", nil, err
	}
	data, err := a.readCapsuleFile(abs)
	if err != nil {
		return "", "", nil, fmt.Errorf("capsule load: %w", err)
	}
	doc, warnings, err := capsule.Parse(data)
	if err != nil {
		return "", "", nil, fmt.Errorf("capsule load: %s: %w", path, err)
	}
	if warnings == nil {
		warnings = []string{}
	}
	ck := doc.Meta.CheckpointID
	if ck == "" {
		ck = id.Checkpoint()
	}
	load := session.Entry{Type: session.TypeCapsuleLoad, CapsuleLoad: &session.CapsuleLoad{
		CheckpointID: ck, Title: doc.Meta.Title, Path: path, Warnings: warnings, State: doc.State}}
	// Its Markdown is about what the model input will carry of it.
	if err := a.fits("the capsule", string(data)); err != nil {
		return "", "", nil, fmt.Errorf("capsule load: %s: %w", path, err)
	}
	if e := a.do(func(st *state) {
		if st.phase != phaseIdle {
			err = errors.New("capsule load: a turn or compaction is running; try again when it ends")
			return
		}
		_, err = a.appendEntry(st, load)
		a.publishBudget(st)
	}); e != nil {
		return "", "", nil, e
	}
	return ck, doc.Meta.Title, warnings, err
}

func (a *Agent) resolveIn(path string) (string, error) { return a.resolveUserPath(path) }
