package agent

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/tool"
)

// protected are the workspace paths (slash-separated, relative to the root)
// that the agent's tools never write (R-W2): the transcript and its locks,
// the flight records, the server's own configuration and Project Memory,
// which only the store, the engine and Project Memory write. A path is
// protected when it is one of them or lies under one.
type protected []string

// protectedPaths lists the protected paths of a workspace whose sessions and
// flight records live in sessionDir and flightDir (absolute; ignored when
// outside root, which the configuration refuses).
func protectedPaths(root, sessionDir, flightDir string) protected {
	p := protected{".soba/config.json", ".soba/memory", ".soba/sessions", ".soba/flight"}
	for _, d := range []string{sessionDir, flightDir} {
		if d == "" || root == "" {
			continue
		}
		if rel, err := filepath.Rel(root, d); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			p = append(p, filepath.ToSlash(rel))
		}
	}
	return p
}

// check refuses rel when it is protected, naming it and why.
func (p protected) check(rel string) error {
	for _, q := range p {
		if rel == q || strings.HasPrefix(rel, q+"/") {
			return fmt.Errorf("%s is protected: %s is written only by SOBA itself, never by a tool (R-W2)", rel, q)
		}
	}
	return nil
}

// changesSkill reports whether call writes a skill's files.
func (env *toolEnv) changesSkill(call session.ToolCall) bool {
	if env.root == nil || (call.Name != tool.WriteFile && call.Name != tool.EditFile) {
		return false
	}
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(call.Arguments, &a) != nil || a.Path == "" {
		return false
	}
	_, rel, err := env.root.Resolve(a.Path)
	if err != nil {
		return false
	}
	real, _ := env.root.Real(rel)
	return skillChange(rel) || skillChange(real)
}

// skillChange reports whether a write to rel changes a skill: skills are
// instructions the model follows, so such a write is always asked for
// explicitly, even under approval "auto" or after "Allow for session".
func skillChange(rel string) bool {
	return rel == skillsDir || strings.HasPrefix(rel, skillsDir+"/")
}
