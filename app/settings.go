package app

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/soba-agent/soba-lsp/agent"

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
	for _, name := range slices.Sorted(maps.Keys(cfg.MCPServers)) {
		m := cfg.MCPServers[name]
		s.MCPServers = append(s.MCPServers, agent.MCPServer{Name: name, Command: m.Command, Args: m.Args, Env: m.Env, URL: m.URL, Headers: m.Headers, Approval: m.Approval})
	}
	if cfg.SummaryModel != nil {
		m := cfg.Summary()
		s.SummaryModel = &m
	}
	return s
}
