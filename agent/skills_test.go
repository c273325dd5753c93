package agent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soba-agent/soba-lsp/agent/provider"
	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/workspace"
)

func writeSkill(t *testing.T, root, name, desc, body string) {
	t.Helper()
	dir := filepath.Join(root, ".soba", "skills", name)
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: "+name+"\ndescription: "+desc+"\n---\n"+body+"\n"), 0o644)
}

// carriesInToolResult reports whether r carries text in a tool result.
func carriesInToolResult(r providertest.Received, text string) bool {
	return slices.ContainsFunc(r.Messages, func(m provider.Message) bool {
		return m.Role == provider.RoleTool && strings.Contains(m.Text, text)
	})
}

// Skills are listed in the system prompt; an activated skill's text is part
// of every later model input — in its activate_skill result until the next
// capsule lists it (R-C1), in the system prompt from then on — so the system
// prompt of the requests between two compactions never changes.
func TestSkillsListedActivatedAndInCapsule_RC1(t *testing.T) {
	f := newFixture(t, func(o *Options) { smallWindow(o); o.Compaction.Auto = false },
		providertest.Call("s1", "activate_skill", map[string]any{"name": "go-testing"}),
		providertest.Text("activated "+bigText),
		providertest.Text("later "+bigText), providertest.Text("later "+bigText), providertest.Text("later "+bigText),
		providertest.Call("s2", "activate_skill", map[string]any{"name": "../escape"}),
		providertest.Text("done"))
	const body = "Always run go test with -race."
	writeSkill(t, f.dir, "go-testing", "how this project runs its Go tests", body)
	f.prompt(t, "use the go testing skill "+bigText)
	reqs := f.model.Requests()
	if !strings.Contains(reqs[0].System, "go-testing: how this project runs its Go tests") {
		t.Fatalf("skill not listed in the system prompt:\n%s", reqs[0].System)
	}
	for i := 0; i < 3; i++ {
		f.prompt(t, "more "+bigText)
	}
	before := f.model.Requests()
	for k, r := range before {
		if r.System != reqs[0].System {
			t.Fatalf("request %d before any capsule changed the system prompt:\n%s", k, r.System)
		}
		if got := carriesInToolResult(r, body); got != (k > 0) {
			t.Fatalf("request %d carries the skill's body in its tool result: %v, want %v", k, got, k > 0)
		}
	}
	res, err := f.agent.Compact(context.Background(), "")
	if err != nil || res.Outcome != compaction.OutcomeCompleted {
		t.Fatalf("compact %+v %v", res, err)
	}
	if st := f.capsules(t)[0].State; !slices.Equal(st.ActiveSkills, []string{"go-testing"}) {
		t.Fatalf("capsule active skills %v", st.ActiveSkills)
	}
	end := f.prompt(t, "try a bad skill")
	if end.Outcome != "completed" {
		t.Fatalf("turn %s", end.Outcome)
	}
	after := f.model.Requests()[len(before):]
	if len(after) == 0 {
		t.Fatal("no request after the compaction")
	}
	for k, r := range after {
		if !strings.Contains(r.System, "Active skill go-testing:\n"+body) {
			t.Fatalf("request %d after the capsule lacks the active skill in its system prompt:\n%s", k, r.System)
		}
	}
	last := f.entries(t)
	found := false
	for _, e := range last {
		if e.ToolResult != nil && e.ToolResult.ToolCallID == "s2" {
			found = !e.ToolResult.OK && strings.Contains(e.ToolResult.Content, "bad skill name")
		}
	}
	if !found {
		t.Fatal("a skill name with a path was not refused")
	}
}

// A skill longer than the model input's limit on tool results reaches the
// model whole in its activate_skill result: it is the only place its body
// is until the next capsule.
func TestLongSkillIsWholeInItsToolResult(t *testing.T) {
	f := newFixture(t, nil,
		providertest.Call("s1", "activate_skill", map[string]any{"name": "long"}),
		providertest.Text("activated"))
	body := strings.Repeat("Check every error; ", maxToolResultChars/10) + "the end of the skill."
	writeSkill(t, f.dir, "long", "a long skill", body)
	f.prompt(t, "use the long skill")
	reqs := f.model.Requests()
	if len(body) <= maxToolResultChars || !carriesInToolResult(reqs[len(reqs)-1], body) {
		t.Fatalf("the %d-character skill is not whole in its tool result", len(body))
	}
}

// A file changed on disk by someone else during the session is listed as
// modified in the capsule (PROTOCOL.md "Fixed details", R-C2): the real
// watcher feeds the agent's artifacts.
func TestFileChangedOnDiskIsModified_RC2(t *testing.T) {
	dir := t.TempDir()
	root, _ := workspace.NewRoot(dir)
	ig, _ := workspace.NewIgnore(root)
	touched := workspace.NewTouched(root, ig)
	w, err := workspace.NewWatcher(root, workspace.WatchOptions{Ignore: ig, OnChange: touched.FromWatcher, Debounce: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	f := newFixture(t, func(o *Options) {
		smallWindow(o)
		o.Compaction.Auto = false
		o.Root, o.Resolver, o.Touched = root.Dir(), root, touched
		o.SessionDir = filepath.Join(root.Dir(), ".soba", "sessions")
	}, providertest.Text("a "+bigText), providertest.Text("b "+bigText), providertest.Text("c "+bigText), providertest.Text("d "+bigText))
	f.prompt(t, "first "+bigText)
	os.MkdirAll(filepath.Join(dir, "pkg", "new"), 0o755)
	os.WriteFile(filepath.Join(dir, "pkg", "new", "edited-by-user.go"), []byte("package new\n"), 0o644)
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, mod := touched.Snapshot()
		if slices.Contains(mod, "pkg/new/edited-by-user.go") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watcher did not report the change: %v", mod)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i := 0; i < 3; i++ {
		f.prompt(t, "more "+bigText)
	}
	res, err := f.agent.Compact(context.Background(), "")
	if err != nil || res.Outcome != compaction.OutcomeCompleted {
		t.Fatalf("compact %+v %v", res, err)
	}
	st := f.capsules(t)[0].State
	if !slices.Contains(st.FilesModified, "pkg/new/edited-by-user.go") {
		t.Fatalf("files modified %v lack the file changed on disk", st.FilesModified)
	}
	if slices.ContainsFunc(st.FilesModified, func(p string) bool { return strings.HasPrefix(p, ".soba/") }) {
		t.Fatalf("the session's own files are listed: %v", st.FilesModified)
	}
}

// The budget's system-prompt figure is the system prompt the next request
// carries, as the fake server received it: an activated skill's body is not
// in it (its tool result carries it) until a compaction lists the skill in
// the capsule, and the figure stays right across a resume (R-O1, R-T4).
func TestSystemTokensAreTheSentSystemPrompt_RO1(t *testing.T) {
	f := newFixture(t, func(o *Options) { smallWindow(o); o.Compaction.Auto = false },
		providertest.Call("s1", "activate_skill", map[string]any{"name": "go-testing"}),
		providertest.Text("activated "+bigText), providertest.Text("more "+bigText), providertest.Text("more "+bigText),
		providertest.Text("next"), providertest.Text("after resume"))
	writeSkill(t, f.dir, "go-testing", "how this project runs its Go tests", strings.Repeat("Always run go test with -race. ", 200))
	check := func(name string, a *Agent, withBody bool) {
		t.Helper()
		reqs := f.model.Requests()
		sent := reqs[len(reqs)-1].System
		var got int
		if err := a.do(func(st *state) { got = st.systemTokens }); err != nil {
			t.Fatal(err)
		}
		if want := a.opt.Counter.Count(sent) + a.toolSchemaTokens(); got != want {
			t.Errorf("%s: system tokens %d, the system prompt sent is %d", name, got, want)
		}
		if strings.Contains(sent, "Active skill go-testing") != withBody {
			t.Errorf("%s: the system prompt carries the skill's body: %v, want %v", name, !withBody, withBody)
		}
	}
	f.prompt(t, "use the go testing skill "+bigText)
	check("after activation", f.agent, false)
	f.prompt(t, "more "+bigText)
	f.prompt(t, "more "+bigText)
	res, err := f.agent.Compact(context.Background(), "")
	if err != nil || res.Outcome != compaction.OutcomeCompleted {
		t.Fatalf("compact %+v %v", res, err)
	}
	// The continuation is measured with the system prompt it leaves, the
	// skill's body in it (R-R2, R-C3): the capsule records the raw estimate
	// of the model input right after it.
	raw := 0
	if err := f.agent.do(func(st *state) {
		m, err := MeasureInput(newPathView(st.store, st.path, 0, st.latest), st.base, f.agent.opt.Counter)
		if err != nil {
			t.Error(err)
		}
		raw = st.systemTokens
		for _, n := range m.Entries {
			raw += n
		}
	}); err != nil {
		t.Fatal(err)
	}
	if after := f.capsules(t)[0].TokensAfter; after != raw {
		t.Errorf("the capsule records %d tokens after it, the model input after it is %d", after, raw)
	}
	f.prompt(t, "go on")
	check("after the compaction", f.agent, true)
	info, err := f.agent.Info()
	if err != nil {
		t.Fatal(err)
	}
	opt := f.agent.opt
	f.agent.Close()
	a, _, err := Resume(opt, info.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	turn, _, err := a.Prompt("and now")
	if err != nil {
		t.Fatal(err)
	}
	f.rec.turnEnd(t, turn)
	check("after resume", a, true)
}

// A skill activated after the last response with usage (the turn failed
// before the next one) counts on top of that report after a resume, as it
// does live: the resumed budget is the budget before the restart (R-O1).
func TestResumeCountsSkillActivatedAfterUsage_RO1(t *testing.T) {
	f := newFixture(t, nil, providertest.Call("s1", "activate_skill", map[string]any{"name": "go-testing"}),
		providertest.Reply{Status: 400, Body: `{"error":{"message":"bad request","type":"invalid_request_error"}}`})
	writeSkill(t, f.dir, "go-testing", "how this project runs its Go tests", strings.Repeat("Always run go test with -race. ", 200))
	// Reopen, so the skill is listed in the system prompt from the start.
	info, _ := f.agent.Info()
	opt := f.agent.opt
	f.agent.Close()
	live, _, err := Resume(opt, info.Path)
	if err != nil {
		t.Fatal(err)
	}
	turn, _, err := live.Prompt("use the go testing skill")
	if err != nil {
		t.Fatal(err)
	}
	f.rec.turnEnd(t, turn) // the second request is refused: the turn fails after the activation
	before, err := live.Budget()
	if err != nil {
		t.Fatal(err)
	}
	if before.Source != "provider_usage" {
		t.Fatalf("budget source %q: the test needs a usage report before the activation", before.Source)
	}
	live.Close()
	a, _, err := Resume(opt, info.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	after, err := a.Budget()
	if err != nil {
		t.Fatal(err)
	}
	if after.EffectiveTokens != before.EffectiveTokens || after.Source != before.Source {
		t.Errorf("after resume %d (%s), before %d (%s)", after.EffectiveTokens, after.Source, before.EffectiveTokens, before.Source)
	}
}

// A rewind to before a skill's activation takes the skill back: the next
// capsule does not list it and no request carries its body (R-T4, R-C2).
func TestRewindBeforeActivationDropsTheSkill_RT4(t *testing.T) {
	f := newFixture(t, func(o *Options) { smallWindow(o); o.Compaction.Auto = false },
		providertest.Text("first "+bigText),
		providertest.Call("s1", "activate_skill", map[string]any{"name": "go-testing"}),
		providertest.Text("activated "+bigText),
		providertest.Text("again "+bigText), providertest.Text("more "+bigText), providertest.Text("more "+bigText),
		providertest.Text("after"))
	const body = "Always run go test with -race."
	writeSkill(t, f.dir, "go-testing", "how this project runs its Go tests", body)
	f.prompt(t, "start "+bigText)
	info, err := f.agent.Info()
	if err != nil {
		t.Fatal(err)
	}
	f.prompt(t, "use the go testing skill "+bigText)
	if _, err := f.agent.Rewind(info.LeafID); err != nil {
		t.Fatal(err)
	}
	f.prompt(t, "do it without the skill "+bigText)
	f.prompt(t, "more "+bigText)
	f.prompt(t, "more "+bigText)
	res, err := f.agent.Compact(context.Background(), "")
	if err != nil || res.Outcome != compaction.OutcomeCompleted {
		t.Fatalf("compact %+v %v", res, err)
	}
	if st := f.capsules(t)[0].State; len(st.ActiveSkills) != 0 {
		t.Errorf("the capsule lists skills %v activated only on the abandoned branch", st.ActiveSkills)
	}
	f.prompt(t, "go on")
	reqs := f.model.Requests()
	if last := reqs[len(reqs)-1]; strings.Contains(last.System, body) || carriesInToolResult(last, body) {
		t.Errorf("the request after the rewind and compaction carries the abandoned skill")
	}
}
