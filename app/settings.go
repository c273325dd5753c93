package app

import (
	"encoding/json"

	"github.com/soba-agent/soba-lsp/workspace"
)

// LoadSettings resolves a workspace's configuration layers (PROTOCOL.md
// "Configuration") into the agent's settings.
func LoadSettings(root string, initOptions, didChange json.RawMessage) (Settings, []string, error) {
	cfg, warnings, err := workspace.LoadConfig(root, workspace.StandardLayers(root, initOptions, didChange))
	if err != nil {
		return Settings{}, warnings, err
	}
	return settingsOf(cfg, root), warnings, nil
}

func settingsOf(cfg workspace.Config, root string) Settings {
	s := Settings{Model: cfg.Model, Compaction: cfg.EngineConfig(), Approval: cfg.Tools.Approval,
		SessionDir: cfg.ResolveSessionDir(root)}
	if cfg.SummaryModel != nil {
		m := cfg.Summary()
		s.SummaryModel = &m
	}
	return s
}
