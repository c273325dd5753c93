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
	"github.com/soba-agent/soba-lsp/session"
)

// LSPBackend serves the commands with the real agent of a workspace. Each
// method decodes nothing and decides nothing: it calls the agent and shapes
// the result as PROTOCOL.md says.
type LSPBackend struct {
	ws     *Workspace
	notify agent.Notifier
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
			Load: load, Notifier: opts.Notifier, Approver: opts.Approver, Counter: counter, EntryTokens: entryTokens})
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

func (b *LSPBackend) Prompt(_ context.Context, args lsp.PromptArgs) (lsp.PromptResult, error) {
	id, queued, err := b.a().Prompt(args.Text)
	return lsp.PromptResult{TurnID: id, Queued: queued}, err
}

func (b *LSPBackend) Cancel(context.Context) (lsp.CancelResult, error) {
	ok, what, err := b.a().Cancel()
	return lsp.CancelResult{Cancelled: ok, What: what}, err
}

func (b *LSPBackend) Budget(context.Context) (compaction.Budget, error) { return b.a().Budget() }

func (b *LSPBackend) Compact(ctx context.Context, args lsp.CompactArgs) (compaction.CompactionResult, error) {
	return b.a().Compact(ctx, args.Instructions)
}

func (b *LSPBackend) SetAutoCompact(_ context.Context, args lsp.AutoCompactArgs) (compaction.Budget, error) {
	return b.a().SetAutoCompact(args.Enabled)
}

func (b *LSPBackend) Checkpoint(_ context.Context, args lsp.CheckpointArgs) (lsp.CheckpointResult, error) {
	id, err := b.a().Checkpoint(args.Kind, args.Note)
	return lsp.CheckpointResult{CheckpointID: id}, err
}

func (b *LSPBackend) CapsuleCreate(ctx context.Context, args lsp.CapsuleCreateArgs) (lsp.CapsuleCreateResult, error) {
	ck, path, err := b.a().CapsuleCreate(ctx, args.Title)
	return lsp.CapsuleCreateResult{CheckpointID: ck, Path: path}, err
}

func (b *LSPBackend) CapsuleExport(_ context.Context, args lsp.CapsuleExportArgs) (lsp.CapsuleExportResult, error) {
	p, err := b.a().CapsuleExport(args.CheckpointID, args.Path, args.Overwrite)
	return lsp.CapsuleExportResult{Path: p}, err
}

func (b *LSPBackend) CapsuleLoad(_ context.Context, args lsp.CapsuleLoadArgs) (lsp.CapsuleLoadResult, error) {
	ck, title, warnings, err := b.a().CapsuleLoad(args.Path)
	return lsp.CapsuleLoadResult{CheckpointID: ck, Title: title, Warnings: warnings}, err
}

func (b *LSPBackend) CapsuleList(context.Context) ([]lsp.CapsuleInfo, error) {
	list, err := b.a().CapsuleList()
	out := make([]lsp.CapsuleInfo, 0, len(list))
	for _, c := range list {
		out = append(out, lsp.CapsuleInfo{CheckpointID: c.CheckpointID, Trigger: c.Trigger, Title: c.Title, Quality: c.Quality, CreatedAt: c.CreatedAt})
	}
	return out, err
}

func (b *LSPBackend) CapsuleShow(_ context.Context, args lsp.CapsuleShowArgs) (lsp.CapsuleShowResult, error) {
	ck, md, err := b.a().CapsuleShow(args.CheckpointID)
	return lsp.CapsuleShowResult{CheckpointID: ck, Markdown: md}, err
}

func (b *LSPBackend) SessionInfo(context.Context) (lsp.SessionInfo, error) {
	i, err := b.a().Info()
	return lsp.SessionInfo{SessionID: i.SessionID, Path: i.Path, FlightPath: i.FlightPath, LeafID: i.LeafID, Entries: i.Entries}, err
}

func (b *LSPBackend) SessionList(context.Context) ([]lsp.SessionSummary, error) {
	list, err := b.ws.Sessions()
	out := make([]lsp.SessionSummary, 0, len(list))
	for _, s := range list {
		out = append(out, lsp.SessionSummary{SessionID: s.SessionID, Path: s.Path, UpdatedAt: s.UpdatedAt, Entries: s.Entries})
	}
	return out, err
}

func (b *LSPBackend) SessionNew(context.Context) (lsp.SessionNewResult, error) {
	i, err := b.ws.NewSession()
	return lsp.SessionNewResult{SessionID: i.SessionID, Path: i.Path}, err
}

func (b *LSPBackend) SessionResume(_ context.Context, args lsp.SessionResumeArgs) (lsp.SessionResumeResult, error) {
	i, rep, err := b.ws.ResumeSession(args.SessionID)
	if err != nil {
		return lsp.SessionResumeResult{}, err
	}
	if rep != nil && rep.Torn != nil {
		b.notify.Warn(fmt.Sprintf("session %s: a torn last line (%d bytes at offset %d, from a crash mid-write) was ignored and kept on disk as is",
			args.SessionID, rep.Torn.Bytes, rep.Torn.Offset))
	}
	return lsp.SessionResumeResult{SessionID: i.SessionID, Path: i.Path, LeafID: i.LeafID}, nil
}

func (b *LSPBackend) SessionRewind(_ context.Context, args lsp.SessionRewindArgs) (lsp.SessionRewindResult, error) {
	leaf, err := b.a().Rewind(args.EntryID)
	return lsp.SessionRewindResult{LeafID: leaf}, err
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
