package agent

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/session"
)

// countingPath is a Transcript that counts the payloads it is asked for.
type countingPath struct {
	compaction.Entries
	loads map[int]int
}

func (c *countingPath) Entry(i int) (*session.Entry, error) {
	c.loads[i]++
	return c.Entries.Entry(i)
}

// restorePath builds a path of n turns (user, answer with a tool call, its
// result, answer with usage), with a skill activated, settings and a
// checkpoint intent early on, and, when withCapsule, a capsule in the middle.
func restorePath(n int, withCapsule bool) compaction.Entries {
	off := false
	p := compaction.Entries{{ID: "h", Type: session.TypeSession, Session: &session.SessionHeader{SessionID: "s"}}}
	add := func(e session.Entry) {
		e.ID = fmt.Sprintf("e%d", len(p))
		parent := p[len(p)-1].ID
		e.ParentID = &parent
		if e.Type == session.TypeUser || e.Type == session.TypeAssistant || e.Type == session.TypeToolResult {
			e.Tokens = 10
		}
		p = append(p, e)
	}
	add(session.Entry{Type: session.TypeCheckpoint, Checkpoint: &session.Checkpoint{CheckpointID: "ck_m", Kind: "milestone", Intent: "milestone"}})
	add(session.Entry{Type: session.TypeCheckpoint, Checkpoint: &session.Checkpoint{CheckpointID: "ck_p", Kind: "plan_pivot", Intent: "plan_pivot"}})
	add(session.Entry{Type: session.TypeSettings, Settings: &session.Settings{AutoCompact: &off, ConsumedIntents: []string{"milestone"}}})
	add(session.Entry{Type: session.TypeSettings, Settings: &session.Settings{Model: "alt"}})
	add(session.Entry{Type: session.TypeSettings, Settings: &session.Settings{SummaryModel: "main"}})
	add(session.Entry{Type: session.TypeSettings, Settings: &session.Settings{Model: "big"}})
	for k := range n {
		if withCapsule && k == n/2 {
			add(session.Entry{Type: session.TypeCapsule, Capsule: &session.Capsule{CheckpointID: "ck_c", Trigger: "user", Quality: "deterministic",
				TokensBefore: 100, TokensAfter: 10, State: capsule.State{ActiveSkills: []string{"from-capsule"}}}})
		}
		add(session.Entry{Type: session.TypeUser, User: &session.UserMessage{Text: "go"}})
		call := fmt.Sprintf("c%d", k)
		add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{ToolCalls: []session.ToolCall{{ID: call, Name: "skill", Arguments: []byte(`{}`)}}}})
		res := &session.ToolResult{ToolCallID: call, ToolName: "skill", OK: true, Content: "x"}
		if k == n-2 {
			res.Artifacts = &session.Artifacts{Skill: "late-skill"}
		}
		add(session.Entry{Type: session.TypeToolResult, ToolResult: res})
		add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{Text: "ok", Usage: &session.Usage{InputTokens: 1000 + k, OutputTokens: 5}}})
	}
	add(session.Entry{Type: session.TypeUser, User: &session.UserMessage{Text: "and now?"}})
	return p
}

// TestRestoreReadsTheIndex_RT4: resume restores the settings, the pending
// intents, the active skills, the newest capsule and the usage of the
// newest answer while decoding at most the newest capsule and that answer,
// whatever the history's length.
func TestRestoreReadsTheIndex_RT4(t *testing.T) {
	for _, tc := range []struct {
		turns       int
		withCapsule bool
		skills      []string
		// inPrompt are the skills whose bodies the system prompt carries:
		// the capsule's only (late-skill's body is in its tool result).
		inPrompt []string
	}{
		{10, false, []string{"late-skill"}, nil},
		{5000, false, []string{"late-skill"}, nil},
		{5000, true, []string{"from-capsule", "late-skill"}, []string{"from-capsule"}},
	} {
		t.Run(fmt.Sprintf("%d turns, capsule %v", tc.turns, tc.withCapsule), func(t *testing.T) {
			p := &countingPath{Entries: restorePath(tc.turns, tc.withCapsule), loads: map[int]int{}}
			b, err := compaction.FindBase(p)
			if err != nil {
				t.Fatal(err)
			}
			for k := range p.loads {
				delete(p.loads, k)
			}
			r, err := Restore(p, b, quarterCounter{})
			if err != nil {
				t.Fatal(err)
			}
			if r.AutoCompact || fmt.Sprint(r.Intents.List()) != "[plan_pivot]" || fmt.Sprint(r.ActiveSkills) != fmt.Sprint(tc.skills) {
				t.Errorf("restored auto-compact %v, intents %v, skills %v; want false, [plan_pivot], %v", r.AutoCompact, r.Intents.List(), r.ActiveSkills, tc.skills)
			}
			if r.Model != "big" || r.SummaryModel != "main" {
				t.Errorf("restored model picks %q, %q; want the newest: big, main", r.Model, r.SummaryModel)
			}
			if fmt.Sprint(r.PromptSkills) != fmt.Sprint(tc.inPrompt) {
				t.Errorf("the system prompt carries skills %v, want %v", r.PromptSkills, tc.inPrompt)
			}
			if r.Input.UsageAt < 0 || r.Input.Prompt != 1000+tc.turns-1 {
				t.Errorf("usage at %d, prompt %d; want the newest answer's %d", r.Input.UsageAt, r.Input.Prompt, 1000+tc.turns-1)
			}
			if tc.withCapsule != (r.LastCompaction != nil) {
				t.Errorf("last compaction %+v", r.LastCompaction)
			}
			if len(p.loads) > 2 {
				t.Errorf("Restore decoded %d entries of a %d-entry path, want at most 2 (the newest capsule and answer)", len(p.loads), p.Len())
			}
		})
	}
}

// benchStore writes a session of n turns (user, a call, its ~2 KB result,
// an answer with usage) and, when withCapsule, a capsule keeping the last
// 40 turns; it returns the file's path.
func benchStore(b *testing.B, n int, withCapsule bool) string {
	dir := b.TempDir()
	s, err := session.Create(dir, session.SessionHeader{SessionID: "s_bench"}, session.Options{Sync: session.SyncNever, Estimate: entryTokens})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	body := strings.Repeat("func f() { return 42 }\n", 90)
	var keep string
	for k := range n {
		u, _ := s.Append(session.Entry{Type: session.TypeUser, User: &session.UserMessage{Text: fmt.Sprintf("step %d", k)}})
		if k == n-40 {
			keep = u.ID
		}
		call := fmt.Sprintf("c%d", k)
		s.Append(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{ToolCalls: []session.ToolCall{{ID: call, Name: "read_file", Arguments: []byte(`{"path":"a.go"}`)}}}})
		s.Append(session.Entry{Type: session.TypeToolResult, ToolResult: &session.ToolResult{ToolCallID: call, ToolName: "read_file", OK: true, Content: body}})
		s.Append(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{Text: "done", Usage: &session.Usage{InputTokens: 1000, OutputTokens: 5}}})
	}
	if withCapsule {
		s.Append(session.Entry{Type: session.TypeCapsule, Capsule: &session.Capsule{CheckpointID: "ck_b", Trigger: "user", Quality: "deterministic", FirstKeptEntryID: keep}})
		s.Append(session.Entry{Type: session.TypeUser, User: &session.UserMessage{Text: "go on"}})
	}
	return s.FilePath()
}

// BenchmarkResumeAndFirstInput is the server's resume of a session file
// (index, Restore from the index) and its first model input, then the next
// request of the turn with the decoded entries kept hot, at 1k and 25k
// turns (4k and 100k entries), with and without a capsule. Without one the
// input is over the bound and refused from the headers (the next turn
// compacts first).
func BenchmarkResumeAndFirstInput(b *testing.B) {
	for _, turns := range []int{1000, 25000} {
		for _, withCapsule := range []bool{false, true} {
			path := benchStore(b, turns, withCapsule)
			opt := compaction.InputOptions{MaxToolResultChars: maxToolResultChars, MaxTokens: 2 * 64000}
			b.Run(fmt.Sprintf("entries=%d/capsule=%v", 4*turns, withCapsule), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					s, _, err := session.OpenReadOnly(path, session.Options{})
					if err != nil {
						b.Fatal(err)
					}
					v := StoreTranscript(s)
					base, err := compaction.FindBase(v)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := Restore(v, base, quarterCounter{}); err != nil {
						b.Fatal(err)
					}
					_, err = compaction.BuildInput(v, opt)
					var big *compaction.InputTooLargeError
					if withCapsule == errors.As(err, &big) {
						b.Fatal(err)
					}
					s.Close()
				}
			})
			if !withCapsule {
				continue
			}
			b.Run(fmt.Sprintf("entries=%d/next-request-cached", 4*turns), func(b *testing.B) {
				s, _, _ := session.OpenReadOnly(path, session.Options{})
				defer s.Close()
				v := StoreTranscript(s)
				opt := opt
				opt.Cache = compaction.NewEntryCache(inputCacheEntries, 400000)
				b.ReportAllocs()
				for b.Loop() {
					if in, err := compaction.BuildInput(v, opt); err != nil || len(in.Messages) < 160 {
						b.Fatal(len(in.Messages), err)
					}
				}
			})
		}
	}
}

// TestPathViewReadAhead_RT2: a reader walking the leaf path in order (the
// barrier's builder, an offline compaction) gets the entries the store
// holds, whatever the batching (by count and by bytes), and random access
// still works.
func TestPathViewReadAhead_RT2(t *testing.T) {
	dir := t.TempDir()
	s, err := session.Create(dir, session.SessionHeader{SessionID: "s_ra"}, session.Options{Sync: session.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 300<<10) // a few of these fill a batch's byte bound
	for k := range 700 {
		text := fmt.Sprintf("m%d", k)
		if k%97 == 0 {
			text += big
		}
		if _, err := s.Append(session.Entry{Type: session.TypeUser, User: &session.UserMessage{Text: text}}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s, _, err = session.OpenReadOnly(s.FilePath(), session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v := StoreTranscript(s)
	check := func(i int) {
		e, err := v.Entry(i)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := s.Load(v.Node(i).ID)
		if e.ID != want.ID || (want.User != nil) != (e.User != nil) || (e.User != nil && e.User.Text != want.User.Text) {
			t.Fatalf("entry %d: %+v, want %+v", i, e.ID, want.ID)
		}
	}
	for i := range v.Len() {
		check(i)
	}
	for _, i := range []int{600, 3, 599, 0, 700, 350, 351, 352} {
		check(i)
	}
	// The batch after the window is decoded in the background: a reader
	// that leaves the walk (a jump back, a jump past it) and walks again
	// gets the right entries, and a background read still under way when
	// the store closes is dropped.
	for _, walk := range [][2]int{{100, 400}, {50, 60}, {390, 420}, {650, 701}, {10, 12}} {
		for i := walk[0]; i < walk[1]; i++ {
			check(i)
		}
	}
	check(200)
	check(201) // a new window and a background read of the next
}

// TestRestoreReadsMarkedEntriesAlike_RT4: resume finds the capsules and the
// entries carrying facts through the store's list of them when the path is
// the whole index, and by walking the path otherwise (a branch); both give
// what walking every header gives.
func TestRestoreReadsMarkedEntriesAlike_RT4(t *testing.T) {
	dir := t.TempDir()
	s, err := session.Create(dir, session.SessionHeader{SessionID: "s_marked"}, session.Options{Sync: session.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	off := false
	var rewindTo string
	for k := range 300 {
		e := session.Entry{Type: session.TypeUser, User: &session.UserMessage{Text: fmt.Sprint("m", k)}}
		switch k % 50 {
		case 7:
			e = session.Entry{Type: session.TypeSettings, Settings: &session.Settings{AutoCompact: &off, ConsumedIntents: []string{"milestone"}}}
		case 19:
			e = session.Entry{Type: session.TypeCheckpoint, Checkpoint: &session.Checkpoint{CheckpointID: fmt.Sprint("ck_", k), Kind: "milestone", Intent: "milestone"}}
		case 31:
			e = session.Entry{Type: session.TypeCapsule, Capsule: &session.Capsule{CheckpointID: fmt.Sprint("ck_c", k), Trigger: "user", Quality: "full"}}
		}
		got, err := s.Append(e)
		if err != nil {
			t.Fatal(err)
		}
		if k == 200 {
			rewindTo = got.ID
		}
	}
	type found struct {
		i   int
		typ string
	}
	walk := func(v compaction.Transcript) (out []found) {
		for i, n := range capsulesAndFacts(struct{ compaction.Transcript }{v}) { // not a *pathView: every header
			out = append(out, found{i, n.Type})
		}
		return out
	}
	marked := func(v compaction.Transcript) (out []found) {
		for i, n := range capsulesAndFacts(v) {
			out = append(out, found{i, n.Type})
		}
		return out
	}
	linear := StoreTranscript(s)
	if _, ok := linear.(*pathView).marked(); !ok {
		t.Fatal("a session without branches is not read through the store's list")
	}
	if got, want := marked(linear), walk(linear); !slices.Equal(got, want) || len(want) != 18 {
		t.Fatalf("from the list %v, walking %v (want 18)", got, want)
	}
	if _, err := s.Rewind(rewindTo); err != nil {
		t.Fatal(err)
	}
	branch := StoreTranscript(s)
	if _, ok := branch.(*pathView).marked(); ok {
		t.Fatal("a branch is read through the store's list")
	}
	if got, want := marked(branch), walk(branch); !slices.Equal(got, want) {
		t.Fatalf("on a branch %v, walking %v", got, want)
	}
}
