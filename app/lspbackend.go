package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/soba-agent/soba-lsp/agent"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/lsp"
	"github.com/soba-agent/soba-lsp/lsp/protocol"
	"github.com/soba-agent/soba-lsp/session"
)

// LSPBackend serves the commands with the real agent of a workspace. Each
// method decodes nothing and decides nothing: it calls the agent and shapes
// the result as PROTOCOL.md says.
type LSPBackend struct {
	ws     *Workspace
	notify lsp.Notifier
}

// LSPBackendFactory returns the factory that cmd/soba-lsp serves with.
func LSPBackendFactory(load SettingsLoader, counter compaction.Counter, entryTokens func(*session.Entry) int) lsp.BackendFactory {
	return func(ctx context.Context, opts lsp.BackendOptions) (lsp.Backend, error) {
		if opts.Root == "" {
			// A client that names no folder (a single file) gets the
			// server's working directory as its workspace.
			wd, err := os.Getwd()
			if err != nil {
				return nil, fmt.Errorf("no workspace root, and the working directory is unknown: %w", err)
			}
			opts.Root = wd
			opts.Notifier.Log("soba: the client named no workspace folder; using " + wd)
		}
		ws, warnings, err := OpenWorkspace(WorkspaceOptions{Root: opts.Root, InitOptions: opts.InitializationOptions,
			Load: load, Notifier: wireNotifier{opts.Notifier}, Approver: wireApprover{opts.Approver}, Counter: counter, EntryTokens: entryTokens})
		for _, w := range warnings {
			opts.Notifier.Warn(w)
		}
		if err != nil {
			return nil, err
		}
		return &LSPBackend{ws: ws, notify: opts.Notifier}, nil
	}
}

func (b *LSPBackend) a() *agent.Agent { return b.ws.Agent() }

func (b *LSPBackend) Prompt(_ context.Context, args protocol.PromptArgs) (protocol.PromptResult, error) {
	id, queued, err := b.a().Prompt(args.Text)
	return protocol.PromptResult{TurnID: id, Queued: queued}, err
}

func (b *LSPBackend) Cancel(context.Context) (protocol.CancelResult, error) {
	ok, what, err := b.a().Cancel()
	return protocol.CancelResult{Cancelled: ok, What: protocol.Cancelled(what)}, err
}

func (b *LSPBackend) Budget(context.Context) (protocol.Budget, error) {
	bud, err := b.a().Budget()
	return WireBudget(bud), err
}

func (b *LSPBackend) Compact(ctx context.Context, args protocol.CompactArgs) (protocol.CompactionResult, error) {
	r, err := b.a().Compact(ctx, args.Instructions)
	return WireResult(r), err
}

func (b *LSPBackend) SetAutoCompact(_ context.Context, args protocol.AutoCompactArgs) (protocol.Budget, error) {
	bud, err := b.a().SetAutoCompact(args.Enabled)
	return WireBudget(bud), err
}

func (b *LSPBackend) Checkpoint(_ context.Context, args protocol.CheckpointArgs) (protocol.CheckpointResult, error) {
	id, err := b.a().Checkpoint(string(args.Kind), args.Note)
	return protocol.CheckpointResult{CheckpointID: id}, err
}

func (b *LSPBackend) CapsuleCreate(ctx context.Context, args protocol.CapsuleCreateArgs) (protocol.CapsuleCreateResult, error) {
	ck, path, err := b.a().CapsuleCreate(ctx, args.Title)
	return protocol.CapsuleCreateResult{CheckpointID: ck, Path: path}, err
}

func (b *LSPBackend) CapsuleExport(_ context.Context, args protocol.CapsuleExportArgs) (protocol.CapsuleExportResult, error) {
	p, err := b.a().CapsuleExport(args.CheckpointID, args.Path, args.Overwrite)
	return protocol.CapsuleExportResult{Path: p}, err
}

func (b *LSPBackend) CapsuleLoad(_ context.Context, args protocol.CapsuleLoadArgs) (protocol.CapsuleLoadResult, error) {
	ck, title, warnings, err := b.a().CapsuleLoad(args.Path)
	return protocol.CapsuleLoadResult{CheckpointID: ck, Title: title, Warnings: warnings}, err
}

func (b *LSPBackend) CapsuleList(context.Context) ([]protocol.CapsuleInfo, error) {
	list, err := b.a().CapsuleList()
	out := make([]protocol.CapsuleInfo, 0, len(list))
	for _, c := range list {
		out = append(out, protocol.CapsuleInfo{CheckpointID: c.CheckpointID, Trigger: protocol.Trigger(c.Trigger), Title: c.Title, Quality: protocol.Quality(c.Quality), CreatedAt: c.CreatedAt})
	}
	return out, err
}

func (b *LSPBackend) CapsuleShow(_ context.Context, args protocol.CapsuleShowArgs) (protocol.CapsuleShowResult, error) {
	ck, md, err := b.a().CapsuleShow(args.CheckpointID)
	return protocol.CapsuleShowResult{CheckpointID: ck, Markdown: md}, err
}

func (b *LSPBackend) SessionInfo(context.Context) (protocol.SessionInfo, error) {
	i, err := b.a().Info()
	return protocol.SessionInfo{SessionID: i.SessionID, Path: i.Path, FlightPath: i.FlightPath, LeafID: i.LeafID, Entries: i.Entries}, err
}

func (b *LSPBackend) SessionList(context.Context) ([]protocol.SessionSummary, error) {
	list, err := b.ws.Sessions()
	out := make([]protocol.SessionSummary, 0, len(list))
	for _, s := range list {
		out = append(out, protocol.SessionSummary{SessionID: s.SessionID, Path: s.Path, UpdatedAt: s.UpdatedAt, Entries: s.Entries,
			Title: s.Title, Bytes: s.Bytes})
	}
	return out, err
}

func (b *LSPBackend) SessionNew(context.Context) (protocol.SessionNewResult, error) {
	i, err := b.ws.NewSession()
	return protocol.SessionNewResult{SessionID: i.SessionID, Path: i.Path}, err
}

func (b *LSPBackend) SessionResume(_ context.Context, args protocol.SessionResumeArgs) (protocol.SessionResumeResult, error) {
	i, rep, err := b.ws.ResumeSession(args.SessionID)
	if err != nil {
		return protocol.SessionResumeResult{}, err
	}
	for _, w := range resumeWarnings(args.SessionID, rep) {
		b.notify.Warn(w)
	}
	return protocol.SessionResumeResult{SessionID: i.SessionID, Path: i.Path, LeafID: i.LeafID}, nil
}

func (b *LSPBackend) SessionRewind(_ context.Context, args protocol.SessionRewindArgs) (protocol.SessionRewindResult, error) {
	leaf, err := b.a().Rewind(args.EntryID)
	return protocol.SessionRewindResult{LeafID: leaf}, err
}

func (b *LSPBackend) SessionHistory(context.Context) ([]protocol.HistoryPoint, error) {
	points, err := b.a().HistoryPoints()
	out := make([]protocol.HistoryPoint, 0, len(points))
	for _, p := range points {
		out = append(out, protocol.HistoryPoint{EntryID: p.EntryID, Kind: protocol.HistoryKind(p.Kind), Text: p.Text,
			CreatedAt: p.CreatedAt, RewindTo: p.RewindTo, FilesModifiedAfter: p.FilesModifiedAfter})
	}
	return out, err
}

func (b *LSPBackend) SessionTranscript(_ context.Context, args protocol.SessionTranscriptArgs) (protocol.SessionTranscript, error) {
	page, err := b.a().Transcript(args.Before, args.Limit)
	if err != nil {
		return protocol.SessionTranscript{}, err
	}
	return TranscriptOf(page), nil
}

// TranscriptOf is an agent's transcript page on the wire.
func TranscriptOf(page agent.TranscriptPage) protocol.SessionTranscript {
	out := protocol.SessionTranscript{Items: make([]protocol.TranscriptItem, 0, len(page.Items)), Before: page.Before, LeafID: page.LeafID}
	for _, it := range page.Items {
		w := protocol.TranscriptItem{EntryID: it.EntryID, Kind: protocol.TranscriptKind(it.Kind), CreatedAt: it.CreatedAt, Text: it.Text}
		if t := it.Tool; t != nil {
			w.Tool = &protocol.TranscriptTool{ID: t.ID, Name: t.Name, Arguments: t.Arguments, OK: t.OK, Summary: t.Summary,
				Approval: t.Approval, FilesModified: t.FilesModified}
		}
		if c := it.Capsule; c != nil {
			w.Compaction = &protocol.TranscriptCompaction{CheckpointID: c.CheckpointID, Trigger: protocol.Trigger(c.Trigger),
				TokensBefore: c.TokensBefore, TokensAfter: c.TokensAfter, Quality: protocol.Quality(c.Quality)}
		}
		out.Items = append(out.Items, w)
	}
	return out
}

func (b *LSPBackend) CancelCompaction(operationID string) bool {
	return b.a().CancelCompaction(operationID)
}

func (b *LSPBackend) Configure(settings json.RawMessage) error {
	warnings, err := b.ws.Configure(settings)
	for _, w := range warnings {
		b.notify.Warn(w)
	}
	if err != nil {
		return fmt.Errorf("configuration: %s", strings.TrimSpace(err.Error()))
	}
	return nil
}

func (b *LSPBackend) DidOpen(uri string)            { b.ws.DidOpen(uri) }
func (b *LSPBackend) DidChange(uri string, _ int32) { b.ws.DidChange(uri) }
func (b *LSPBackend) DidSave(uri string)            { b.ws.DidSave(uri) }
func (b *LSPBackend) DidClose(uri string)           { b.ws.DidClose(uri) }
func (b *LSPBackend) Close() error                  { return b.ws.Close() }

// resumeWarnings are what a resume found besides entries, one message each,
// naming lines: a torn tail, lines that are not entries (garbage, duplicate
// ids, payloads that do not decode), entries whose parent is missing and
// entries of types this version does not know.
func resumeWarnings(id string, rep *session.OpenReport) []string {
	if rep == nil {
		return nil
	}
	var out []string
	if rep.Torn != nil {
		out = append(out, fmt.Sprintf("session %s: a torn last line (%d bytes at offset %d, from a crash mid-write) was ignored and kept on disk as is",
			id, rep.Torn.Bytes, rep.Torn.Offset))
	}
	if rep.BadLineCount > 0 {
		var lines []string
		for _, b := range rep.BadLines[:min(len(rep.BadLines), 5)] {
			lines = append(lines, fmt.Sprintf("line %d: %v", b.Line, b.Err))
		}
		more := ""
		if rep.BadLineCount > len(lines) {
			more = fmt.Sprintf("; and %d more", rep.BadLineCount-len(lines))
		}
		out = append(out, fmt.Sprintf("session %s: %d lines are not entries and were skipped (%s%s)", id, rep.BadLineCount, strings.Join(lines, "; "), more))
	}
	if rep.MissingParentCount > 0 {
		out = append(out, fmt.Sprintf("session %s: %d entries name a parent that is not in the file and were kept as roots (first: %s)",
			id, rep.MissingParentCount, strings.Join(rep.MissingParents[:min(len(rep.MissingParents), 5)], ", ")))
	}
	for t, n := range rep.UnknownTypes {
		out = append(out, fmt.Sprintf("session %s: %d entries of type %q, unknown to this version, were kept and skipped", id, n, t))
	}
	return out
}
