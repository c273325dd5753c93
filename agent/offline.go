package agent

import (
	"path/filepath"

	"github.com/soba-agent/soba-lsp/compaction"
)

// SystemTokens is the estimate of the system prompt and tool schemas of a
// session of the workspace at root with activeSkills active (Restored's),
// as the agent counts them; systemPrompt is the extra prompt (Project
// Memory's summary) the workspace adds. Offline commands (budget,
// compact) add it to the model input so their figures match the server's.
func SystemTokens(counter compaction.Counter, root, systemPrompt string, activeSkills []string) int {
	a := &Agent{opt: Options{Counter: counter, Root: root, SystemPrompt: systemPrompt},
		tools: &toolEnv{dir: root, skills: &skillSet{dir: filepath.Join(root, ".soba", "skills")}}}
	return a.systemTokens(&state{activeSkills: activeSkills})
}
