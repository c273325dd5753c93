package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/soba-agent/soba-lsp/agent"
	"github.com/soba-agent/soba-lsp/app"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/compaction/tokens"
	"github.com/soba-agent/soba-lsp/importer"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/workspace"
)

// offline is what the offline commands share: the workspace, its
// configuration and the token counter.
type offline struct {
	root    string
	config  compaction.Config
	counter compaction.Counter
	// provider and model are the configured model's, whose native
	// continuation the server would send (R-N2).
	provider, model string
	// systemPrompt is the workspace's AGENTS.md and Project Memory summary,
	// read once per process (systemPromptOf).
	systemPrompt string
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
	counter := startCounter()
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
		layers.WorkspaceFile, layers.WorkspaceFileIsUsers = cfgFlag, true
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
	return &offline{root: root, config: ec, counter: counter, provider: cfg.Model.Provider, model: cfg.Model.Name,
		systemPrompt: systemPromptOf(root)}, nil
}

// systemPromptOf is the system prompt text a server session in the
// workspace at root carries besides tools and skills: AGENTS.md and Project
// Memory's summary (app.SystemPrompt), as the server has them.
func systemPromptOf(root string) string {
	r, err := workspace.NewRoot(root)
	if err != nil {
		return ""
	}
	defer r.Close()
	memory := ""
	if _, err := os.Stat(filepath.Join(root, workspace.SobaDirName, "memory")); err == nil {
		if m, err := workspace.OpenMemory(r); err == nil {
			memory = m.Summary()
		}
	}
	prompt, _ := app.SystemPrompt(r, memory)
	return prompt
}

// systemTokens is the system prompt and tool schemas as the server counts
// them for a session in this workspace whose system prompt carries the
// bodies of skills (agent.Restored's PromptSkills) and o.systemPrompt.
func (o *offline) systemTokens(skills []string) int {
	return agent.SystemTokens(o.counter, o.root, o.systemPrompt, skills)
}

// restoreState reads what the leaf path restores (R-T4) with the server's
// own code, so that the offline figures are the server's.
func (o *offline) restoreState(path compaction.Transcript) (agent.Restored, error) {
	b, err := compaction.FindBase(path)
	if err != nil {
		return agent.Restored{}, err
	}
	return agent.Restore(path, b.For(o.provider, o.model), o.counter)
}

// budget is the Budget object (PROTOCOL.md) of a restored session, as the
// server reports it right after resuming it: the provider's count of the
// last request plus estimates since, or the estimate; state idle.
// lastCompaction is the newest capsule on the leaf path.
func (o *offline) budget(st agent.Restored) compaction.Budget {
	c := o.config
	var m tokens.Meter
	st.Input.ResetMeter(&m, o.systemTokens(st.PromptSkills))
	eff, src := m.Effective()
	return compaction.Budget{
		EffectiveTokens: eff, HardLimit: c.HardLimit(), SoftLimit: c.SoftLimit(), ContextWindow: c.ContextWindow,
		MaxOutputTokens: c.MaxOutputTokens, SafetyReserveTokens: c.SafetyReserveTokens, Source: src,
		AutoCompact: st.AutoCompact && c.Auto, Pending: st.Intents.List(), State: compaction.StateIdle, LastCompaction: st.LastCompaction,
	}
}

// runBudget prints a session's Budget as JSON.
func runBudget(_ context.Context, env *cmdEnv, args []string) int {
	defer boundMemory()()
	// budget keeps what it allocates (the index) to the end and allocates
	// little else: a collection would only scan the index. The soft memory
	// limit still bounds the heap.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	fs := subcommandFlags(env, "budget")
	ws, cfg := offlineFlags(fs)
	input := fs.Bool("input", false, "also build the model input the next request would carry, as the server does, and print its size on stderr")
	setUsage(fs, env, "usage: soba-lsp budget [flags] <session.jsonl>\n\nPrints the session's Budget (PROTOCOL.md) as JSON, as the server reports it after resuming the session.")
	if !parseExact(fs, args, 1) {
		return 2
	}
	o, err := openOffline(fs.Arg(0), *ws, *cfg, env.stderr)
	if err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp budget:", err)
		return 2
	}
	s, err := o.openSession(fs.Arg(0), env.stderr)
	if err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp budget:", err)
		return 1
	}
	defer s.Close()
	st, err := o.restoreState(agent.StoreTranscript(s))
	if err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp budget:", err)
		return 1
	}
	b := o.budget(st)
	if *input {
		if err := o.printInput(env.stderr, agent.StoreTranscript(s), b); err != nil {
			fmt.Fprintln(env.stderr, "soba-lsp budget:", err)
			return 1
		}
	}
	enc := json.NewEncoder(env.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(app.WireBudget(b)); err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp budget:", err)
		return 1
	}
	return 0
}

// printInput builds the model input of the next request as the server
// does (R-M1): not at all when the budget is over the hard limit, since the
// next turn compacts first (R-G4); otherwise from the recorded estimates'
// bound, decoding only what is sent.
func (o *offline) printInput(w io.Writer, path compaction.Transcript, b compaction.Budget) error {
	if b.EffectiveTokens > b.HardLimit {
		_, err := fmt.Fprintf(w, "input: not built: %d tokens are over the hard limit of %d, so the next turn compacts first\n", b.EffectiveTokens, b.HardLimit)
		return err
	}
	in, err := compaction.BuildInput(path, compaction.InputOptions{Provider: o.provider, Model: o.model,
		MaxToolResultChars: agent.MaxToolResultChars, MaxTokens: 2 * o.config.ContextWindow})
	if err != nil {
		return err
	}
	chars := len(in.CapsuleText)
	for _, m := range in.Messages {
		chars += len(m.Text)
	}
	_, err = fmt.Fprintf(w, "input: capsule %q, %d messages, %d characters\n", in.CheckpointID, len(in.Messages), chars)
	return err
}

// openSession indexes a session file for an offline command as the server
// resumes it (session.OpenReadOnly: no lock, nothing written, the payloads
// left on disk), printing the scan's problems, and any payload found
// undecodable later, as warnings. A file that is another agent's transcript
// is refused with the import that converts it.
func (o *offline) openSession(file string, warn io.Writer) (*session.Store, error) {
	// Everything resume allocates but its read buffers is the index, live
	// until the command ends: a collection during it finds nothing to free
	// and costs a seventh of a resume from the index file. The soft memory
	// limit (boundMemory) still bounds the heap.
	gc := debug.SetGCPercent(-1)
	s, rep, err := session.OpenReadOnly(file, session.Options{Estimate: entryTokens(o.counter)})
	debug.SetGCPercent(gc)
	if err != nil {
		return nil, err
	}
	if err := foreignTranscript(file, s); err != nil {
		s.Close()
		return nil, err
	}
	printProblems(warn, rep)
	s.OnUndecodable(func(b session.BadLine) {
		fmt.Fprintf(warn, "warning: line %d: %v; left out\n", b.Line, b.Err)
	})
	return s, nil
}

// printProblems writes the scan's problems as warnings.
func printProblems(w io.Writer, rep *session.OpenReport) {
	for _, p := range rep.Problems {
		fmt.Fprintln(w, "warning:", p)
	}
	if more := rep.ProblemCount - len(rep.Problems); more > 0 {
		fmt.Fprintf(w, "warning: … and %d more problems\n", more)
	}
}

// foreignTranscript is an error for a file that is another agent's
// transcript rather than a SOBA session, naming the format and the import
// that converts it; nil for a SOBA session or a file of no known format.
func foreignTranscript(path string, s *session.Store) error {
	if h, ok := s.Header(); ok && h.SessionID != "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	head, _ := io.ReadAll(io.LimitReader(f, 1<<20))
	format, err := importer.Detect(head)
	if err != nil {
		return nil
	}
	return fmt.Errorf("%s holds a transcript of %s, not a SOBA session: convert it first with `soba-lsp import %s`", path, formatName(format), path)
}

// foreignFile is foreignTranscript for a file not scanned yet: the error
// that names another agent's transcript and the import that converts it,
// or nil for a SOBA session, a file of no known format, or one that cannot
// be read (the command's own open then says why). Only the first MiB is
// read, through a non-blocking open of a regular file.
func foreignFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	head, _ := io.ReadAll(io.LimitReader(f, 1<<20))
	first, _, _ := strings.Cut(string(head), "\n")
	var e struct {
		Type    string `json:"type"`
		Session *struct {
			SessionID string `json:"sessionId"`
		} `json:"session"`
	}
	if json.Unmarshal([]byte(first), &e) == nil && e.Type == session.TypeSession && e.Session != nil && e.Session.SessionID != "" {
		return nil
	}
	format, err := importer.Detect(head)
	if err != nil {
		return nil
	}
	return fmt.Errorf("%s holds a transcript of %s, not a SOBA session: convert it first with `soba-lsp import %s`", path, formatName(format), path)
}

func formatName(f importer.Format) string {
	return map[importer.Format]string{importer.FormatPi: "pi", importer.FormatClaude: "Claude Code",
		importer.FormatCodex: "Codex", importer.FormatOpencode: "opencode"}[f]
}
