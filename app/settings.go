package app

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/soba-agent/soba-lsp/agent"

	"github.com/soba-agent/soba-lsp/workspace"
)

// LoadSettings resolves a workspace's configuration layers (PROTOCOL.md
// "Configuration") into the agent's settings. The repository's own layers
// (.soba/config.json, the editor's repositorySettings) may only tighten
// until the workspace is trusted (SPEC R-W5): the loader leaves out what they
// may not set, MCP servers included, with one warning naming the keys.
func LoadSettings(root string, initOptions, didChange json.RawMessage) (Settings, []string, error) {
	layers := workspace.StandardLayers(root, initOptions, didChange)
	cfg, warnings, err := workspace.LoadConfig(root, layers)
	if err != nil {
		return Settings{}, warnings, err
	}
	// The warning about ignored repository settings travels in the
	// settings, so the workspace shows it once per change, not at each
	// didChangeConfiguration.
	warnings = slices.DeleteFunc(warnings, func(w string) bool { return w == cfg.RepositoryWarning })
	return settingsOf(cfg, root), warnings, nil
}

func settingsOf(cfg workspace.Config, root string) Settings {
	s := Settings{Model: cfg.Model, Compaction: cfg.EngineConfig(), Approval: cfg.Tools.Approval, MaxToolResultTokens: cfg.Tools.MaxResultTokens,
		AutoApprovePaths: cfg.Tools.AutoApprovePaths, SessionDir: cfg.ResolveSessionDir(root), SessionOnStart: cfg.SessionOnStart,
		RepositoryIgnored: cfg.RepositoryIgnored, WorkspaceTrusted: cfg.WorkspaceTrusted, RepositoryWarning: cfg.RepositoryWarning}
	for _, name := range slices.Sorted(maps.Keys(cfg.MCPServers)) {
		m := cfg.MCPServers[name]
		s.MCPServers = append(s.MCPServers, agent.MCPServer{Name: name, Command: m.Command, Args: m.Args, Env: m.Env, URL: m.URL, Headers: m.Headers, SSE: m.Type == "sse", Approval: m.Approval})
	}
	if cfg.SummaryModel != nil {
		m := cfg.Summary()
		s.SummaryModel = &m
	}
	s.Models, s.ModelName, s.SummaryModelName = cfg.Models, cfg.ModelName, cfg.SummaryModelName
	return s
}
