package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/soba-agent/soba-lsp/agent/provider"
	"github.com/soba-agent/soba-lsp/session"
)

// Recorded is a provider that answers from a recorded session: each
// inference returns the next recorded assistant response, streamed in
// pieces, with its recorded usage. Replay uses it to run a session through
// the real turn loop and compaction engine without a model server.
type Recorded struct {
	mu      sync.Mutex
	answers []session.Assistant
	next    int
	// Requests counts the inferences made.
	Requests int
}

// NewRecorded returns a provider over the recorded assistant entries.
func NewRecorded(answers []session.Assistant) *Recorded { return &Recorded{answers: answers} }

// Name implements provider.Provider.
func (r *Recorded) Name() string { return "replay" }

// ErrReplayExhausted is returned when the recording has no answer left.
var ErrReplayExhausted = errors.New("replay: no recorded answer left")

// Stream implements provider.Provider.
func (r *Recorded) Stream(ctx context.Context, req provider.Request, onEvent func(provider.Event)) (provider.Response, error) {
	r.mu.Lock()
	if r.next >= len(r.answers) {
		r.mu.Unlock()
		return provider.Response{}, ErrReplayExhausted
	}
	a := r.answers[r.next]
	r.next++
	r.Requests++
	r.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return provider.Response{}, err
	}
	if a.Error != "" && a.Text == "" && len(a.ToolCalls) == 0 {
		return provider.Response{}, fmt.Errorf("replay: the recorded inference failed: %s", a.Error)
	}
	const piece = 64
	for i := 0; i < len(a.Text); i += piece {
		if onEvent != nil {
			onEvent(provider.Event{Kind: "text", Delta: a.Text[i:min(i+piece, len(a.Text))]})
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
