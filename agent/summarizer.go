package agent

import (
	"context"
	"strings"

	"github.com/soba-agent/soba-lsp/agent/provider"
	"github.com/soba-agent/soba-lsp/compaction"
)

// ModelSummarizer asks a provider for capsule summaries (PROTOCOL.md
// `summaryModel`), streaming progress as the answer grows.
type ModelSummarizer struct {
	Provider provider.Provider
	Model    string
	// ContextWindow of the summary model, for Ollama's num_ctx.
	ContextWindow int
}

// expectedSummaryChars is the answer length the progress estimate assumes.
const expectedSummaryChars = 2400

// Summarize implements compaction.Summarizer.
func (m *ModelSummarizer) Summarize(ctx context.Context, req compaction.SummaryRequest, progress func(int)) (string, error) {
	var got int
	resp, err := m.Provider.Stream(ctx, provider.Request{
		Model: m.Model, System: req.System, MaxOutputTokens: req.MaxOutputTokens, ContextWindow: m.ContextWindow,
		Messages: []provider.Message{{Role: provider.RoleUser, Text: req.Prompt}},
	}, func(ev provider.Event) {
		if ev.Kind == provider.EventText {
			got += len(ev.Delta)
			if progress != nil {
				progress(min(95, 100*got/expectedSummaryChars))
			}
		}
	})
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(resp.Text) == "" {
		return "", compaction.ErrUnusableSummary
	}
	return resp.Text, nil
}
