package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/soba-agent/soba-lsp/agent"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/workspace"
)

// offline is what the offline commands share: the workspace, its
// configuration and the token counter.
type offline struct {
	root    string
	config  compaction.Config
	counter compaction.Counter
}

// offlineFlags registers --workspace and --config on fs.
func offlineFlags(fs *flag.FlagSet) (ws, cfg *string) {
	ws = fs.String("workspace", "", "workspace root `DIR` (default: the directory holding the session's .soba/, else the current directory)")
	cfg = fs.String("config", "", "configuration `FILE` used instead of <workspace>/.soba/config.json (over the defaults and the user's ~/.config/soba/config.json)")
	return ws, cfg
}

// openOffline resolves the workspace of a session file and loads the
// configuration as the server does (PROTOCOL.md "Configuration": defaults,
// the user file, the workspace file or --config).
func openOffline(sessionPath, wsFlag, cfgFlag string, warn io.Writer) (*offline, error) {
	root := wsFlag
	if root == "" {
		// <root>/.soba/sessions/<id>.jsonl is the usual place.
		abs, err := filepath.Abs(sessionPath)
		if err != nil {
			return nil, err
		}
		if d := filepath.Dir(abs); filepath.Base(d) == "sessions" && filepath.Base(filepath.Dir(d)) == workspace.SobaDirName {
			root = filepath.Dir(filepath.Dir(d))
		} else if root, err = os.Getwd(); err != nil {
			return nil, err
		}
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	layers := workspace.StandardLayers(root, nil, nil)
	if cfgFlag != "" {
		if _, err := os.Stat(cfgFlag); err != nil {
			return nil, fmt.Errorf("--config: %w", err)
		}
		layers.WorkspaceFile = cfgFlag
	}
	cfg, warnings, err := workspace.LoadConfig(root, layers)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		fmt.Fprintln(warn, "config:", w)
	}
	ec := cfg.EngineConfig()
	if err := ec.Validate(); err != nil {
		return nil, err
	}
	return &offline{root: root, config: ec, counter: newCounter()}, nil
}

// systemTokens is the system prompt and tool schemas as the server counts
// them at the start of a session in this workspace, Project Memory's summary
// included when the workspace has one.
func (o *offline) systemTokens() int {
	prompt := ""
	if _, err := os.Stat(filepath.Join(o.root, workspace.SobaDirName, "memory")); err == nil {
		if r, err := workspace.NewRoot(o.root); err == nil {
			if m, err := workspace.OpenMemory(r); err == nil {
				prompt = m.Summary()
			}
		}
	}
	return agent.SystemTokens(o.counter, o.root, prompt)
}

// sessionState is what the server restores from a leaf path (R-T4) that
// the budget reports.
type sessionState struct {
	base        compaction.Base
	inputTokens int // capsule and messages from the base on, estimated
	usage       *session.Usage
	sinceUsage  int // estimates of the messages after that usage
	autoCompact bool
	pending     []string
	skills      []string
	last        *compaction.CompactionResult
}

// restoreState reads the leaf path as the agent's resume does.
func (o *offline) restoreState(path compaction.Entries) (sessionState, error) {
	st := sessionState{autoCompact: true, pending: []string{}}
	b, err := compaction.FindBase(path)
	if err != nil {
		return st, err
	}
	st.base = b
	if b.State != nil {
		st.inputTokens = o.counter.Count(compaction.CapsulePreamble + compaction.ModelText(*b.State))
		st.skills = append(st.skills, b.State.ActiveSkills...)
	}
	var intents compaction.Intents
	for i := range path {
		e := &path[i]
		switch {
		case e.Settings != nil:
			if e.Settings.AutoCompact != nil {
				st.autoCompact = *e.Settings.AutoCompact
			}
			for _, c := range e.Settings.ConsumedIntents {
				intents.Consume(c)
			}
		case e.Checkpoint != nil && e.Checkpoint.Intent != "":
			intents.Add(e.Checkpoint.Intent)
		case e.ToolResult != nil && i >= b.Start && e.ToolResult.Artifacts != nil && e.ToolResult.Artifacts.Skill != "":
			st.skills = append(st.skills, e.ToolResult.Artifacts.Skill)
		case e.Capsule != nil:
			c := e.Capsule
			r := compaction.CompactionResult{Trigger: c.Trigger, Outcome: compaction.OutcomeCompleted, TokensBefore: c.TokensBefore,
				TokensAfter: c.TokensAfter, ReclaimedTokens: c.TokensBefore - c.TokensAfter, CheckpointID: c.CheckpointID, Quality: c.Quality}
			if c.TokensBefore > 0 {
				r.ReclaimedRatio = float64(r.ReclaimedTokens) / float64(c.TokensBefore)
			}
			r.Line = compaction.ResultLine(r)
			st.last = &r
		}
		if i >= b.Start && i != b.CapsuleIndex && modelType(e.Type) {
			st.inputTokens += e.Tokens
		}
	}
	if l := intents.List(); l != nil {
		st.pending = l
	}
	for i := len(path) - 1; i > b.CapsuleIndex && i >= b.Start; i-- {
		if a := path[i].Assistant; a != nil {
			if a.Usage != nil {
				st.usage = a.Usage
				for _, e := range path[i+1:] {
					if modelType(e.Type) {
						st.sinceUsage += e.Tokens
					}
				}
			}
			break
		}
	}
	return st, nil
}

func modelType(t string) bool {
	return t == session.TypeUser || t == session.TypeAssistant || t == session.TypeToolResult
}

// budget is the Budget object (PROTOCOL.md) of a restored session, as the
// server reports it right after resuming it: the provider's count of the
// last request plus estimates since, or the estimate; state idle.
// lastCompaction is the newest capsule on the leaf path.
func (o *offline) budget(st sessionState, systemTokens int) compaction.Budget {
	c := o.config
	eff, src := systemTokens+st.inputTokens, "estimated"
	if st.usage != nil {
		eff, src = st.usage.InputTokens+st.usage.OutputTokens+st.sinceUsage, "provider_usage"
	}
	return compaction.Budget{
		EffectiveTokens: eff, HardLimit: c.HardLimit(), SoftLimit: c.SoftLimit(), ContextWindow: c.ContextWindow,
		MaxOutputTokens: c.MaxOutputTokens, SafetyReserveTokens: c.SafetyReserveTokens, Source: src,
		AutoCompact: st.autoCompact && c.Auto, Pending: st.pending, State: compaction.StateIdle, LastCompaction: st.last,
	}
}

// runBudget prints a session's Budget as JSON.
func runBudget(_ context.Context, env *cmdEnv, args []string) int {
	fs := subcommandFlags(env, "budget")
	ws, cfg := offlineFlags(fs)
	setUsage(fs, env, "usage: soba-lsp budget [flags] <session.jsonl>\n\nPrints the session's Budget (PROTOCOL.md) as JSON, as the server reports it after resuming the session.")
	if !parseExact(fs, args, 1) {
		return 2
	}
	o, err := openOffline(fs.Arg(0), *ws, *cfg, env.stderr)
	if err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp budget:", err)
		return 2
	}
	tf, err := readTranscript(fs.Arg(0), entryTokens(o.counter))
	if err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp budget:", err)
		return 1
	}
	for _, p := range tf.problems {
		fmt.Fprintln(env.stderr, "warning:", p)
	}
	st, err := o.restoreState(tf.leafPath())
	if err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp budget:", err)
		return 1
	}
	enc := json.NewEncoder(env.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(o.budget(st, o.systemTokens())); err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp budget:", err)
		return 1
	}
	return 0
}
