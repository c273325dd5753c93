package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/soba-agent/soba-lsp/internal/id"

	"github.com/sourcegraph/conc"
	"github.com/sourcegraph/conc/panics"

	"github.com/soba-agent/soba-lsp/agent/provider"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/compaction/tokens"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/workspace"
)

// Options configure an Agent.
type Options struct {
	// Root is the workspace root directory (absolute).
	Root string
	// Resolver is the workspace root's door (R-W1): tool paths are confined
	// to Root and every tool's file access goes through it.
	Resolver *workspace.Root
	// SessionDir is where session files go (absolute).
	SessionDir string
	// FlightDir is where flight records go (absolute).
	FlightDir string

	// Model answers the turns; nil means no model is configured, and a
	// prompt fails with a clear error while everything else works.
	Model provider.Provider
	// ModelName, ProviderName name the model for requests and for native
	// continuation compatibility (R-M1).
	ModelName, ProviderName string
	// NativeContinuation asks Model for its native compaction at every
	// compaction, beside the portable capsule, when Model has one
	// (model.nativeContinuation, SPEC §11).
	NativeContinuation bool
	// ContextWindow and MaxOutputTokens of the model (R-S3) are in
	// Compaction.
	Compaction compaction.Config
	// Summarizer writes capsule summaries; nil builds deterministic capsules.
	Summarizer compaction.Summarizer
	// SummaryWindowChars bounds one summary request (the summary model's
	// window in characters).
	SummaryWindowChars int

	// MaxToolResultTokens is the most tokens one tool result may take
	// (tools.maxResultTokens); 0 means a quarter of the hard limit.
	MaxToolResultTokens int

	// Approval is "ask" or "auto" (tools.approval).
	Approval string
	// AutoApprovePaths are the user's glob patterns of protected paths
	// (R-W6) that approval auto and an answer for the session may cover.
	AutoApprovePaths []string
	// RepositorySettingsIgnored are the repository's configuration keys the
	// loader left out (R-W5); the budget reports them.
	RepositorySettingsIgnored []string
	// WorkspaceTrusted is set when the user trusts the workspace (R-W5):
	// its repository configuration applies in full, so a session file in
	// it may restore what that configuration could set (a recorded
	// approval "auto").
	WorkspaceTrusted bool
	Approver         Approver
	// MCP are the workspace's MCP tools (ConnectMCP); nil for none. The
	// agent does not close it.
	MCP      *MCP
	Notifier Notifier

	// Counter counts tokens; EntryTokens estimates one entry for the store.
	Counter     compaction.Counter
	EntryTokens func(*session.Entry) int

	// SystemPrompt is prepended to the generated system prompt (Project
	// Memory summary, user instructions).
	SystemPrompt string
	// ModelUnavailable explains why Model is nil, for the prompt error.
	ModelUnavailable string
	// RecordedResults, when set, answers tool calls from a recording
	// instead of running them (replay): a call id with no recorded result
	// fails without running anything.
	RecordedResults map[string]session.ToolResult
	// Memory is Project Memory; an explicit compact's validated, full
	// capsule is mirrored there (R-C4). nil disables mirroring.
	Memory interface {
		Mirror(checkpointID, title string, created time.Time, markdown []byte) (string, error)
	}
	// Touched gives the files the editor and the file watcher saw read or
	// modified in the session (R-C2); nil means none.
	Touched interface {
		Snapshot() (read, modified []string)
	}
	// Editor is the editor's file system and terminal when its client
	// offers them (ACP); nil means the disk and a local bash.
	Editor Editor

	Now func() time.Time
}

// Agent runs one workspace's session: prompts, turns, compactions and the
// session commands. All exported methods are safe for concurrent use; the
// package doc describes the state machine.
type Agent struct {
	opt     Options
	tools   *toolEnv
	barrier *compaction.Barrier
	// runCall runs one tool call and records its result: runLiveTool, or
	// the recording's runner in replay (chosen once, at New).
	runCall func(ctx context.Context, turnID string, call session.ToolCall)
	// approval is the session's approval policy ("ask" or "auto"): the
	// configuration's, or the one the user set for the session
	// (SetApproval). Atomic: tools read it outside the state's lock.
	approval atomic.Value

	// mu guards st and every compactWaiter: each read or change of the
	// session's state runs under it (do). It is never held while the model,
	// a tool, a summary or the approver is awaited: those run on work
	// goroutines that take it for each step.
	//
	// One mutex, as gopls guards its serverState with stateMu, rather than
	// an owner goroutine running closures: the order is the same (one change
	// at a time), and there is no channel to close, no drain of changes sent
	// after Close, and no goroutine that outlives the session.
	mu sync.Mutex
	st *state

	// work runs the turns, the compactions between turns, and summary
	// requests that outlive their deadline; Close waits for it.
	work      conc.WaitGroup
	closeOnce sync.Once
}

// state is the session's mutable state, guarded by Agent.mu.
type state struct {
	store     *session.Store
	flight    *compaction.FlightFile
	sessionID string
	// cachedTokens is what the provider's last usage report said it read
	// from its prompt cache.
	cachedTokens int

	path   []session.Meta // the leaf path, refreshed after each change
	latest int            // index of the newest capsule on path, -1 for none
	// undecodable are entries found on resume whose payload does not
	// decode; they are left out of path (and so of the model input).
	undecodable map[string]bool
	base        compaction.Base
	// decoded keeps the model input's recently decoded entries across
	// requests (a turn's requests differ by a few entries).
	decoded *compaction.EntryCache

	// budget figures (R-O1): the meter holds the raw estimates of the model
	// input and the provider's last report, and applies the calibration.
	meter        tokens.Meter
	systemTokens int
	// system is the system prompt systemTokens counts: the last one sent,
	// or the one the next request will carry (setSystemPrompt).
	system string

	autoCompact bool
	intents     compaction.Intents
	lastResult  *compaction.CompactionResult
	// declined is the last soft compaction the exact check declined since
	// the model input last changed shape (recomputeInput clears it).
	declined *compaction.Declined

	// phase is what the session does now; only transition changes it.
	phase phase
	// closing is set when Close begins: the running work drains through
	// its phases back to idle, and nothing new starts (transition refuses).
	// It is a gate, not a phase: while it drains, a turn is still in its
	// turn's phases.
	closing bool
	// turn is the running turn, set in the turn's phases (inTurn).
	turn *turnState
	// compaction is the running compaction or capsule summary, set in the
	// compacting phases.
	compaction *runningCompaction
	// queue holds prompts that arrived while the session was not idle, in
	// order, each with its own turn id.
	queue []queuedPrompt
	// waiters are the soba.compact requests waiting for a result, keyed by
	// the operation id of the compaction that answers them (unplanned
	// before one is planned).
	waiters map[string][]*compactWaiter
	// instructions are the unplanned explicit compact's focus.
	instructions string

	// appended is the capsule the last compaction appended, for the
	// Project Memory rule.
	appended *session.Capsule

	activeSkills []string
	// modelPick and summaryModelPick are the newest model picks the path
	// recorded (Restored.Model, Restored.SummaryModel) or this session made.
	modelPick, summaryModelPick string
	// allowSession holds the approval scopes allowed for the session
	// (approvalScope: a kind of tool or an MCP server).
	allowSession map[string]bool
}

type turnState struct {
	id            string
	cancel        context.CancelFunc
	softAttempted bool
	overflowTried bool
	// usage sums what the provider reported for the turn's requests.
	usage *TurnUsage
}

type queuedPrompt struct {
	turnID, text string
}

// ErrClosed is returned by methods called after Close.
var ErrClosed = errors.New("the agent is closed")

// New starts an agent on a new session in opt.SessionDir.
func New(opt Options) (*Agent, error) {
	a, err := newAgent(opt)
	if err != nil {
		return nil, err
	}
	st, err := a.openNew()
	if err != nil {
		return nil, err
	}
	a.st = st
	return a, nil
}

// Resume starts an agent on an existing session file (R-T4).
func Resume(opt Options, path string) (*Agent, *session.OpenReport, error) {
	a, err := newAgent(opt)
	if err != nil {
		return nil, nil, err
	}
	st, rep, err := a.openExisting(path)
	if err != nil {
		return nil, rep, err
	}
	a.st = st
	return a, rep, nil
}

func newAgent(opt Options) (*Agent, error) {
	if opt.Root == "" || opt.SessionDir == "" {
		return nil, errors.New("agent: Root and SessionDir are required")
	}
	if err := opt.Compaction.Validate(); err != nil {
		return nil, err
	}
	if opt.Counter == nil {
		return nil, errors.New("agent: Counter is required")
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.FlightDir == "" {
		opt.FlightDir = filepath.Join(filepath.Dir(opt.SessionDir), "flight")
	}
	if opt.Notifier == nil {
		opt.Notifier = nopNotifier{}
	}
	a := &Agent{
		opt: opt,
		tools: &toolEnv{root: opt.Resolver, dir: opt.Root, skills: &skillSet{root: opt.Resolver},
			protected: protectedPaths(opt.Root, opt.SessionDir, opt.FlightDir), mcp: opt.MCP,
			counter: opt.Counter, share: resultShare(opt.Compaction, opt.MaxToolResultTokens), editor: opt.Editor},
	}
	a.runCall = a.runLiveTool
	if opt.RecordedResults != nil {
		a.runCall = recordedTools{a: a, results: opt.RecordedResults}.run
	}
	a.barrier = &compaction.Barrier{Counter: opt.Counter, Summarizer: opt.Summarizer, SummaryWindowChars: opt.SummaryWindowChars,
		SummaryMaxOutputTokens: 2048, Now: opt.Now, Work: &a.work}
	if c, ok := opt.Model.(provider.Compactor); ok && opt.NativeContinuation {
		a.barrier.Native = nativeCompactor{a: a, c: c}
	}
	return a, nil
}

func (a *Agent) storeOptions() session.Options {
	return session.Options{Estimate: a.opt.EntryTokens, Now: a.opt.Now}
}

func (a *Agent) openNew() (*state, error) {
	sid := id.Session()
	s, err := session.Create(a.opt.SessionDir, session.SessionHeader{Version: 1, SessionID: sid, Workspace: a.opt.Root}, a.storeOptions())
	if err != nil {
		return nil, err
	}
	return a.initState(s, sid, nil)
}

func (a *Agent) openExisting(path string) (*state, *session.OpenReport, error) {
	s, rep, err := session.Open(path, a.storeOptions())
	if err != nil {
		return nil, rep, err
	}
	id := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	// An entry whose header indexes but whose payload does not decode would
	// fail every later turn (R-T3). The model input's entries (from the
	// newest capsule on) are decoded now when they fit the hard limit, as
	// the first request needs them anyway: those that fail are reported
	// with their line and left out of the model input. A longer tail is
	// compacted before any request is built, so it is not decoded here; an
	// entry found undecodable later (by the barrier or the model input) is
	// read as its header alone and reported once.
	lp := s.Path()
	skip := map[string]bool{}
	if tail := lp[max(latestCapsuleIndex(lp), 0):]; metaTokens(tail) <= a.opt.Compaction.HardLimit() {
		for _, m := range tail {
			if !isModelType(m.Type) && m.Type != session.TypeCapsule && m.Type != session.TypeCapsuleLoad {
				continue
			}
			_, b, err := s.LoadLenientMeta(m)
			if err != nil {
				s.Close()
				return nil, rep, err
			}
			if b != nil {
				rep.BadLines = append(rep.BadLines, session.BadLine{Line: b.Line, Offset: b.Offset,
					Err: fmt.Errorf("%v; left out of the model input", b.Err)})
				rep.BadLineCount++
				skip[m.ID] = true
			}
		}
	}
	s.OnUndecodable(func(b session.BadLine) {
		a.opt.Notifier.Warn(fmt.Sprintf("soba: session %s: line %d: %v; it is left out of the model input and the capsule", path, b.Line, b.Err))
	})
	st, err := a.initState(s, id, skip)
	if err != nil {
		s.Close()
		return nil, rep, err
	}
	return st, rep, nil
}

// inputCacheEntries bounds the decoded entries kept for the model input.
const inputCacheEntries = 4096

// inputBound is the recorded estimate past which the model input is not
// built at all: twice the context window, so that estimates above the
// provider's own count never refuse an input it would take, while an input
// that could never be sent is refused from its headers.
func (a *Agent) inputBound() int {
	if w := a.opt.Compaction.ContextWindow; w > 0 {
		return 2 * w
	}
	return 0
}

// metaTokens sums the token estimates of metas' model entries.
func metaTokens(metas []session.Meta) int {
	n := 0
	for _, m := range metas {
		if isModelType(m.Type) {
			n += int(m.Tokens)
		}
	}
	return n
}

// OpenFlight opens the flight record file of session id in dir for
// appending, as the server does for every session (the offline compact
// too).
func OpenFlight(dir, id string) (*compaction.FlightFile, error) {
	flight := filepath.Join(dir, id+".jsonl")
	// A flight file committed as a link (outside, to a device) would have
	// the flight records appended there: only a regular file or none is
	// opened (R-W1, R-W2).
	if fi, err := os.Lstat(flight); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("flight records %s: not a regular file (%s); SOBA appends only to its own regular files", flight, fi.Mode().Type())
	}
	return compaction.OpenFlightFile(flight)
}

func (a *Agent) initState(s *session.Store, id string, undecodable map[string]bool) (*state, error) {
	ff, err := OpenFlight(a.opt.FlightDir, id)
	if err != nil {
		s.Close()
		return nil, err
	}
	st := &state{store: s, flight: ff, sessionID: id, autoCompact: true, phase: phaseIdle,
		allowSession: map[string]bool{}, undecodable: undecodable,
		decoded: compaction.NewEntryCache(inputCacheEntries, a.inputBound())}
	if err := a.restore(st); err != nil {
		s.Close()
		ff.Close()
		return nil, err
	}
	return st, nil
}

// restore rebuilds what resume restores (R-T4): leaf path, the newest
// capsule, settings (auto-compact), pending intents and active skills.
func (a *Agent) restore(st *state) error {
	a.refreshPath(st)
	r, err := Restore(newPathView(st.store, st.path, 0, st.latest), st.base, a.opt.Counter)
	if err != nil {
		return err
	}
	st.autoCompact, st.intents, st.activeSkills, st.lastResult = r.AutoCompact, r.Intents, r.ActiveSkills, r.LastCompaction
	st.modelPick, st.summaryModelPick = r.Model, r.SummaryModel
	// A session's recorded approval policy is restored when it asks more
	// than the configuration, or when the workspace is trusted: a session
	// file lies in the workspace, where an untrusted repository could have
	// put one that turns approvals off (R-W5); a trusted one could turn
	// them off in its configuration anyway.
	a.approval.Store(a.opt.Approval)
	if r.Approval == ApprovalAsk || (r.Approval == ApprovalAuto && a.opt.WorkspaceTrusted) {
		a.approval.Store(r.Approval)
	}
	a.setSystemPrompt(st, a.systemPrompt(r.PromptSkills))
	r.Input.ResetMeter(&st.meter, st.systemTokens)
	return nil
}

// setSystemPrompt makes system the system prompt the budget counts. It
// changes with the base (promptSkills) and when a skill is added, removed
// or edited during the session (they are read from the workspace).
func (a *Agent) setSystemPrompt(st *state, system string) {
	if system == st.system && st.systemTokens > 0 {
		return
	}
	st.system = system
	st.systemTokens = a.opt.Counter.Count(system) + a.toolSchemaTokens()
}

// systemTokens estimates the system prompt carrying the bodies of skills
// (promptSkills) and the tool schemas, as a request carries them.
func (a *Agent) systemTokens(skills []string) int {
	return a.opt.Counter.Count(a.systemPrompt(skills)) + a.toolSchemaTokens()
}

// do runs f under the state's mutex. A panic in f is reported and does not
// end the session. After Close it runs nothing and answers ErrClosed.
func (a *Agent) do(f func(*state)) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.st.phase == phaseClosed {
		return ErrClosed
	}
	if r := panics.Try(func() { f(a.st) }); r != nil {
		a.opt.Notifier.Warn("soba: internal error: " + r.String())
	}
	return nil
}

// Close cancels running work, waits for it, and closes the session file;
// every appended entry is already on disk (R-T5). Waiting compact requests
// answer skipped. The session file's lock is released when Close returns.
func (a *Agent) Close() error {
	a.closeOnce.Do(func() {
		_ = a.do(func(st *state) {
			st.closing = true
			if st.turn != nil {
				st.turn.cancel()
			}
			if st.compaction != nil {
				st.compaction.cancel()
			}
			for op := range st.waiters {
				st.resolveWaiters(op, compaction.Skipped("", compaction.TriggerUser, "the session was closed", 0))
			}
		})
		// The cancelled work ends through its phases back to idle.
		if r := a.work.WaitAndRecover(); r != nil {
			a.opt.Notifier.Warn("soba: internal error: " + r.String())
		}
		_ = a.do(func(st *state) {
			if st.phase != phaseIdle {
				// A bug left a phase behind: its step back to idle is legal.
				a.opt.Notifier.Warn(fmt.Sprintf("soba: internal error: the session closed while %s", st.phase))
				illegalTransitions.Add(1)
				_ = st.transition(phaseIdle)
			}
			a.step(st, phaseClosed)
			st.store.Close()
			st.flight.Close()
		})
	})
	return nil
}

// refreshPath re-reads the leaf path and the model input's base after a
// change other than an append at the leaf.
func (a *Agent) refreshPath(st *state) {
	st.path = st.leafPath()
	st.latest = latestCapsuleIndex(st.path)
	b, err := compaction.FindBase(newPathView(st.store, st.path, 0, st.latest))
	if err != nil {
		b = compaction.Base{CapsuleIndex: -1}
	}
	// The budget measures what the active provider and model receive: a
	// native continuation of theirs, else the portable capsule (R-N2).
	st.base = b.For(a.opt.ProviderName, a.opt.ModelName)
}

// recomputeInput re-measures the model input from the base (O(tail)):
// after resume, a compaction, a rewind or a capsule load. Provider usage
// counts only when its response lies after the newest capsule, so a
// compaction never re-triggers itself on the stale figures of the input it
// replaced.
func (a *Agent) recomputeInput(st *state) error {
	st.declined = nil // the model input changed shape: soft triggers judge afresh
	view := newPathView(st.store, st.path, 0, st.latest)
	// A new base brings its capsule's skills into the system prompt; a
	// rewind drops the skills activated after its target.
	st.activeSkills = activeSkillsOn(view, st.base)
	a.setSystemPrompt(st, a.systemPrompt(promptSkills(st.base)))
	m, err := MeasureInput(view, st.base, a.opt.Counter)
	if err != nil {
		return err
	}
	m.ResetMeter(&st.meter, st.systemTokens)
	return nil
}

func isModelType(t string) bool {
	return t == session.TypeUser || t == session.TypeAssistant || t == session.TypeToolResult
}

// appendEntry appends at the leaf and keeps the path, base and budget in
// step (O(1) per entry).
func (a *Agent) appendEntry(st *state, e session.Entry) (session.Entry, error) {
	e, err := st.store.Append(e)
	if err != nil {
		return e, err
	}
	st.path = st.leafPath()
	if isModelType(e.Type) {
		st.meter.Add(e.Tokens)
	}
	if e.Type == session.TypeCapsule || e.Type == session.TypeCapsuleLoad || (e.Type == session.TypeSettings && e.Settings != nil && e.Settings.RewindTo != "") {
		a.refreshPath(st)
		return e, a.recomputeInput(st)
	}
	return e, nil
}

// effective is the effective input and its source (R-O1): the provider's
// count for the last request on the path plus estimates since, or the
// calibrated estimate.
func (st *state) effective() (int, string) { return st.meter.Effective() }

func (a *Agent) budgetOf(st *state) compaction.Budget {
	eff, src := st.effective()
	c := a.opt.Compaction
	pending := st.intents.List()
	if pending == nil {
		pending = []string{}
	}
	return compaction.Budget{
		EffectiveTokens: eff, HardLimit: c.HardLimit(), SoftLimit: c.SoftLimit(), ContextWindow: c.ContextWindow,
		MaxOutputTokens: c.MaxOutputTokens, SafetyReserveTokens: c.SafetyReserveTokens, Source: src,
		AutoCompact: st.autoCompact && c.Auto, Pending: pending, State: st.phase.wire(), LastCompaction: st.lastResult,
		CachedTokens: st.cachedTokens, RepositorySettingsIgnored: a.opt.RepositorySettingsIgnored,
	}
}

func (a *Agent) publishBudget(st *state) { a.opt.Notifier.Budget(a.budgetOf(st)) }

// Budget returns the current budget (PROTOCOL.md Budget).
func (a *Agent) Budget() (compaction.Budget, error) {
	var b compaction.Budget
	err := a.do(func(st *state) { b = a.budgetOf(st) })
	return b, err
}

// SetAutoCompact switches soft triggers on or off for the session (R-G10);
// the setting is recorded so resume restores it.
func (a *Agent) SetAutoCompact(enabled bool) (compaction.Budget, error) {
	var (
		b   compaction.Budget
		err error
	)
	if e := a.do(func(st *state) {
		v := enabled
		if _, err = a.appendEntry(st, session.Entry{Type: session.TypeSettings, Settings: &session.Settings{AutoCompact: &v}}); err != nil {
			return
		}
		st.autoCompact = enabled
		b = a.budgetOf(st)
		a.publishBudget(st)
	}); e != nil {
		return b, e
	}
	return b, err
}

// Approval policies (tools.approval).
const (
	ApprovalAsk  = "ask"
	ApprovalAuto = "auto"
)

// Approval is the session's approval policy.
func (a *Agent) Approval() string {
	if v, _ := a.approval.Load().(string); v != "" {
		return v
	}
	return a.opt.Approval
}

// SetApproval sets the session's approval policy, "ask" or "auto": the
// user's choice from the editor (ACP's config options), for this session
// only. It is recorded as a settings entry, so replay and resume see it.
func (a *Agent) SetApproval(mode string) error {
	if mode != ApprovalAsk && mode != ApprovalAuto {
		return fmt.Errorf("approval must be %q or %q, not %q", ApprovalAsk, ApprovalAuto, mode)
	}
	var err error
	if e := a.do(func(st *state) {
		if _, err = a.appendEntry(st, session.Entry{Type: session.TypeSettings, Settings: &session.Settings{Approval: mode}}); err != nil {
			return
		}
		a.approval.Store(mode)
	}); e != nil {
		return e
	}
	return err
}

// RecordModelChoice records the user's pick of the session's model (or,
// with summary, the summary model) by name, from the editor (ACP's config
// options), as a settings entry, so replay and resume see it. The caller
// makes the model; the agent only records the choice.
func (a *Agent) RecordModelChoice(summary bool, name string) error {
	set := &session.Settings{Model: name}
	if summary {
		set = &session.Settings{SummaryModel: name}
	}
	var err error
	if e := a.do(func(st *state) {
		if _, err = a.appendEntry(st, session.Entry{Type: session.TypeSettings, Settings: set}); err != nil {
			return
		}
		if summary {
			st.summaryModelPick = name
		} else {
			st.modelPick = name
		}
	}); e != nil {
		return e
	}
	return err
}

// RecordedModelPicks are the newest model and summary-model picks on the
// session's path (RecordModelChoice, or restored from the transcript), ""
// for none. The agent does not apply them: a session file lies in the
// workspace, so whether a recorded pick may choose one of the user's
// models is the caller's decision (R-W5).
func (a *Agent) RecordedModelPicks() (model, summary string) {
	_ = a.do(func(st *state) { model, summary = st.modelPick, st.summaryModelPick })
	return model, summary
}

// Busy reports whether a turn, a compaction or a queued prompt is pending.
func (a *Agent) Busy() bool {
	busy := false
	_ = a.do(func(st *state) { busy = st.phase != phaseIdle || len(st.queue) > 0 })
	return busy
}

// SessionInfo describes the session.
type SessionInfo struct {
	SessionID, Path, FlightPath, LeafID string
	Entries                             int
}

// Info returns the session's identity and size.
func (a *Agent) Info() (SessionInfo, error) {
	var info SessionInfo
	err := a.do(func(st *state) {
		info = SessionInfo{SessionID: st.sessionID, Path: st.store.FilePath(), FlightPath: st.flight.Path(), LeafID: st.store.Leaf(), Entries: st.store.Len()}
	})
	return info, err
}

// Rewind moves the leaf to an earlier entry (R-T4); nothing is deleted and
// later entries branch from there. It is refused while a turn runs.
func (a *Agent) Rewind(entryID string) (string, error) {
	var (
		leaf string
		err  error
	)
	if e := a.do(func(st *state) {
		if st.phase.inTurn() {
			err = errors.New("cannot rewind while a turn is running; cancel it first")
			return
		}
		if _, ok := st.store.Meta(entryID); !ok {
			// The session package's wording names itself; the user needs
			// to know where valid ids come from.
			err = fmt.Errorf("no entry %q in this session; soba.session.history lists the points to rewind to", entryID)
			return
		}
		if _, err = st.store.Rewind(entryID); err != nil {
			return
		}
		a.refreshPath(st)
		err = a.recomputeInput(st)
		leaf = st.store.Leaf()
		a.publishBudget(st)
	}); e != nil {
		return "", e
	}
	return leaf, err
}

// extras are the artifacts known outside the transcript: the editor's
// documents and the watcher (R-C2), and the skills active now.
func (a *Agent) extras(st *state) compaction.Extras {
	x := compaction.Extras{ActiveSkills: append([]string(nil), st.activeSkills...)}
	if a.opt.Touched != nil {
		x.FilesRead, x.FilesModified = a.opt.Touched.Snapshot()
	}
	return x
}

// appendUnique appends x unless xs already holds it.
func appendUnique(xs []string, x string) []string {
	if slices.Contains(xs, x) {
		return xs
	}
	return append(xs, x)
}

type nopNotifier struct{}

func (nopNotifier) Event(Event)                {}
func (nopNotifier) Budget(compaction.Budget)   {}
func (nopNotifier) Compaction(CompactionEvent) {}
func (nopNotifier) Log(string)                 {}
func (nopNotifier) Warn(string)                {}

// leafPath is the store's leaf path without the undecodable entries. It is
// the store's O(1) snapshot unless the session has such entries.
func (st *state) leafPath() []session.Meta {
	p := st.store.Path()
	if len(st.undecodable) == 0 {
		return p
	}
	out := make([]session.Meta, 0, len(p))
	for _, m := range p {
		if !st.undecodable[m.ID] {
			out = append(out, m)
		}
	}
	return out
}
