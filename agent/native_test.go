package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soba-agent/soba-lsp/agent/provider"
	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/workspace"
)

// newResponsesFixture is newFixture against a Responses API fake, with
// native continuation on.
func newResponsesFixture(t *testing.T, mod func(*Options), script ...providertest.Reply) *fixture {
	t.Helper()
	illegal := illegalTransitions.Load()
	t.Cleanup(func() {
		if n := illegalTransitions.Load() - illegal; n > 0 {
			t.Errorf("%d illegal phase transitions", n)
		}
	})
	root, err := workspace.NewRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv := providertest.NewResponses(t, script...)
	f := &fixture{dir: root.Dir(), rec: newRecorder(), model: srv}
	opt := responsesOptions(t, root, srv, f.rec)
	smallWindow(&opt)
	opt.Compaction.Auto = false
	if mod != nil {
		mod(&opt)
	}
	a, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	f.agent = a
	return f
}

func responsesOptions(t *testing.T, root *workspace.Root, srv *providertest.Server, rec *recorder) Options {
	t.Helper()
	p, err := provider.New(provider.Config{Provider: provider.NameOpenAIResponses, BaseURL: srv.URL, Model: "test-model", ContextWindow: 12000, MaxOutputTokens: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return Options{Root: root.Dir(), Resolver: root, SessionDir: filepath.Join(root.Dir(), ".soba", "sessions"),
		Model: p, ModelName: "test-model", ProviderName: provider.NameOpenAIResponses, NativeContinuation: true,
		Compaction: compaction.DefaultConfig(), Approval: "auto", Notifier: rec, Counter: quarterCounter{}, EntryTokens: entryTokens}
}

// history answers three prompts with encrypted reasoning, so an explicit
// compact has history before the keep window.
func history(n int) []providertest.Reply {
	var out []providertest.Reply
	for i := 0; i < n; i++ {
		out = append(out, providertest.Reply{Text: "answer " + bigText, Reasoning: "enc-reasoning-" + string(rune('a'+i))})
	}
	return out
}

func (f *fixture) compacts() []providertest.Received {
	var out []providertest.Received
	for _, r := range f.model.Requests() {
		if r.Path == "/v1/responses/compact" {
			out = append(out, r)
		}
	}
	return out
}

func (f *fixture) lastRequest(t *testing.T) providertest.Received {
	t.Helper()
	reqs := f.model.Requests()
	if len(reqs) == 0 {
		t.Fatal("no request")
	}
	return reqs[len(reqs)-1]
}

func carriesCapsuleText(r providertest.Received) bool {
	return len(r.Messages) > 0 && strings.HasPrefix(r.Messages[0].Text, compaction.CapsulePreamble)
}

func carriesItem(r providertest.Received, encrypted string) bool {
	for _, it := range r.NativeItems {
		if strings.Contains(string(it), `"encrypted_content":"`+encrypted+`"`) {
			return true
		}
	}
	return false
}

func (f *fixture) flight(t *testing.T) []compaction.FlightRecord {
	t.Helper()
	info, _ := f.agent.Info()
	data, err := os.ReadFile(info.FlightPath)
	if err != nil {
		t.Fatal(err)
	}
	var out []compaction.FlightRecord
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r compaction.FlightRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("flight line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// TestNativeCompactionStoredWithPortableCapsule_RN1: a compaction with the
// Responses provider also obtains /responses/compact for the history
// before the cut and stores it in the capsule entry with provider and
// model; the portable capsule is still built; the result line and the
// flight record say native, the record without its content.
func TestNativeCompactionStoredWithPortableCapsule_RN1(t *testing.T) {
	f := newResponsesFixture(t, nil, history(4)...)
	f.model.AddCompact(providertest.Reply{Compaction: "enc-compaction-1"})
	for i := 0; i < 4; i++ {
		if end := f.prompt(t, "question "+bigText); end.Outcome != "completed" {
			t.Fatalf("turn %d: %s %s", i, end.Outcome, end.Error)
		}
	}
	res, err := f.agent.Compact(context.Background(), "")
	if err != nil || res.Outcome != compaction.OutcomeCompleted {
		t.Fatalf("compact: %+v %v", res, err)
	}
	if !res.Native || !strings.HasSuffix(res.Line, " · native") {
		t.Errorf("result native %v line %q", res.Native, res.Line)
	}
	// Its progress said what it waited for (R-B3).
	f.rec.mu.Lock()
	var said []string
	for _, c := range f.rec.comps {
		if c.OperationID == res.OperationID && c.Phase == "progress" {
			said = append(said, c.Message)
		}
	}
	f.rec.mu.Unlock()
	if !slices.ContainsFunc(said, func(m string) bool { return strings.HasPrefix(m, "waiting for the provider's native compaction · ") }) {
		t.Errorf("progress %q does not say it waited for the native compaction", said)
	}
	caps := f.capsules(t)
	if len(caps) != 1 {
		t.Fatalf("%d capsules", len(caps))
	}
	c := caps[0]
	if c.Native == nil || c.Native.Provider != provider.NameOpenAIResponses || c.Native.Model != "test-model" ||
		!strings.Contains(string(c.Native.Items), "enc-compaction-1") || c.Native.Tokens <= 0 {
		t.Fatalf("capsule native = %+v", c.Native)
	}
	if c.State.Goal == "" || len(c.State.UserMessages) == 0 {
		t.Errorf("the portable capsule was not built: %+v", c.State)
	}
	// The compact request carried the history before the cut, with the
	// encrypted reasoning of the answers in it, and not the kept tail.
	cr := f.compacts()
	if len(cr) != 1 {
		t.Fatalf("%d compact requests", len(cr))
	}
	if !carriesItem(cr[0], "enc-reasoning-a") || carriesItem(cr[0], "enc-reasoning-d") {
		t.Errorf("compact request items %s", cr[0].NativeItems)
	}
	fl := f.flight(t)
	last := fl[len(fl)-1]
	if last.NativeOutcome != compaction.NativeCompleted || last.Outcome != compaction.OutcomeCompleted {
		t.Errorf("flight record %+v", last)
	}
	info, _ := f.agent.Info()
	raw, _ := os.ReadFile(info.FlightPath)
	if strings.Contains(string(raw), "enc-compaction-1") {
		t.Error("the flight record carries the native continuation's content")
	}
	// soba.capsule.show shows the portable capsule and says a native
	// continuation is attached, without its content.
	_, md, err := f.agent.CapsuleShow("")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md, "## Goal") || !strings.Contains(md, "A native continuation is attached: openai-responses · test-model · ") || strings.Contains(md, "enc-compaction-1") {
		t.Errorf("capsule show:\n%s", md)
	}
	// After a resume the last compaction still says native.
	if r := compaction.CapsuleResult(c); !strings.HasSuffix(r.Line, " · native") {
		t.Errorf("resumed line %q", r.Line)
	}
}

// TestRequestAfterNativeCompactionCarriesItem_RN2: the next request to the
// same provider and model carries the compaction item in place of the
// capsule text, then the kept tail.
func TestRequestAfterNativeCompactionCarriesItem_RN2(t *testing.T) {
	f := newResponsesFixture(t, nil, append(history(4), providertest.Text("continuing"))...)
	f.model.AddCompact(providertest.Reply{Compaction: "enc-compaction-1"})
	for i := 0; i < 4; i++ {
		f.prompt(t, "question "+bigText)
	}
	if res, _ := f.agent.Compact(context.Background(), ""); !res.Native {
		t.Fatalf("compact %+v", res)
	}
	f.prompt(t, "go on")
	r := f.lastRequest(t)
	if !carriesItem(r, "enc-compaction-1") || carriesCapsuleText(r) {
		t.Fatalf("request after the compaction: items %s, capsule text %v", r.NativeItems, carriesCapsuleText(r))
	}
	if carriesItem(r, "enc-reasoning-a") {
		t.Error("the compacted history's reasoning was sent again")
	}
	if !carriesItem(r, "enc-reasoning-d") {
		t.Error("the kept tail lost its encrypted reasoning")
	}
	if got := r.Messages[len(r.Messages)-1]; got.Role != "user" || got.Text != "go on" {
		t.Errorf("last message %+v", got)
	}
}

// TestModelSwitchUsesPortableCapsule_RN2: resumed with another model, the
// request carries the capsule text and not the item.
func TestModelSwitchUsesPortableCapsule_RN2(t *testing.T) {
	f := newResponsesFixture(t, nil, history(4)...)
	f.model.AddCompact(providertest.Reply{Compaction: "enc-compaction-1"})
	for i := 0; i < 4; i++ {
		f.prompt(t, "question "+bigText)
	}
	if res, _ := f.agent.Compact(context.Background(), ""); !res.Native {
		t.Fatalf("compact %+v", res)
	}
	info, _ := f.agent.Info()
	f.agent.Close()
	f.model.Add(providertest.Text("hello from the other model"))
	rec := newRecorder()
	root, err := workspace.NewRoot(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	opt := responsesOptions(t, root, f.model, rec)
	smallWindow(&opt)
	opt.ModelName = "other-model"
	a, _, err := Resume(opt, info.Path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	f.agent, f.rec = a, rec
	f.prompt(t, "go on")
	r := f.lastRequest(t)
	if carriesItem(r, "enc-compaction-1") || !carriesCapsuleText(r) {
		t.Fatalf("after a model switch: items %s, capsule text %v", r.NativeItems, carriesCapsuleText(r))
	}
	if carriesItem(r, "enc-reasoning-d") {
		t.Error("another model's encrypted reasoning was sent")
	}
}

// TestRejectedNativeFallsBackOnceNeverResent_RN2: a 4xx naming the
// compaction item marks it unusable (an entry) and the request is retried
// once with the portable capsule; the item is never sent again, also not
// after a resume.
func TestRejectedNativeFallsBackOnceNeverResent_RN2(t *testing.T) {
	rejected := providertest.Reply{Status: 400, Body: `{"error":{"message":"The encrypted content for item input[0] could not be verified.","type":"invalid_request_error","param":"input[0].encrypted_content","code":"invalid_encrypted_content"}}`}
	script := append(history(4), rejected, providertest.Text("fine"), providertest.Text("still fine"))
	f := newResponsesFixture(t, nil, script...)
	f.model.AddCompact(providertest.Reply{Compaction: "enc-compaction-1"})
	for i := 0; i < 4; i++ {
		f.prompt(t, "question "+bigText)
	}
	if res, _ := f.agent.Compact(context.Background(), ""); !res.Native {
		t.Fatalf("compact %+v", res)
	}
	before := len(f.model.Requests())
	if end := f.prompt(t, "go on"); end.Outcome != "completed" {
		t.Fatalf("turn %s %s", end.Outcome, end.Error)
	}
	reqs := f.model.Requests()[before:]
	if len(reqs) != 2 {
		t.Fatalf("%d requests after the compaction, want the rejected one and one retry", len(reqs))
	}
	if !carriesItem(reqs[0], "enc-compaction-1") || carriesItem(reqs[1], "enc-compaction-1") || !carriesCapsuleText(reqs[1]) {
		t.Fatalf("first items %s; retry items %s capsule text %v", reqs[0].NativeItems, reqs[1].NativeItems, carriesCapsuleText(reqs[1]))
	}
	marked := false
	for _, e := range f.entries(t) {
		if e.Settings != nil && e.Settings.NativeRejected == f.capsules(t)[0].CheckpointID {
			marked = true
		}
	}
	if !marked {
		t.Fatal("no entry marks the native continuation unusable")
	}
	f.prompt(t, "and more")
	if r := f.lastRequest(t); carriesItem(r, "enc-compaction-1") || !carriesCapsuleText(r) {
		t.Fatalf("the rejected item was sent again: %s", r.NativeItems)
	}
	// A resume reads the mark too.
	info, _ := f.agent.Info()
	f.agent.Close()
	root, _ := workspace.NewRoot(f.dir)
	opt := responsesOptions(t, root, f.model, newRecorder())
	smallWindow(&opt)
	a, _, err := Resume(opt, info.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var in compaction.Input
	_ = a.do(func(st *state) {
		in, err = compaction.BuildInput(newPathView(st.store, st.path, 0, st.latest), compaction.InputOptions{Provider: provider.NameOpenAIResponses, Model: "test-model"})
	})
	if err != nil || in.Native != nil || in.CapsuleText == "" {
		t.Fatalf("after resume: native %v, capsule text %d bytes, err %v", in.Native, len(in.CapsuleText), err)
	}
}

// TestNativeFailureOrTimeoutCompletesPortable_RN3: a native call that fails
// or outlives timeoutMs leaves a completed compaction with the portable
// capsule alone, and the flight record says how the native call ended.
func TestNativeFailureOrTimeoutCompletesPortable_RN3(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reply   providertest.Reply
		outcome string
	}{
		{"server error", providertest.Reply{Status: 500, Body: `{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`}, compaction.NativeFailed},
		{"rejected", providertest.Reply{Status: 400, Body: `{"error":{"message":"compaction is not supported for this model","type":"invalid_request_error"}}`}, compaction.NativeFailed},
		{"timeout", providertest.Reply{Compaction: "too-late", Delay: 5 * time.Second}, compaction.NativeTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newResponsesFixture(t, func(o *Options) { o.Compaction.TimeoutMs = 300 }, history(4)...)
			f.model.AddCompact(tc.reply)
			for i := 0; i < 4; i++ {
				f.prompt(t, "question "+bigText)
			}
			start := time.Now()
			res, err := f.agent.Compact(context.Background(), "")
			if err != nil || res.Outcome != compaction.OutcomeCompleted || res.Native || strings.Contains(res.Line, "native") {
				t.Fatalf("compact %+v %v", res, err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("the barrier waited %s for the native call (timeoutMs 300)", d)
			}
			caps := f.capsules(t)
			if len(caps) != 1 || caps[0].Native != nil || caps[0].Quality != "full" {
				t.Fatalf("capsules %+v", caps)
			}
			fl := f.flight(t)
			if got := fl[len(fl)-1].NativeOutcome; got != tc.outcome {
				t.Errorf("flight native outcome %q, want %q", got, tc.outcome)
			}
		})
	}
}

// TestCancelDuringNativeCallAppendsNothing_RB5_RN3: a cancel while the
// native call runs ends the compaction cancelled with nothing appended,
// even though the provider answers afterwards.
func TestCancelDuringNativeCallAppendsNothing_RB5_RN3(t *testing.T) {
	f := newResponsesFixture(t, func(o *Options) { o.Compaction.TimeoutMs = 10000 }, history(4)...)
	f.model.AddCompact(providertest.Reply{Compaction: "enc-late", Delay: 400 * time.Millisecond})
	for i := 0; i < 4; i++ {
		f.prompt(t, "question "+bigText)
	}
	done := make(chan compaction.CompactionResult, 1)
	go func() { r, _ := f.agent.Compact(context.Background(), ""); done <- r }()
	deadline := time.Now().Add(5 * time.Second)
	for len(f.compacts()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the native call never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if ok, what, _ := f.agent.Cancel(); !ok || what != "compaction" {
		t.Fatalf("cancel = %v %s", ok, what)
	}
	r := <-done
	if r.Outcome != compaction.OutcomeCancelled {
		t.Fatalf("outcome %s (%s)", r.Outcome, r.Reason)
	}
	time.Sleep(500 * time.Millisecond) // the provider's late answer
	if caps := f.capsules(t); len(caps) != 0 {
		t.Fatal("a cancelled compaction appended a capsule")
	}
	for _, e := range f.entries(t) {
		if e.Type == session.TypeCapsule {
			t.Fatal("capsule entry after cancel")
		}
	}
}

// TestBudgetMeasuresWhatIsSent_RN2: after a native compaction the budget
// counts the continuation's reported size, not the portable capsule's text,
// for the provider and model it belongs to; for another model it counts the
// capsule's text.
func TestBudgetMeasuresWhatIsSent_RN2(t *testing.T) {
	f := newResponsesFixture(t, nil, history(4)...)
	// A continuation reported larger than the portable capsule (yet smaller
	// than the history it replaces, or it would be discarded, R-C7) makes the
	// difference unmistakable.
	const size = 3000
	f.model.AddCompact(providertest.Reply{Compaction: "enc-compaction-1", Usage: &provider.Usage{InputTokens: 4000, OutputTokens: size}})
	for i := 0; i < 4; i++ {
		f.prompt(t, "question "+bigText)
	}
	res, _ := f.agent.Compact(context.Background(), "")
	if !res.Native {
		t.Fatalf("compact %+v", res)
	}
	b, _ := f.agent.Budget()
	var native, portable InputMeasure
	err := f.agent.do(func(st *state) {
		view := newPathView(st.store, st.path, 0, st.latest)
		base, err := compaction.FindBase(view)
		if err != nil {
			t.Error(err)
			return
		}
		native, _ = MeasureInput(view, base.For(provider.NameOpenAIResponses, "test-model"), quarterCounter{})
		portable, _ = MeasureInput(view, base.For(provider.NameOpenAIResponses, "other-model"), quarterCounter{})
	})
	if err != nil {
		t.Fatal(err)
	}
	if native.Entries[0] != size || portable.Entries[0] >= size || portable.Entries[0] <= 0 {
		t.Fatalf("first entry: native %d, portable %d", native.Entries[0], portable.Entries[0])
	}
	if b.EffectiveTokens < size || b.Source != "estimated" {
		t.Fatalf("budget %d (%s) does not count the %d-token continuation", b.EffectiveTokens, b.Source, size)
	}
	if res.TokensAfter != b.EffectiveTokens {
		t.Errorf("result's tokens after %d, budget %d", res.TokensAfter, b.EffectiveTokens)
	}
}

// newAnthropicFixture is an agent on an Anthropic Messages fake with native
// continuation on, a 200,000-token window and a deterministic capsule.
func newAnthropicFixture(t *testing.T, script ...providertest.Reply) *fixture {
	t.Helper()
	root, err := workspace.NewRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv := providertest.NewAnthropic(t, script...)
	p, err := provider.New(provider.Config{Provider: provider.NameAnthropic, BaseURL: srv.URL, Model: "claude-test", ContextWindow: 200000, MaxOutputTokens: 8000})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	c := compaction.DefaultConfig()
	c.ContextWindow, c.MaxOutputTokens, c.KeepRecentTokens, c.Auto = 200000, 8000, 2000, false
	a, err := New(Options{Root: root.Dir(), Resolver: root, SessionDir: filepath.Join(root.Dir(), ".soba", "sessions"),
		Model: p, ModelName: "claude-test", ProviderName: provider.NameAnthropic, NativeContinuation: true,
		Compaction: c, Approval: "auto", Notifier: rec, Counter: quarterCounter{}, EntryTokens: entryTokens})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return &fixture{dir: root.Dir(), agent: a, rec: rec, model: srv}
}

// TestAnthropicBelowMinimumIsPortableOnly_RN1: a history below the API's
// minimum compaction trigger is not sent for compaction; the capsule is
// portable only and the flight record says why.
func TestAnthropicBelowMinimumIsPortableOnly_RN1(t *testing.T) {
	f := newAnthropicFixture(t, providertest.Text("one "+bigText), providertest.Text("two "+bigText), providertest.Text("three "+bigText))
	for i := 0; i < 3; i++ {
		f.prompt(t, "question "+bigText)
	}
	res, err := f.agent.Compact(context.Background(), "")
	if err != nil || res.Outcome != compaction.OutcomeCompleted || res.Native {
		t.Fatalf("compact %+v %v", res, err)
	}
	for _, r := range f.model.Requests() {
		if len(r.ContextManagement) > 0 {
			t.Fatalf("a compaction request was sent for a short history: %s", r.ContextManagement)
		}
	}
	fl := f.flight(t)
	if got := fl[len(fl)-1].NativeOutcome; got != compaction.NativeBelowMinimum {
		t.Errorf("flight native outcome %q", got)
	}
}

// TestAnthropicServerSideCompaction_RN1_RN2: above the minimum, the
// barrier asks for server-side compaction; the compaction block is stored
// in the capsule and the next request carries it (with the beta header) in
// place of the capsule's text; another model gets the capsule's text.
func TestAnthropicServerSideCompaction_RN1_RN2(t *testing.T) {
	huge := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 450) // ~5,000 tokens
	var script []providertest.Reply
	for i := 0; i < 6; i++ {
		script = append(script, providertest.Text("answer "+huge))
	}
	script = append(script, providertest.Reply{Compaction: "The user asked six questions about foxes; all were answered."}, providertest.Text("continuing"))
	f := newAnthropicFixture(t, script...)
	for i := 0; i < 6; i++ {
		if end := f.prompt(t, "question "+huge); end.Outcome != "completed" {
			t.Fatalf("turn %d: %s %s", i, end.Outcome, end.Error)
		}
	}
	res, err := f.agent.Compact(context.Background(), "")
	if err != nil || res.Outcome != compaction.OutcomeCompleted || !res.Native {
		t.Fatalf("compact %+v %v", res, err)
	}
	reqs := f.model.Requests()
	cr := reqs[len(reqs)-1]
	if !strings.Contains(string(cr.ContextManagement), `"compact_20260112"`) || cr.Header.Get("anthropic-beta") != "compact-2026-01-12" {
		t.Fatalf("compaction request: context_management %s, beta %q", cr.ContextManagement, cr.Header.Get("anthropic-beta"))
	}
	c := f.capsules(t)[0]
	if c.Native == nil || c.Native.Provider != provider.NameAnthropic || !strings.Contains(string(c.Native.Items), "six questions") {
		t.Fatalf("capsule native %+v", c.Native)
	}
	f.prompt(t, "go on")
	r := f.lastRequest(t)
	if len(r.NativeItems) != 1 || !strings.Contains(string(r.NativeItems[0]), "six questions") || carriesCapsuleText(r) {
		t.Fatalf("request after the compaction: items %s, capsule text %v", r.NativeItems, carriesCapsuleText(r))
	}
	if r.Header.Get("anthropic-beta") != "compact-2026-01-12" || len(r.ContextManagement) > 0 {
		t.Errorf("beta %q, context_management %s", r.Header.Get("anthropic-beta"), r.ContextManagement)
	}
}

// TestRejectedReasoningNeverResent_RN2: when the provider refuses the
// encrypted reasoning of earlier answers (another organisation's key, say),
// the refusal is recorded, the request is retried once without it, and it
// is never sent again; reasoning recorded after the refusal is sent.
func TestRejectedReasoningNeverResent_RN2(t *testing.T) {
	rejected := providertest.Reply{Status: 400, Body: `{"error":{"message":"The encrypted content gAAA...xyz could not be decrypted or parsed.","type":"invalid_request_error","param":null,"code":"invalid_encrypted_content"}}`}
	f := newResponsesFixture(t, nil,
		providertest.Reply{Text: "first", Reasoning: "enc-old"},
		rejected,
		providertest.Reply{Text: "second", Reasoning: "enc-new"},
		providertest.Text("third"))
	f.prompt(t, "one")
	if end := f.prompt(t, "two"); end.Outcome != "completed" {
		t.Fatalf("turn two: %s %s", end.Outcome, end.Error)
	}
	reqs := f.model.Requests()
	if len(reqs) != 3 || !carriesItem(reqs[1], "enc-old") || carriesItem(reqs[2], "enc-old") {
		t.Fatalf("%d requests; the rejected one carried enc-old: %v; the retry: %s", len(reqs), carriesItem(reqs[1], "enc-old"), reqs[2].NativeItems)
	}
	f.prompt(t, "three")
	last := f.lastRequest(t)
	if carriesItem(last, "enc-old") || !carriesItem(last, "enc-new") {
		t.Fatalf("third request items %s", last.NativeItems)
	}
	marked := false
	for _, e := range f.entries(t) {
		marked = marked || (e.Settings != nil && e.Settings.ReasoningRejected)
	}
	if !marked {
		t.Fatal("no entry records the refusal")
	}
}

// TestCapsuleLoadAndRewindUsePortable_RN2: after a capsule load, and after
// a rewind to before the capsule, the request carries no native item.
func TestCapsuleLoadAndRewindUsePortable_RN2(t *testing.T) {
	f := newResponsesFixture(t, nil, append(history(4), providertest.Text("after load"), providertest.Text("after rewind"))...)
	f.model.AddCompact(providertest.Reply{Compaction: "enc-compaction-1"})
	for i := 0; i < 4; i++ {
		f.prompt(t, "question "+bigText)
	}
	res, _ := f.agent.Compact(context.Background(), "")
	if !res.Native {
		t.Fatalf("compact %+v", res)
	}
	out, err := f.agent.CapsuleExport(res.CheckpointID, filepath.Join(f.dir, "handoff.capsule.md"), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := f.agent.CapsuleLoad(out); err != nil {
		t.Fatal(err)
	}
	f.prompt(t, "after load")
	if r := f.lastRequest(t); carriesItem(r, "enc-compaction-1") || !carriesCapsuleText(r) {
		t.Fatalf("after a capsule load: items %s, capsule text %v", r.NativeItems, carriesCapsuleText(r))
	}
	// Rewind to the last answer before the compaction: the capsule is off
	// the path, and so is its continuation.
	var before string
	for _, e := range f.entries(t) {
		if e.Capsule != nil {
			break
		}
		if e.Assistant != nil {
			before = e.ID
		}
	}
	if _, err := f.agent.Rewind(before); err != nil {
		t.Fatal(err)
	}
	f.prompt(t, "after rewind")
	if r := f.lastRequest(t); carriesItem(r, "enc-compaction-1") || carriesCapsuleText(r) {
		t.Fatalf("after a rewind to before the capsule: items %s, capsule text %v", r.NativeItems, carriesCapsuleText(r))
	}
}

// TestNativeThatWouldNotFitIsDiscarded_RN1_RG4: a continuation reported
// larger than the hard limit leaves room for is not used; the portable
// capsule goes alone and the flight record says discarded.
func TestNativeThatWouldNotFitIsDiscarded_RN1_RG4(t *testing.T) {
	f := newResponsesFixture(t, nil, history(4)...)
	f.model.AddCompact(providertest.Reply{Compaction: "enc-huge", Usage: &provider.Usage{InputTokens: 4000, OutputTokens: 20000}})
	for i := 0; i < 4; i++ {
		f.prompt(t, "question "+bigText)
	}
	res, err := f.agent.Compact(context.Background(), "")
	if err != nil || res.Outcome != compaction.OutcomeCompleted || res.Native {
		t.Fatalf("compact %+v %v", res, err)
	}
	if c := f.capsules(t)[0]; c.Native != nil || c.TokensAfter > 10000 {
		t.Fatalf("capsule native %+v, tokens after %d", c.Native, c.TokensAfter)
	}
	fl := f.flight(t)
	if got := fl[len(fl)-1].NativeOutcome; got != compaction.NativeDiscarded {
		t.Errorf("flight native outcome %q", got)
	}
	if b, _ := f.agent.Budget(); b.EffectiveTokens > b.HardLimit {
		t.Errorf("budget %d over the hard limit %d", b.EffectiveTokens, b.HardLimit)
	}
}

// TestLeafMovedDuringNativeCallIsStale_RB5_RN3: when the session's leaf
// moves while the native call runs, the compaction ends stale and appends
// nothing, the late continuation included.
func TestLeafMovedDuringNativeCallIsStale_RB5_RN3(t *testing.T) {
	f := newResponsesFixture(t, func(o *Options) { o.Compaction.TimeoutMs = 10000 }, history(4)...)
	f.model.AddCompact(providertest.Reply{Compaction: "enc-late", Delay: 300 * time.Millisecond})
	for i := 0; i < 4; i++ {
		f.prompt(t, "question "+bigText)
	}
	done := make(chan compaction.CompactionResult, 1)
	go func() { r, _ := f.agent.Compact(context.Background(), ""); done <- r }()
	deadline := time.Now().Add(5 * time.Second)
	for len(f.compacts()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the native call never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := f.agent.Checkpoint(compaction.TriggerMilestone, "moved on"); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.Outcome != compaction.OutcomeStale || r.NativeOutcome != compaction.NativeCompleted {
		t.Fatalf("outcome %s (%s), native %s; want stale after a completed native call", r.Outcome, r.Reason, r.NativeOutcome)
	}
	if n := len(f.capsules(t)); n != 0 {
		t.Fatalf("a stale compaction appended %d capsules", n)
	}
}
