package main

import (
	"encoding/json"

	"github.com/soba-agent/soba-lsp/agent"
	"github.com/soba-agent/soba-lsp/workspace"
)

// loadSettings resolves a workspace's configuration layers (PROTOCOL.md
// "Configuration") into the agent's settings.
func loadSettings(root string, initOptions, didChange json.RawMessage) (agent.Settings, []string, error) {
	cfg, warnings, err := workspace.LoadConfig(root, workspace.StandardLayers(root, initOptions, didChange))
	if err != nil {
		return agent.Settings{}, warnings, err
	}
	return settingsOf(cfg, root), warnings, nil
}

func settingsOf(cfg workspace.Config, root string) agent.Settings {
	s := agent.Settings{Model: modelOf(cfg.Model), Compaction: cfg.EngineConfig(), Approval: cfg.Tools.Approval,
		SessionDir: cfg.ResolveSessionDir(root)}
	if cfg.SummaryModel != nil {
		m := modelOf(cfg.Summary())
		s.SummaryModel = &m
	}
	return s
}

func modelOf(m workspace.ModelConfig) agent.ModelSettings {
	return agent.ModelSettings{Provider: m.Provider, BaseURL: m.BaseURL, Name: m.Name, APIKeyEnv: m.APIKeyEnv,
		ContextWindow: m.ContextWindow, MaxOutputTokens: m.MaxOutputTokens}
}
