package acp

import (
	"context"
	"encoding/json"
	"io"
	"sync"

	sdk "github.com/coder/acp-go-sdk"
)

// The unstable compaction updates of ACP schema 1.7.0 (`compaction_update`,
// sent only to a client whose initialize set
// `clientCapabilities.session.compaction`) are not in the Go SDK's types:
// neither the capability nor the update. So the server reads the client's
// initialize itself (intercept.go) for the capability, and writes the
// update as a whole `session/update` line through the same serialized
// writer the SDK writes its messages with (one Write per message).

// lineWriter serializes whole-message writes of the SDK and of the server.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// CompactionStatus is a compaction_update status.
type CompactionStatus string

// Compaction statuses of ACP's compaction_update.
const (
	CompactionInProgress CompactionStatus = "in_progress"
	CompactionCompleted  CompactionStatus = "completed"
	CompactionFailed     CompactionStatus = "failed"
	CompactionCancelled  CompactionStatus = "cancelled"
)

// CompactionUpdates reports whether the client opted in to compaction_update
// (clientCapabilities.session.compaction in initialize).
func (p *Peer) CompactionUpdates() bool {
	return p.compaction != nil && p.compaction.Load()
}

// CompactionUpdate is one compaction_update. The schema's patch rules are
// kept by Compaction: a summary only with completed, an error only with
// failed.
type CompactionUpdate struct {
	ID     string
	Status CompactionStatus
	// Summary replaces what the client shows as the compaction's summary
	// (completed only).
	Summary string
	// ClearSummary sends `summary: []`, dropping the streamed chunks of a
	// compaction that did not complete.
	ClearSummary bool
	// Error says why a compaction failed (failed only).
	Error string
}

// Compaction sends a compaction_update (unstable). Nothing is sent to a
// client that did not opt in.
func (p *Peer) Compaction(_ context.Context, u CompactionUpdate) {
	update := map[string]any{"sessionUpdate": "compaction_update", "compactionId": u.ID, "status": u.Status}
	switch {
	case u.Status == CompactionCompleted && u.Summary != "":
		update["summary"] = []map[string]any{{"type": "text", "text": u.Summary}}
	case u.ClearSummary:
		update["summary"] = []any{}
	}
	if u.Status == CompactionFailed && u.Error != "" {
		update["error"] = u.Error
	}
	p.sendRaw(update)
}

// CompactionChunk appends text to a running compaction's summary
// (compaction_summary_chunk, unstable): the summary model's answer as it
// streams, between the in_progress update and the terminal one.
func (p *Peer) CompactionChunk(_ context.Context, id, text string) {
	if text == "" {
		return
	}
	p.sendRaw(map[string]any{"sessionUpdate": "compaction_summary_chunk", "compactionId": id,
		"content": map[string]any{"type": "text", "text": text}})
}

// sendRaw writes a session/update the SDK has no type for, to a client that
// opted in to compaction updates.
func (p *Peer) sendRaw(update map[string]any) {
	if !p.CompactionUpdates() || p.raw == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.id == "" {
		return
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": sdk.ClientMethodSessionUpdate,
		"params": map[string]any{"sessionId": p.id, "update": update}})
	if err != nil {
		return
	}
	_, _ = p.raw.Write(append(b, '\n'))
}
