package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/soba-agent/soba-lsp/agent"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/session"
)

// AgentBackend serves the commands with the real agent of a workspace. Each
// method decodes nothing and decides nothing: it calls the agent and shapes
// the result as PROTOCOL.md says.
type AgentBackend struct {
	ws     *agent.Workspace
	notify agent.Notifier
}

// AgentBackendFactory returns the factory that cmd/soba-lsp serves with.
func AgentBackendFactory(load agent.SettingsLoader, counter compaction.Counter, entryTokens func(*session.Entry) int) BackendFactory {
	return func(ctx context.Context, opts BackendOptions) (Backend, error) {
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
		ws, warnings, err := agent.OpenWorkspace(agent.WorkspaceOptions{Root: opts.Root, InitOptions: opts.InitializationOptions,
			Load: load, Notifier: opts.Notifier, Approver: opts.Approver, Counter: counter, EntryTokens: entryTokens})
		for _, w := range warnings {
			opts.Notifier.Warn(w)
		}
		if err != nil {
			return nil, err
		}
		return &AgentBackend{ws: ws, notify: opts.Notifier}, nil
	}
}

func (b *AgentBackend) a() *agent.Agent { return b.ws.Agent() }

func (b *AgentBackend) Prompt(_ context.Context, args PromptArgs) (PromptResult, error) {
	id, queued, err := b.a().Prompt(args.Text)
	return PromptResult{TurnID: id, Queued: queued}, err
}

func (b *AgentBackend) Cancel(context.Context) (CancelResult, error) {
	ok, what, err := b.a().Cancel()
	return CancelResult{Cancelled: ok, What: what}, err
}

func (b *AgentBackend) Budget(context.Context) (compaction.Budget, error) { return b.a().Budget() }

func (b *AgentBackend) Compact(ctx context.Context, args CompactArgs) (compaction.CompactionResult, error) {
	return b.a().Compact(ctx, args.Instructions)
}

func (b *AgentBackend) SetAutoCompact(_ context.Context, args AutoCompactArgs) (compaction.Budget, error) {
	return b.a().SetAutoCompact(args.Enabled)
}

func (b *AgentBackend) Checkpoint(_ context.Context, args CheckpointArgs) (CheckpointResult, error) {
	id, err := b.a().Checkpoint(args.Kind, args.Note)
	return CheckpointResult{CheckpointID: id}, err
}

func (b *AgentBackend) CapsuleCreate(ctx context.Context, args CapsuleCreateArgs) (CapsuleCreateResult, error) {
	ck, path, err := b.a().CapsuleCreate(ctx, args.Title)
	return CapsuleCreateResult{CheckpointID: ck, Path: path}, err
}

func (b *AgentBackend) CapsuleExport(_ context.Context, args CapsuleExportArgs) (CapsuleExportResult, error) {
	p, err := b.a().CapsuleExport(args.CheckpointID, args.Path, args.Overwrite)
	return CapsuleExportResult{Path: p}, err
}

func (b *AgentBackend) CapsuleLoad(_ context.Context, args CapsuleLoadArgs) (CapsuleLoadResult, error) {
	ck, title, warnings, err := b.a().CapsuleLoad(args.Path)
	return CapsuleLoadResult{CheckpointID: ck, Title: title, Warnings: warnings}, err
}

func (b *AgentBackend) CapsuleList(context.Context) ([]CapsuleInfo, error) {
	list, err := b.a().CapsuleList()
	out := make([]CapsuleInfo, 0, len(list))
	for _, c := range list {
		out = append(out, CapsuleInfo{CheckpointID: c.CheckpointID, Trigger: c.Trigger, Title: c.Title, Quality: c.Quality, CreatedAt: c.CreatedAt})
	}
	return out, err
}

func (b *AgentBackend) CapsuleShow(_ context.Context, args CapsuleShowArgs) (CapsuleShowResult, error) {
	ck, md, err := b.a().CapsuleShow(args.CheckpointID)
	return CapsuleShowResult{CheckpointID: ck, Markdown: md}, err
}

func (b *AgentBackend) SessionInfo(context.Context) (SessionInfo, error) {
	i, err := b.a().Info()
	return SessionInfo{SessionID: i.SessionID, Path: i.Path, FlightPath: i.FlightPath, LeafID: i.LeafID, Entries: i.Entries}, err
}

func (b *AgentBackend) SessionList(context.Context) ([]SessionSummary, error) {
	list, err := b.ws.Sessions()
	out := make([]SessionSummary, 0, len(list))
	for _, s := range list {
		out = append(out, SessionSummary{SessionID: s.SessionID, Path: s.Path, UpdatedAt: s.UpdatedAt, Entries: s.Entries})
	}
	return out, err
}

func (b *AgentBackend) SessionNew(context.Context) (SessionNewResult, error) {
	i, err := b.ws.NewSession()
	return SessionNewResult{SessionID: i.SessionID, Path: i.Path}, err
}

func (b *AgentBackend) SessionResume(_ context.Context, args SessionResumeArgs) (SessionResumeResult, error) {
	i, rep, err := b.ws.ResumeSession(args.SessionID)
	if err != nil {
		return SessionResumeResult{}, err
	}
	if rep != nil && rep.Torn != nil {
		b.notify.Warn(fmt.Sprintf("session %s: a torn last line (%d bytes at offset %d, from a crash mid-write) was ignored and kept on disk as is",
			args.SessionID, rep.Torn.Bytes, rep.Torn.Offset))
	}
	return SessionResumeResult{SessionID: i.SessionID, Path: i.Path, LeafID: i.LeafID}, nil
}

func (b *AgentBackend) SessionRewind(_ context.Context, args SessionRewindArgs) (SessionRewindResult, error) {
	leaf, err := b.a().Rewind(args.EntryID)
	return SessionRewindResult{LeafID: leaf}, err
}

func (b *AgentBackend) CancelCompaction(operationID string) bool {
	return b.a().CancelCompaction(operationID)
}

func (b *AgentBackend) Configure(settings json.RawMessage) error {
	warnings, err := b.ws.Configure(settings)
	for _, w := range warnings {
		b.notify.Warn(w)
	}
	if err != nil {
		return fmt.Errorf("configuration: %s", strings.TrimSpace(err.Error()))
	}
	return nil
}

func (b *AgentBackend) DidOpen(uri string)            { b.ws.DidOpen(uri) }
func (b *AgentBackend) DidChange(uri string, _ int32) { b.ws.DidChange(uri) }
func (b *AgentBackend) DidSave(uri string)            { b.ws.DidSave(uri) }
func (b *AgentBackend) DidClose(uri string)           { b.ws.DidClose(uri) }
func (b *AgentBackend) Close() error                  { return b.ws.Close() }
