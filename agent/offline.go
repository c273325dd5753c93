package agent

import (
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/workspace"
)

// SystemTokens is the estimate of the system prompt and tool schemas of a
// session of the workspace at root whose system prompt carries the bodies
// of skills (Restored's PromptSkills now; its ActiveSkills after the next
// compaction), as the agent counts them; systemPrompt is the extra prompt
// (Project Memory's summary) the workspace adds. Offline commands (budget,
// compact) add it to the model input so their figures match the server's.
func SystemTokens(counter compaction.Counter, root, systemPrompt string, skills []string) int {
	set := &skillSet{}
	if r, err := workspace.NewRoot(root); err == nil {
		defer r.Close()
		set.root = r
	}
	a := &Agent{opt: Options{Counter: counter, Root: root, SystemPrompt: systemPrompt},
		tools: &toolEnv{dir: root, skills: set}}
	return a.systemTokens(skills)
}

// StoreTranscript is the leaf path of s as the server reads it: headers from
// the store's index, payloads decoded on demand, a payload that does not
// decode read as its header alone (reported once through the store). The
// offline commands read sessions through it, so their figures come from the
// server's own path.
func StoreTranscript(s *session.Store) compaction.Transcript {
	p := s.Path()
	return newPathView(s, p, 0, latestCapsuleIndex(p))
}

// MaxToolResultChars is how long a tool result may be in the model input
// (the transcript keeps it whole), for offline commands that build the
// input as the server does.
const MaxToolResultChars = maxToolResultChars
