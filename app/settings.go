package app

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/soba-agent/soba-lsp/agent"

	"github.com/soba-agent/soba-lsp/workspace"
)

// LoadSettings resolves a workspace's configuration layers (PROTOCOL.md
// "Configuration") into the agent's settings.
func LoadSettings(root string, initOptions, didChange json.RawMessage) (Settings, []string, error) {
	layers := workspace.StandardLayers(root, initOptions, didChange)
	cfg, warnings, err := workspace.LoadConfig(root, layers)
	if err != nil {
		return Settings{}, warnings, err
	}
	cfg.MCPServers, warnings = trustedMCPServers(cfg, root, layers, warnings)
	return settingsOf(cfg, root), warnings, nil
}

// trustedMCPServers are the mcpServers of every layer but the workspace's
// own .soba/config.json. An MCP server is a command SOBA starts when the
// workspace opens, and a repository's files must never run anything by
// being opened (SOBA is safe to open on any repository): servers from the
// workspace file are left out, with a warning naming them and where to put
// them instead (the user's config.json or the editor's settings).
func trustedMCPServers(cfg workspace.Config, root string, layers workspace.Layers, warnings []string) (map[string]workspace.MCPServerConfig, []string) {
	if len(cfg.MCPServers) == 0 {
		return nil, warnings
	}
	outer := layers
	outer.WorkspaceFile = ""
	// With no root, LoadConfig reads no workspace file.
	trusted, _, err := workspace.LoadConfig("", outer)
	if err != nil {
		trusted = workspace.Config{}
	}
	var left []string
	out := map[string]workspace.MCPServerConfig{}
	for name, s := range cfg.MCPServers {
		t, ok := trusted.MCPServers[name]
		switch {
		case ok && reflect.DeepEqual(t, s):
			out[name] = s
		case ok:
			out[name] = t // the workspace file may not change a trusted server
			left = append(left, name+" (changed)")
		default:
			left = append(left, name)
		}
	}
	if len(left) > 0 {
		slices.Sort(left)
		warnings = append(warnings, fmt.Sprintf("%s: mcpServers %s not started: a workspace's own configuration cannot start programs; "+
			"add them to ~/.config/soba/config.json or the editor's SOBA settings", workspace.WorkspaceConfigFile(root), strings.Join(left, ", ")))
	}
	return out, warnings
}

func settingsOf(cfg workspace.Config, root string) Settings {
	s := Settings{Model: cfg.Model, Compaction: cfg.EngineConfig(), Approval: cfg.Tools.Approval,
		SessionDir: cfg.ResolveSessionDir(root), SessionOnStart: cfg.SessionOnStart}
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
