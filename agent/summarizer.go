package agent

import (
	"context"
	"strings"

	"github.com/soba-agent/soba-lsp/agent/provider"
	"github.com/soba-agent/soba-lsp/compaction"
)

// ModelSummarizer asks a provider for capsule summaries (PROTOCOL.md
// `summaryModel`), passing the answer on as it streams.
type ModelSummarizer struct {
	Provider provider.Provider
	Model    string
	// ContextWindow of the summary model, for Ollama's num_ctx.
	ContextWindow int
}

// Summarize implements compaction.Summarizer.
func (m *ModelSummarizer) Summarize(ctx context.Context, req compaction.SummaryRequest, stream func(string)) (string, error) {
	resp, err := m.Provider.Stream(ctx, provider.Request{
		Model: m.Model, System: req.System, MaxOutputTokens: req.MaxOutputTokens, ContextWindow: m.ContextWindow,
		Messages: []provider.Message{{Role: provider.RoleUser, Text: req.Prompt}},
	}, func(ev provider.Event) {
		if ev.Kind == provider.EventText && ev.Delta != "" && stream != nil {
			stream(ev.Delta)
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
