package compaction

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/tool"
)

// longSession builds turns of user → read → edit → test, each ~tokensPerTurn.
func longSession(turns int) *builder {
	b := newBuilder()
	for i := range turns {
		b.user("Please fix bug number "+itoa(i)+" in pkg/a.go. You must not change the public API.", 100)
		b.read("pkg/a.go", 300)
		b.edit("pkg/a.go", 200)
		b.bash("go test ./...", i%2, 200)
		b.reply("Fixed bug "+itoa(i)+".", 100)
	}
	return b
}

func itoa(i int) string { return strconv.Itoa(i) }

func checkSafeCut(t *testing.T, es Entries, firstKept int) {
	t.Helper()
	if firstKept >= len(es) {
		return
	}
	if es[firstKept].Type == session.TypeToolResult {
		t.Fatalf("kept tail starts with a tool result %s", es[firstKept].ID)
	}
	calls := map[string]bool{}
	for _, e := range es[firstKept:] {
		if e.Assistant != nil {
			for _, c := range e.Assistant.ToolCalls {
				calls[c.ID] = true
			}
		}
		if e.ToolResult != nil && !calls[e.ToolResult.ToolCallID] {
			t.Fatalf("kept result %s answers call %s that lies before the cut", e.ID, e.ToolResult.ToolCallID)
		}
	}
}

func checkPaired(t *testing.T, in Input) {
	t.Helper()
	open := map[string]bool{}
	for i, m := range in.Messages {
		switch m.Role {
		case RoleAssistant:
			if len(open) > 0 {
				t.Fatalf("message %d: assistant while calls %v are unanswered", i, open)
			}
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
		case RoleTool:
			if !open[m.ToolCallID] {
				t.Fatalf("message %d: orphan tool result for %s", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		case RoleUser:
			if len(open) > 0 {
				t.Fatalf("message %d: user message while calls %v are unanswered", i, open)
			}
		}
	}
	if len(open) > 0 {
		t.Fatalf("input ends with unanswered calls %v", open)
	}
}

func TestCutMovesOffToolResult_RM3(t *testing.T) {
	b := newBuilder()
	b.user("start", 100)
	b.reply("ok", 1000)
	ids := b.batch(tool.ReadFile, 500, `{"path":"a"}`) // assistant + 1 result, 500 each
	b.user("next", 100)
	b.reply("done", 100)
	// keep 700: walking back 100+100+500 reaches the result of the batch;
	// the cut must move to the batch's assistant entry, not start at the result.
	c, err := FindCut(b.es, Base{CapsuleIndex: -1}, CutOptions{KeepRecent: 700})
	if err != nil {
		t.Fatal(err)
	}
	checkSafeCut(t, b.es, c.FirstKept)
	if got := b.es[c.FirstKept]; got.Type == session.TypeToolResult || (got.Assistant != nil && len(got.Assistant.ToolCalls) == 0 && got.Type != session.TypeUser && c.KeptTokens < 700) {
		t.Fatalf("cut at %s (%s)", got.ID, got.Type)
	}
	_ = ids
}

func TestToolBatchOfFiveStaysWhole_RM3(t *testing.T) {
	b := newBuilder()
	b.user("start", 3000)
	b.reply("looking", 100)
	b.batch(tool.ReadFile, 400, `{"path":"a"}`, `{"path":"b"}`, `{"path":"c"}`, `{"path":"d"}`, `{"path":"e"}`)
	for keep := 100; keep <= 2600; keep += 100 {
		c, err := FindCut(b.es, Base{CapsuleIndex: -1}, CutOptions{KeepRecent: keep})
		if err != nil {
			t.Fatal(err)
		}
		checkSafeCut(t, b.es, c.FirstKept)
		// The batch is entries 3..8: a cut inside it would start at 4..8.
		if c.FirstKept > 3 && c.FirstKept <= 8 {
			t.Fatalf("keep %d: cut at %d splits the batch of 5", keep, c.FirstKept)
		}
	}
}

func TestCutPrefersUserBoundary_RM3(t *testing.T) {
	b := newBuilder()
	b.user("old", 5000)
	b.user("the current task", 100)        // user boundary
	b.reply("thinking", 300)               // assistant boundary
	b.batch(tool.ReadFile, 400, `{"p":1}`) // 800
	b.reply("almost", 900)
	// keep 2000: the smallest candidate keeping ≥ 2000 is the assistant
	// "thinking" (2000); the user message one entry earlier (2100) is
	// within slack and preferred.
	c, err := FindCut(b.es, Base{CapsuleIndex: -1}, CutOptions{KeepRecent: 2000})
	if err != nil {
		t.Fatal(err)
	}
	if b.es[c.FirstKept].Type != session.TypeUser || b.es[c.FirstKept].User.Text != "the current task" {
		t.Fatalf("cut at %s %+v, want the user boundary", b.es[c.FirstKept].ID, b.es[c.FirstKept].Type)
	}
}

func TestForcedCutShrinksToCurrentBatch_RG4(t *testing.T) {
	b := newBuilder()
	b.user("task", 1000)
	b.reply("step", 10000)
	b.batch(tool.ReadFile, 3000, `{"path":"big"}`) // current batch: 6000
	cfg := smallConfig()
	cfg.KeepRecentTokens = 15000 // hard limit 17000
	p, err := MakePlan(b.es, quarterCounter{}, PlanRequest{Trigger: TriggerHardLimit, Config: cfg, SystemTokens: 500})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Cut.Shrunk || p.Cut.KeptTokens != 6000 {
		t.Fatalf("cut = %+v, want the window shrunk to the current batch (6000)", p.Cut)
	}
	// A batch larger than the hard limit cannot fit: fail closed.
	b.batch(tool.ReadFile, 20000, `{"path":"huge"}`)
	_, err = MakePlan(b.es, quarterCounter{}, PlanRequest{Trigger: TriggerContextOverflow, Config: cfg, SystemTokens: 500})
	var cf *CannotFitError
	if !errors.As(err, &cf) || !strings.Contains(err.Error(), "nothing was sent") {
		t.Fatalf("err = %v, want CannotFitError", err)
	}
}

func TestUserCompactNoopWithoutHistory_RG8(t *testing.T) {
	b := newBuilder()
	b.user("hello", 100)
	b.reply("hi", 100)
	_, err := MakePlan(b.es, quarterCounter{}, PlanRequest{Trigger: TriggerUser, Config: smallConfig()})
	var skip *Skip
	if !errors.As(err, &skip) || !strings.Contains(skip.Reason, "nothing old enough to compact") {
		t.Fatalf("err = %v, want a skip", err)
	}
	// The explicit compact skips the ROI floor: a small but compactable
	// history is compacted.
	b = longSession(6) // 6 × 1900 tokens
	p, c, err := b.compact(TriggerUser, smallConfig(), "ck_u1")
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := p.Accept(c); !ok {
		t.Fatalf("user compact refused by the post gate: %s", why)
	}
}

func TestModelInputAfterCompaction_RM1(t *testing.T) {
	b := longSession(8)
	p, c, err := b.compact(TriggerAutoThreshold, smallConfig(), "ck_1")
	if err != nil {
		t.Fatal(err)
	}
	b.user("after the capsule", 50)
	in, err := BuildInput(b.es, InputOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if in.CheckpointID != "ck_1" || !strings.HasPrefix(in.CapsuleText, CapsulePreamble) {
		t.Fatalf("input capsule = %q / %q", in.CheckpointID, in.CapsuleText[:min(60, len(in.CapsuleText))])
	}
	if in.Messages[0].EntryID != p.Cut.FirstKeptID {
		t.Fatalf("first message %s, want the first kept entry %s", in.Messages[0].EntryID, p.Cut.FirstKeptID)
	}
	if last := in.Messages[len(in.Messages)-1]; last.Text != "after the capsule" {
		t.Fatalf("last message %+v, want the entry appended after the capsule", last)
	}
	// Nothing before the first kept entry is in the input.
	fk := b.index(p.Cut.FirstKeptID)
	for _, m := range in.Messages {
		if i := b.index(m.EntryID); m.EntryID != "" && i < fk {
			t.Fatalf("message from %s lies before the kept tail", m.EntryID)
		}
	}
	checkPaired(t, in)
	_ = c
}

func TestNativeContinuationWhenCompatible_RM1(t *testing.T) {
	b := longSession(8)
	_, _, err := b.compact(TriggerAutoThreshold, smallConfig(), "ck_n")
	if err != nil {
		t.Fatal(err)
	}
	b.es[len(b.es)-1].Capsule.Native = &capsule.Native{Provider: "openai", Model: "m1", Items: []byte(`[{"type":"compaction","encrypted_content":"opaque"}]`)}
	same, _ := BuildInput(b.es, InputOptions{Provider: "openai", Model: "m1"})
	if same.Native == nil || same.CapsuleText != "" {
		t.Fatalf("same provider and model: native %v text %d bytes, want native", same.Native, len(same.CapsuleText))
	}
	other, _ := BuildInput(b.es, InputOptions{Provider: "openai", Model: "m2"})
	if other.Native != nil || other.CapsuleText == "" {
		t.Fatal("another model must get the portable capsule")
	}
}

func TestOnlyNewestCapsuleInInput_RM2(t *testing.T) {
	b := longSession(8)
	if _, _, err := b.compact(TriggerAutoThreshold, smallConfig(), "ck_first"); err != nil {
		t.Fatal(err)
	}
	for range 6 {
		b.user("more work", 300)
		b.reply("did more work", 500)
	}
	if _, _, err := b.compact(TriggerAutoThreshold, smallConfig(), "ck_second"); err != nil {
		t.Fatal(err)
	}
	in, err := BuildInput(b.es, InputOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if in.CheckpointID != "ck_second" {
		t.Fatalf("input carries %s, want ck_second", in.CheckpointID)
	}
	if strings.Count(in.CapsuleText, CapsulePreamble) != 1 {
		t.Fatal("more than one capsule in the input")
	}
	for _, m := range in.Messages {
		if strings.Contains(m.Text, "ck_first") {
			t.Fatal("the first capsule leaked into the input")
		}
	}
	// Both capsules stay in the transcript.
	n := 0
	for _, e := range b.es {
		if e.Type == session.TypeCapsule {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d capsules in the transcript, want 2", n)
	}
}

func TestRollingKeepsEarlierState_RM4(t *testing.T) {
	b := newBuilder()
	b.user("Build the parser. Never use regexp for tokens.", 200)
	b.edit("early/first.go", 2000)
	b.bash("go test ./parser", 1, 2000)
	for round := range 3 {
		for range 5 {
			b.user("continue round "+string(rune('a'+round)), 300)
			b.read("later/"+string(rune('a'+round))+".go", 500)
			b.reply("progress", 400)
		}
		if _, _, err := b.compact(TriggerAutoThreshold, smallConfig(), "ck_"+string(rune('a'+round))); err != nil {
			t.Fatalf("compaction %d: %v", round+1, err)
		}
	}
	st := b.es[len(b.es)-1].Capsule.State
	if !slices.Contains(st.FilesModified, "early/first.go") {
		t.Fatalf("file modified before the first capsule is missing after the third: %v", st.FilesModified)
	}
	for _, f := range []string{"later/a.go", "later/b.go"} {
		if !slices.Contains(st.FilesRead, f) {
			t.Fatalf("%s missing from files read %v", f, st.FilesRead)
		}
	}
	if !strings.Contains(st.Goal, "Build the parser") {
		t.Fatalf("goal lost: %q", st.Goal)
	}
	if !slices.ContainsFunc(st.Constraints, func(s string) bool { return strings.Contains(s, "Never use regexp") }) {
		t.Fatalf("constraint lost: %v", st.Constraints)
	}
	if !slices.ContainsFunc(st.Blockers, func(s string) bool { return strings.Contains(s, "go test ./parser") }) {
		t.Fatalf("unresolved blocker lost: %v", st.Blockers)
	}
}

func TestRollResolvesBlockerWhenCommandPasses_RM4(t *testing.T) {
	prev := capsule.State{Blockers: []string{"`go test ./...` fails", "waiting for review"}, Verification: []capsule.Verification{{Command: "go test ./...", ExitCode: 1, Outcome: "failed"}}}
	next := capsule.State{Verification: []capsule.Verification{{Command: "go test ./...", ExitCode: 0, Outcome: "passed"}}}
	got := Roll(prev, next)
	if !slices.Equal(got.Blockers, []string{"waiting for review"}) {
		t.Fatalf("blockers = %v", got.Blockers)
	}
	if len(got.Verification) != 1 || got.Verification[0].Outcome != "passed" {
		t.Fatalf("verification = %+v, want the latest outcome only", got.Verification)
	}
}

func TestCapsuleHoldsWorkingState_RC1(t *testing.T) {
	b := newBuilder()
	b.user("Add a retry to the HTTP client. Do not add new dependencies.", 300)
	b.read("client/http.go", 1500)
	b.add(session.Entry{Type: session.TypeCheckpoint, Checkpoint: &session.Checkpoint{CheckpointID: "ck_p", Kind: TriggerPlanPivot, Note: "use exponential backoff instead of fixed delays"}}, 0)
	b.edit("client/http.go", 1500)
	b.bash("go test ./client", 1, 1500)
	b.add(session.Entry{Type: session.TypeToolResult, ToolResult: &session.ToolResult{ToolCallID: "x", ToolName: tool.ActivateSkill, OK: true, Artifacts: &session.Artifacts{Skill: "go-testing"}}}, 10)
	b.user("the test still fails", 100)
	b.reply("looking", 2000)
	b.reply("still looking", 2000)
	st := b.capsule(t)
	switch {
	case !strings.Contains(st.Goal, "retry"):
		t.Fatalf("goal %q", st.Goal)
	case len(st.Constraints) == 0:
		t.Fatal("no constraints")
	case len(st.InProgress) == 0:
		t.Fatal("no in-progress work")
	case len(st.Decisions) == 0 || !strings.Contains(st.Decisions[0].Decision, "exponential backoff"):
		t.Fatalf("decisions %+v", st.Decisions)
	case len(st.Blockers) == 0 || len(st.NextSteps) == 0:
		t.Fatalf("blockers %v next %v", st.Blockers, st.NextSteps)
	case !slices.Equal(st.FilesRead, []string{"client/http.go"}) || !slices.Equal(st.FilesModified, []string{"client/http.go"}):
		t.Fatalf("files %v %v", st.FilesRead, st.FilesModified)
	case len(st.Verification) != 1 || st.Verification[0].Outcome != "failed" || st.Verification[0].ExitCode != 1:
		t.Fatalf("verification %+v", st.Verification)
	case !slices.Equal(st.ActiveSkills, []string{"go-testing"}):
		t.Fatalf("skills %v", st.ActiveSkills)
	case len(st.UserMessages) != 2 || st.UserMessages[0] != "the test still fails":
		t.Fatalf("user messages %q (want newest first, verbatim)", st.UserMessages)
	}
}

func TestArtifactsNeverFromSummary_RC2(t *testing.T) {
	b := longSession(8)
	cfg := smallConfig()
	p, err := MakePlan(b.es, quarterCounter{}, PlanRequest{Trigger: TriggerUser, Config: cfg, CheckpointID: "ck_s",
		Extras: Extras{FilesModified: []string{"changed/by-editor.go"}}})
	if err != nil {
		t.Fatal(err)
	}
	summary, err := ParseSummary("## Goal\nFix bugs\n## Done\n- fixed\n## Notes\n- Files modified: invented.go\n")
	if err != nil {
		t.Fatal(err)
	}
	summary.FilesModified = []string{"invented.go"} // even a summary that names files cannot add any
	c, err := BuildCapsule(b.es, quarterCounter{}, p, &summary, false)
	if err != nil {
		t.Fatal(err)
	}
	st := c.Entry.State
	if slices.Contains(st.FilesModified, "invented.go") {
		t.Fatal("artifact taken from the summary")
	}
	if !slices.Equal(st.FilesModified, []string{"pkg/a.go", "changed/by-editor.go"}) {
		t.Fatalf("files modified %v, want the recorded ones", st.FilesModified)
	}
	if st.Goal != "Fix bugs" {
		t.Fatalf("goal %q, want the summary's", st.Goal)
	}
}

func TestCapsuleRecord_RC3(t *testing.T) {
	b := longSession(8)
	p, c, err := b.compact(TriggerAutoThreshold, smallConfig(), "ck_abc123")
	if err != nil {
		t.Fatal(err)
	}
	e := c.Entry
	switch {
	case e.CheckpointID != "ck_abc123", e.Trigger != TriggerAutoThreshold:
		t.Fatalf("%+v", e)
	case e.FirstKeptEntryID != p.Cut.FirstKeptID || e.FirstKeptEntryID == "":
		t.Fatalf("firstKept %q", e.FirstKeptEntryID)
	case e.TokensBefore <= e.TokensAfter || e.TokensAfter <= 0:
		t.Fatalf("tokens %d → %d", e.TokensBefore, e.TokensAfter)
	case e.Quality != capsule.QualityFull:
		t.Fatalf("quality %q", e.Quality)
	case e.SourceFrom != "e0" || b.index(e.SourceTo) != b.index(e.FirstKeptEntryID)-1:
		t.Fatalf("source range %s..%s", e.SourceFrom, e.SourceTo)
	}
	dp, _ := MakePlan(b.es, quarterCounter{}, PlanRequest{Trigger: TriggerHardLimit, Config: smallConfig(), CheckpointID: "ck_d"})
	dc, _ := BuildCapsule(b.es, quarterCounter{}, dp, nil, true)
	if dc.Entry.Quality != capsule.QualityDegraded {
		t.Fatalf("fallback quality %q", dc.Entry.Quality)
	}
}

func TestProjectMemoryOnlyExplicitValidatedFull_RC4(t *testing.T) {
	bad := errors.New("invalid")
	for _, tr := range []string{TriggerAutoThreshold, TriggerTurnComplete, TriggerMilestone, TriggerPlanPivot, TriggerHardLimit, TriggerContextOverflow, TriggerUser} {
		for _, q := range []string{capsule.QualityFull, capsule.QualityDegraded} {
			for _, v := range []error{nil, bad} {
				want := tr == TriggerUser && q == capsule.QualityFull && v == nil
				if got := ShouldMirror(tr, q, v); got != want {
					t.Fatalf("ShouldMirror(%s, %s, %v) = %v, want %v", tr, q, v, got, want)
				}
			}
		}
	}
	st := capsule.State{Goal: "g", FilesModified: []string{"a.go"}}
	if err := ValidateForMemory(st, Extras{FilesModified: []string{"a.go", "b.go"}}, 100); err == nil || !strings.Contains(err.Error(), "b.go") {
		t.Fatalf("missing artifact not reported: %v", err)
	}
	if err := ValidateForMemory(st, Extras{FilesModified: []string{"a.go"}}, MaxMirroredCapsuleBytes+1); err == nil {
		t.Fatal("oversized capsule accepted")
	}
	if err := ValidateForMemory(capsule.State{}, Extras{}, 10); err == nil {
		t.Fatal("capsule without a goal accepted")
	}
}

func TestRewindBeforeCapsuleUndoesCompaction_RT4(t *testing.T) {
	b := longSession(8)
	before, _ := BuildInput(b.es, InputOptions{})
	if _, _, err := b.compact(TriggerAutoThreshold, smallConfig(), "ck_r"); err != nil {
		t.Fatal(err)
	}
	after, _ := BuildInput(b.es, InputOptions{})
	if after.CheckpointID != "ck_r" || len(after.Messages) >= len(before.Messages) {
		t.Fatal("the compaction did not shrink the input")
	}
	// The path after rewinding to the entry before the capsule is the old
	// path (plus a settings entry that is not model input).
	rewound := slices.Clone(b.es[:len(b.es)-1])
	p := rewound[len(rewound)-1].ID
	rewound = append(rewound, session.Entry{ID: "rw", ParentID: &p, Type: session.TypeSettings, Settings: &session.Settings{RewindTo: p}})
	again, err := BuildInput(rewound, InputOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.CheckpointID != "" || len(again.Messages) != len(before.Messages) {
		t.Fatalf("after rewind: capsule %q, %d messages, want the %d of before", again.CheckpointID, len(again.Messages), len(before.Messages))
	}
}

func TestInputRepairsOrphans_RM3(t *testing.T) {
	b := newBuilder()
	b.user("go", 10)
	b.add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{ToolCalls: []session.ToolCall{{ID: "c1", Name: tool.Bash, Arguments: []byte(`{}`)}, {ID: "c2", Name: tool.Bash, Arguments: []byte(`{}`)}}}}, 10)
	b.result("c1", tool.Bash, true, "ok", 10, nil)
	// c2 never got a result (crash): the next user message follows.
	b.user("are you there?", 10)
	b.result("c9", tool.Bash, true, "stray", 10, nil) // a result whose call is unknown
	in, err := BuildInput(b.es, InputOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkPaired(t, in)
	if len(in.Repairs) != 2 {
		t.Fatalf("repairs %q, want 2", in.Repairs)
	}
	if !slices.ContainsFunc(in.Messages, func(m Message) bool { return m.ToolCallID == "c2" && m.Text == InterruptedResult }) {
		t.Fatal("interrupted call c2 got no explicit result")
	}
}

func TestCapsuleLoadJoinsSessionState_RP1(t *testing.T) {
	b := longSession(8)
	if _, _, err := b.compact(TriggerAutoThreshold, smallConfig(), "ck_own"); err != nil {
		t.Fatal(err)
	}
	own := b.es[len(b.es)-1].Capsule
	b.add(session.Entry{Type: session.TypeCapsuleLoad, CapsuleLoad: &session.CapsuleLoad{CheckpointID: "ck_loaded", Path: "x.capsule.md",
		State: capsule.State{Goal: "ship the handoff", Decisions: []capsule.Decision{{Decision: "use sqlite"}}, FilesModified: []string{"other/db.go"}}}}, 0)
	in, err := BuildInput(b.es, InputOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if in.CheckpointID != "ck_loaded" || !strings.Contains(in.CapsuleText, "use sqlite") || !strings.Contains(in.CapsuleText, "other/db.go") {
		t.Fatalf("loaded capsule not in the input: %s", in.CapsuleText)
	}
	if in.Messages[0].EntryID != own.FirstKeptEntryID {
		t.Fatal("loading dropped the kept tail")
	}
	if !strings.Contains(in.CapsuleText, "pkg/a.go") {
		t.Fatal("loading dropped the session's own capsule state")
	}
}

func TestParseSummaryTolerant(t *testing.T) {
	md := "Here is the capsule.\n# Goal\nShip it\n**Constraints**\n* no new deps\n## Decisions\n1. use sqlite — small and embedded\n## Blockers\n- none\n### next steps:\n- write docs\n## Unknown\nstray text\n"
	st, err := ParseSummary(md)
	if err != nil {
		t.Fatal(err)
	}
	if st.Goal != "Ship it" || !slices.Equal(st.Constraints, []string{"no new deps"}) || len(st.Blockers) != 0 || !slices.Equal(st.NextSteps, []string{"write docs"}) {
		t.Fatalf("%+v", st)
	}
	if st.Decisions[0] != (capsule.Decision{Decision: "use sqlite", Rationale: "small and embedded"}) {
		t.Fatalf("decision %+v", st.Decisions[0])
	}
	if !slices.Contains(st.Notes, "stray text") || !slices.Contains(st.Notes, "Here is the capsule.") {
		t.Fatalf("unplaced text must go under notes: %v", st.Notes)
	}
	for _, bad := range []string{"", "   ", "I cannot help with that."} {
		if _, err := ParseSummary(bad); !errors.Is(err, ErrUnusableSummary) {
			t.Fatalf("ParseSummary(%q) = %v, want ErrUnusableSummary", bad, err)
		}
	}
}

func TestRenderHistoryChunksAndShortens(t *testing.T) {
	b := newBuilder()
	b.user("task", 10)
	b.batch(tool.ReadFile, 10, `{"path":"big"}`)
	b.es[len(b.es)-1].ToolResult.Content = strings.Repeat("x", 50000)
	for range 20 {
		b.user(strings.Repeat("word ", 200), 10)
	}
	chunks, err := RenderHistory(b.es, 0, len(b.es), 4000)
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 5 {
		t.Fatalf("%d chunks, want the history split", len(chunks))
	}
	for i, c := range chunks {
		if len(c) > 4000+200 {
			t.Fatalf("chunk %d is %d chars", i, len(c))
		}
	}
	if strings.Contains(chunks[0], strings.Repeat("x", 2000)) {
		t.Fatal("long tool output not shortened in the summarizer's view")
	}
}

func TestVerificationCommands(t *testing.T) {
	for cmd, want := range map[string]bool{
		"go test ./...": true, "cd pkg && go test -run X": true, "npm test": true, "pytest -q": true,
		"cargo test": true, "make test": true, "make": true, "npx tsc --noEmit": true, "go vet ./...": true,
		"ls -la": false, "cat go.mod": false, "git status": false, "echo testing": false,
	} {
		if got := IsVerificationCommand(cmd); got != want {
			t.Errorf("IsVerificationCommand(%q) = %v, want %v", cmd, got, want)
		}
	}
}

func TestParseSummaryFreeHeadings(t *testing.T) {
	st, err := ParseSummary("## Key Decisions Made\n- use sqlite — embedded\n## Current Work\n- the parser\n## TODO\n- docs\n## Open Blockers\n- flaky test\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Decisions) != 1 || len(st.InProgress) != 1 || len(st.Pending) != 1 || len(st.Blockers) != 1 {
		t.Fatalf("%+v", st)
	}
}

// TestParseSummaryTables: a summary that lists its work as a Markdown table
// (models do; pi's own compaction summaries do) gives one item per body row,
// without the header row or the separator.
func TestParseSummaryTables(t *testing.T) {
	md := "## Done\n" +
		"| WP | Description | Status |\n" +
		"|----|:------------|:------:|\n" +
		"| WP1 | bash-executor.ts | ✅ |\n" +
		"| WP2 | AgentSession basic structure | ✅ |\n" +
		"- plus a bullet\n" +
		"## Pending\n" +
		"| WP14 | docs |  |\n"
	st, err := ParseSummary(md)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"WP1 · bash-executor.ts · ✅", "WP2 · AgentSession basic structure · ✅", "plus a bullet"}; !slices.Equal(st.Done, want) {
		t.Errorf("done %q, want %q", st.Done, want)
	}
	if want := []string{"WP14 · docs"}; !slices.Equal(st.Pending, want) {
		t.Errorf("pending %q, want %q", st.Pending, want)
	}
}
