// Package app is the composition root: it resolves a workspace's
// configuration layers into settings, builds the model clients, the file
// watcher and document tracking, Project Memory and the agent of the current
// session (Workspace), and serves them to a front end (LSPBackend for the
// language server). Nothing imports app but cmd.
package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/soba-agent/soba-lsp/agent"
	"github.com/soba-agent/soba-lsp/agent/provider"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/configschema"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/workspace"
)

// ModelSettings name a model and its limits (PROTOCOL.md `model`): the
// configuration's own type, whose keys configschema describes.
type ModelSettings = workspace.ModelConfig

// Settings are a workspace's resolved configuration.
type Settings struct {
	Model ModelSettings
	// SummaryModel writes capsule summaries; nil means Model.
	SummaryModel *ModelSettings
	// Models are the user's named models (`models`); ModelName and
	// SummaryModelName the names `model` and `summaryModel` picked, "" for
	// the object form.
	Models                      map[string]ModelSettings
	ModelName, SummaryModelName string
	Compaction                  compaction.Config
	Approval                    string
	// MaxToolResultTokens is tools.maxResultTokens (0: a quarter of the hard limit).
	MaxToolResultTokens int
	// SessionDir is absolute.
	SessionDir string
	// MCPServers are the configured MCP servers (mcpServers), sorted by name.
	MCPServers []agent.MCPServer
	// SessionOnStart is "resume" (reopen the newest session at start) or
	// "new" (configschema.SessionOnStart*).
	SessionOnStart string
	// AutoApprovePaths are the user's glob patterns of protected paths
	// that approval auto and an answer for the session may cover (R-W6).
	AutoApprovePaths []string
	// RepositoryIgnored are the repository's keys left out because the
	// workspace is not trusted (R-W5); the budget reports them.
	RepositoryIgnored []string
	// WorkspaceTrusted is set when the repository's configuration applied
	// in full.
	WorkspaceTrusted bool
	// RepositoryWarning is the one warning naming RepositoryIgnored, ""
	// when nothing is ignored; the workspace shows it when it changes.
	RepositoryWarning string
}

// SettingsLoader resolves the configuration layers of the workspace at
// root: the files, then initializationOptions, then
// didChangeConfiguration's settings.soba (nil when absent). An error names
// the key and where it came from.
type SettingsLoader func(root string, initOptions, didChange json.RawMessage) (Settings, []string, error)

// WorkspaceOptions open a Workspace.
type WorkspaceOptions struct {
	Root        string
	InitOptions json.RawMessage
	Load        SettingsLoader
	Notifier    agent.Notifier
	Approver    agent.Approver
	Counter     compaction.Counter
	EntryTokens func(*session.Entry) int
	// MCPServers are MCP servers the front end adds to the configured ones
	// (ACP's session/new); one with a configured server's name replaces it.
	MCPServers []agent.MCPServer
	// SessionID, when set, is the session to resume at open (R-T4); a torn
	// last line is reported as a warning.
	SessionID string
	// NewSession starts a new session at open whatever sessionOnStart says
	// (ACP's session/new). Without it and without SessionID, sessionOnStart
	// decides.
	NewSession bool
	// Editor is the client's file system and terminal (ACP); nil for the
	// disk and a local bash.
	Editor agent.Editor
}

// Workspace is SOBA in one editor workspace: the configuration, the file
// watcher and document tracking, Project Memory, and the agent of the
// current session (replaced by session new / resume).
type Workspace struct {
	opt     WorkspaceOptions
	root    *workspace.Root
	touched *workspace.Touched
	watcher *workspace.Watcher
	memory  *workspace.Memory
	agents  string     // the AGENTS.md instructions of the system prompt
	mcp     *agent.MCP // the MCP servers' tools, connected once at open

	mu       sync.Mutex // guards settings, didChange, agent
	settings Settings
	// modelPick and summaryPick are the session's model picks by name
	// (PickModel), "" for the configuration's.
	modelPick, summaryPick string
	didChange              json.RawMessage
	agent                  *agent.Agent
}

// OpenWorkspace loads the configuration, starts the watcher and a new
// session. With no model server reachable it still starts: budget,
// capsules, sessions and replay work, and a prompt fails naming the endpoint.
func OpenWorkspace(opt WorkspaceOptions) (*Workspace, []string, error) {
	if opt.Root == "" {
		return nil, nil, errors.New("no workspace root: open a folder (rootUri or workspaceFolders)")
	}
	root, err := workspace.NewRoot(opt.Root)
	if err != nil {
		return nil, nil, err
	}
	settings, warnings, err := opt.Load(root.Dir(), opt.InitOptions, nil)
	if err != nil {
		return nil, warnings, err
	}
	if settings.RepositoryWarning != "" {
		warnings = append(warnings, settings.RepositoryWarning)
	}
	if _, err := workspace.EnsureSobaDir(root); err != nil {
		return nil, warnings, err
	}
	// The flight records are receipts too: their directory may not be a
	// link that sends them elsewhere (R-W2).
	if err := root.MkdirAllInside(workspace.SobaDirName + "/flight"); err != nil {
		return nil, warnings, fmt.Errorf("flight records: %w", err)
	}
	w := &Workspace{opt: opt, root: root, settings: settings}
	if w.memory, err = workspace.OpenMemory(root); err != nil {
		return nil, warnings, err
	}
	ig, err := workspace.NewIgnore(root)
	if err != nil { // a hostile .gitignore: open without its patterns (R-W1)
		warnings = append(warnings, err.Error()+"; its patterns are not applied")
	}
	w.touched = workspace.NewTouched(root, ig)
	w.watcher, err = workspace.NewWatcher(root, workspace.WatchOptions{Ignore: ig, OnChange: w.touched.FromWatcher,
		OnWarning: func(m string) { opt.Notifier.Warn(m) }})
	if err != nil {
		// A watcher that cannot start degrades to document events.
		warnings = append(warnings, "file watcher unavailable: "+err.Error()+"; files changed outside the editor are not tracked")
		w.watcher = nil
	}
	var agentsWarnings []string
	w.agents, agentsWarnings = agentsInstructions(root, os.Getenv)
	warnings = append(warnings, agentsWarnings...)
	w.mcp = agent.ConnectMCP(context.Background(), mergeMCP(settings.MCPServers, opt.MCPServers), root.Dir(),
		func(m string) { opt.Notifier.Warn("soba: " + m) })
	a, err := w.firstAgent(settings, &warnings)
	if err != nil {
		w.closeWatcher()
		w.mcp.Close()
		return nil, warnings, err
	}
	w.agent = a
	return w, warnings, nil
}

// firstAgent starts the workspace's first session: the one named by
// opt.SessionID; else, under sessionOnStart "resume", the most recently
// updated session of the session directory; else a new one. A newest
// session that cannot be reopened (damaged, held by another window) is left
// on disk as it is: a warning names it and why, and a new session starts.
func (w *Workspace) firstAgent(s Settings, warnings *[]string) (*agent.Agent, error) {
	id := w.opt.SessionID
	if id == "" {
		if w.opt.NewSession || s.SessionOnStart == configschema.SessionOnStartNew {
			return agent.New(w.agentOptions(s))
		}
		return w.resumeNewest(s, warnings)
	}
	if err := checkSessionID(id); err != nil {
		return nil, err
	}
	a, rep, err := agent.Resume(w.agentOptions(s), filepath.Join(s.SessionDir, id+".jsonl"))
	if err != nil {
		return nil, err
	}
	a, notes, err := w.applyRecordedPicks(a)
	*warnings = append(*warnings, notes...)
	if err != nil {
		return nil, err
	}
	if rep != nil && rep.Torn != nil {
		*warnings = append(*warnings, fmt.Sprintf("session %s: a torn last line (%d bytes at offset %d, from a crash mid-write) was ignored and kept on disk as is",
			id, rep.Torn.Bytes, rep.Torn.Offset))
	}
	return a, nil
}

// resumeNewest reopens the most recently updated session (sessionOnStart
// "resume"), or starts a new one when there is none or it cannot be
// reopened.
func (w *Workspace) resumeNewest(s Settings, warnings *[]string) (*agent.Agent, error) {
	list, err := session.List(s.SessionDir)
	if err != nil {
		*warnings = append(*warnings, fmt.Sprintf("sessionOnStart resume: the sessions could not be listed (%v); started a new session", err))
		return agent.New(w.agentOptions(s))
	}
	if len(list) == 0 {
		return agent.New(w.agentOptions(s))
	}
	newest := list[0]
	a, rep, err := agent.Resume(w.agentOptions(s), newest.Path)
	if err != nil {
		*warnings = append(*warnings, fmt.Sprintf("session %s could not be reopened (%v); it is kept on disk as it is, and a new session started",
			newest.SessionID, err))
		return agent.New(w.agentOptions(s))
	}
	if info, err := a.Info(); err != nil || info.Entries == 0 {
		// Nothing in it is an entry: there is no conversation to go on
		// with, and appending would bury the damage.
		a.Close()
		*warnings = append(*warnings, fmt.Sprintf("session %s could not be reopened (no line of it is an entry); it is kept on disk as it is, and a new session started",
			newest.SessionID))
		return agent.New(w.agentOptions(s))
	}
	*warnings = append(*warnings, resumeWarnings(newest.SessionID, rep)...)
	a, notes, err := w.applyRecordedPicks(a)
	*warnings = append(*warnings, notes...)
	if err != nil {
		*warnings = append(*warnings, err.Error()+"; a new session started")
		return agent.New(w.agentOptions(s))
	}
	return a, nil
}

func checkSessionID(id string) error {
	if id == "" || strings.ContainsAny(id, `/\`) || strings.Contains(id, "..") {
		return fmt.Errorf("bad session id %q", id)
	}
	return nil
}

// joinPrompt joins the non-empty parts of the system prompt SOBA adds to
// its own.
// SystemPrompt is the system prompt text a session in the workspace at root
// carries besides the tools and skills: AGENTS.md, then Project Memory's
// summary. The server and the offline commands (budget, compact) both count
// it, so their figures agree (R-O1); warnings name what was left out.
func SystemPrompt(root *workspace.Root, memory string) (string, []string) {
	agents, warnings := agentsInstructions(root, os.Getenv)
	return joinPrompt(agents, memory), warnings
}

func joinPrompt(parts ...string) string {
	var out []string
	for _, p := range parts {
		if strings.TrimSpace(p) != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "\n\n")
}

// mergeMCP is the configured servers with the front end's added; a front
// end's server replaces a configured one of the same name.
func mergeMCP(configured, extra []agent.MCPServer) []agent.MCPServer {
	out := slices.Clone(configured)
	for _, e := range extra {
		if i := slices.IndexFunc(out, func(s agent.MCPServer) bool { return s.Name == e.Name }); i >= 0 {
			out[i] = e
		} else {
			out = append(out, e)
		}
	}
	return out
}

func (w *Workspace) closeWatcher() {
	if w.watcher != nil {
		w.watcher.Close()
	}
}

// agentOptions turns settings into the agent's options, making the model
// clients. A model that cannot be configured leaves Model nil with the
// reason, so everything but prompts still works.
func (w *Workspace) agentOptions(s Settings) agent.Options {
	o := agent.Options{
		Root: w.root.Dir(), Resolver: w.root, SessionDir: s.SessionDir, FlightDir: filepath.Join(w.root.Dir(), ".soba", "flight"),
		Compaction: s.Compaction, Approval: s.Approval, Approver: w.opt.Approver, Notifier: w.opt.Notifier,
		Counter: w.opt.Counter, EntryTokens: w.opt.EntryTokens, Touched: w.touched, Memory: w.memory,
		SystemPrompt: joinPrompt(w.agents, w.memory.Summary()), ModelName: s.Model.Name, ProviderName: s.Model.Provider, MCP: w.mcp,
		NativeContinuation: s.Model.NativeContinuation, AutoApprovePaths: s.AutoApprovePaths, MaxToolResultTokens: s.MaxToolResultTokens,
		RepositorySettingsIgnored: s.RepositoryIgnored, WorkspaceTrusted: s.WorkspaceTrusted, Editor: w.opt.Editor,
	}
	model, err := newProvider(s.Model)
	if err != nil {
		o.ModelUnavailable = "model: " + err.Error()
	} else {
		o.Model = model
	}
	sm := s.Model
	if s.SummaryModel != nil {
		sm = *s.SummaryModel
	}
	if sp, err := newProvider(sm); err == nil {
		o.Summarizer = &agent.ModelSummarizer{Provider: sp, Model: sm.Name, ContextWindow: sm.ContextWindow}
		// One summary request holds at most half the summary model's window.
		o.SummaryWindowChars = max(8000, sm.ContextWindow*4/2)
	}
	return o
}

func newProvider(m ModelSettings) (provider.Provider, error) {
	return provider.New(provider.Config{Provider: m.Provider, BaseURL: m.BaseURL, Model: m.Name, APIKeyEnv: m.APIKeyEnv,
		ContextWindow: m.ContextWindow, MaxOutputTokens: m.MaxOutputTokens})
}

// ModelFromSettings is the model choice that stands for the configured
// `model` (or `summaryModel`) when it is not one of `models` by name.
const ModelFromSettings = "(settings)"

// ModelChoices are the names of the user's models and the session's current
// picks (ModelFromSettings when the configuration's object form is in use).
func (w *Workspace) ModelChoices() (names []string, model, summary string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.effective()
	names = slices.Sorted(maps.Keys(s.Models))
	model, summary = s.ModelName, s.SummaryModelName
	if model == "" {
		model = ModelFromSettings
	}
	if summary == "" {
		summary = ModelFromSettings
	}
	return names, model, summary
}

// effective are the settings with the session's model picks applied.
func (w *Workspace) effective() Settings {
	s := w.settings
	if name := w.modelPick; name != "" {
		if m, ok := s.Models[name]; ok {
			s.Model, s.ModelName = m, name
		}
	}
	if name := w.summaryPick; name != "" {
		if m, ok := s.Models[name]; ok {
			s.SummaryModel, s.SummaryModelName = &m, name
		}
	}
	return s
}

// PickModel makes the user's model name (ModelFromSettings: the
// configured one) the session's model, or with summary its summary model,
// recording the choice in the transcript; the session is reopened with it
// (same file, leaf and history), so it applies from the next turn. Called
// when no turn runs. A name not among `models` is refused.
func (w *Workspace) PickModel(summary bool, name string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.settings.Models[name]; !ok && name != ModelFromSettings {
		known := "none are defined: add named models to `models` in the user settings (docs/configuration.md)"
		if len(w.settings.Models) > 0 {
			known = "known: " + strings.Join(slices.Sorted(maps.Keys(w.settings.Models)), ", ")
		}
		return fmt.Errorf("%q is not one of the models of the user settings (%s)", name, known)
	}
	if err := w.agent.RecordModelChoice(summary, name); err != nil {
		return err
	}
	pick := name
	if name == ModelFromSettings {
		pick = ""
	}
	if summary {
		w.summaryPick = pick
	} else {
		w.modelPick = pick
	}
	info, err := w.agent.Info()
	if err != nil {
		return err
	}
	w.agent.Close()
	s := w.effective()
	a, _, err := agent.Resume(w.agentOptions(s), info.Path)
	if err != nil {
		if a, err = agent.New(w.agentOptions(s)); err != nil {
			return err
		}
	}
	w.agent = a
	return nil
}

// applyRecordedPicks makes the model picks a resumed session's transcript
// recorded (PickModel's settings entries) the session's again, when they may
// apply: the workspace is trusted, since a session file lies in the
// workspace and until then a repository may not pick one of the user's
// models (R-W5), as it may not by name in .soba/config.json; and the name is
// still among `models`. a was opened with the configured models; when a
// pick changes them, the session is reopened with it (same file, leaf and
// history) and the reopened agent returned; a reopening that fails is an
// error (a is closed then). The notes say which recorded picks did not
// apply and why. Called with w.mu held or before w is shared.
func (w *Workspace) applyRecordedPicks(a *agent.Agent) (*agent.Agent, []string, error) {
	w.modelPick, w.summaryPick = "", ""
	model, summary := a.RecordedModelPicks()
	if model == "" && summary == "" {
		return a, nil, nil
	}
	var notes []string
	info, err := a.Info()
	if err != nil {
		return a, nil, nil
	}
	pick := func(key, name string) string {
		switch {
		case name == "" || name == ModelFromSettings:
			return ""
		case !w.settings.WorkspaceTrusted:
			notes = append(notes, fmt.Sprintf("session %s: its %s %q, picked from the editor, is not applied: the workspace is not trusted, and a session file in it may not choose one of your models (trust the workspace in the editor or with `soba-lsp trust`, or pick the model again)",
				info.SessionID, key, name))
			return ""
		}
		if _, ok := w.settings.Models[name]; !ok {
			notes = append(notes, fmt.Sprintf("session %s: its %s %q, picked from the editor, is no longer one of the models of the user settings; the configured %s is used",
				info.SessionID, key, name, key))
			return ""
		}
		return name
	}
	w.modelPick, w.summaryPick = pick("model", model), pick("summaryModel", summary)
	if (w.modelPick == "" || w.modelPick == w.settings.ModelName) && (w.summaryPick == "" || w.summaryPick == w.settings.SummaryModelName) {
		return a, notes, nil // the configured models already are the picks
	}
	a.Close()
	reopened, _, err := agent.Resume(w.agentOptions(w.effective()), info.Path)
	if err != nil {
		w.modelPick, w.summaryPick = "", ""
		return nil, notes, fmt.Errorf("session %s: reopening it with its picked models: %w", info.SessionID, err)
	}
	return reopened, notes, nil
}

// Agent is the current session's agent.
func (w *Workspace) Agent() *agent.Agent {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.agent
}

// Root is the workspace root.
func (w *Workspace) Root() *workspace.Root { return w.root }

// Touched tracks documents and files.
func (w *Workspace) Touched() *workspace.Touched { return w.touched }

// Configure applies didChangeConfiguration settings: the new layer is
// validated whole; on error the previous configuration stays in force.
// When the session is idle it is reopened at once with the new settings
// (same session file, leaf and history); while a turn or compaction runs,
// the new settings apply from the next session or settings change.
func (w *Workspace) Configure(didChange json.RawMessage) ([]string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, warnings, err := w.opt.Load(w.root.Dir(), w.opt.InitOptions, didChange)
	if err != nil {
		return warnings, err
	}
	if s.RepositoryWarning != "" && s.RepositoryWarning != w.settings.RepositoryWarning {
		warnings = append(warnings, s.RepositoryWarning)
	}
	w.didChange, w.settings = didChange, s
	if w.agent.Busy() {
		return append(warnings, "settings changed while the agent is working; they apply to the next session"), nil
	}
	info, err := w.agent.Info()
	if err != nil {
		return warnings, err
	}
	w.agent.Close()
	a, _, err := agent.Resume(w.agentOptions(w.effective()), info.Path)
	if err != nil {
		// The old session could not be reopened with the new settings:
		// start a new one so the workspace keeps working.
		if a, err = agent.New(w.agentOptions(w.effective())); err != nil {
			return warnings, err
		}
	}
	w.agent = a
	return warnings, nil
}

// NewSession closes the current session and starts a new one with the
// current settings.
func (w *Workspace) NewSession() (agent.SessionInfo, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	// A new session starts with the configured models: a pick was the
	// other session's.
	w.modelPick, w.summaryPick = "", ""
	a, err := agent.New(w.agentOptions(w.settings))
	if err != nil {
		return agent.SessionInfo{}, err
	}
	old := w.agent
	w.agent = a
	old.Close()
	return a.Info()
}

// ResumeSession reopens a session of this workspace by id (R-T4).
func (w *Workspace) ResumeSession(id string) (agent.SessionInfo, *session.OpenReport, error) {
	if err := checkSessionID(id); err != nil {
		return agent.SessionInfo{}, nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	path := filepath.Join(w.settings.SessionDir, id+".jsonl")
	if cur, _ := w.agent.Info(); cur.SessionID == id {
		return cur, nil, nil
	}
	// The current session is closed first: its lock must not block a
	// resume of the same file from another window's record.
	a, rep, err := agent.Resume(w.agentOptions(w.settings), path)
	if err != nil {
		return agent.SessionInfo{}, rep, err
	}
	old := w.agent
	w.agent = a
	old.Close()
	a, notes, err := w.applyRecordedPicks(a)
	for _, n := range notes {
		w.opt.Notifier.Warn(n)
	}
	if err != nil {
		// The session stays closed; a new one keeps the workspace working.
		if a, _ = agent.New(w.agentOptions(w.settings)); a != nil {
			w.agent = a
		}
		return agent.SessionInfo{}, rep, err
	}
	w.agent = a
	info, err := a.Info()
	return info, rep, err
}

// Sessions lists the workspace's sessions.
func (w *Workspace) Sessions() ([]session.Info, error) {
	w.mu.Lock()
	dir := w.settings.SessionDir
	w.mu.Unlock()
	return session.List(dir)
}

// Document events from the editor (R-C2).
func (w *Workspace) DidOpen(uri string)   { w.doc(uri, w.touched.Opened) }
func (w *Workspace) DidChange(uri string) { w.doc(uri, w.touched.Changed) }
func (w *Workspace) DidSave(uri string)   { w.doc(uri, w.touched.Saved) }
func (w *Workspace) DidClose(uri string)  { w.doc(uri, w.touched.Closed) }

func (w *Workspace) doc(uri string, f func(string)) {
	if rel, err := w.root.URIToRel(uri); err == nil {
		f(rel)
	}
}

// Close ends the session and the watcher; every appended entry is on disk.
func (w *Workspace) Close() error {
	w.mu.Lock()
	a := w.agent
	w.mu.Unlock()
	err := a.Close()
	w.closeWatcher()
	return errors.Join(err, w.mcp.Close())
}
