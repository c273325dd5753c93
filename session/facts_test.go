package session

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestResumeIndexHoldsFacts_RT4: what resume restores besides the leaf
// (auto-compact, consumed and pending intents, activated skills, whether an
// answer carries usage) is in the index, the same after Open as right after
// Append, so resume never decodes the history for it. Lines written by hand
// in another key case or with escapes still count: the byte filter only
// ever says yes when unsure.
func TestResumeIndexHoldsFacts_RT4(t *testing.T) {
	off := false
	exit := 0
	s := newTestStore(t, testOptions())
	entries := []Entry{
		user("hello"),
		{Type: TypeSettings, Settings: &Settings{AutoCompact: &off, ConsumedIntents: []string{"milestone"}}},
		{Type: TypeCheckpoint, Checkpoint: &Checkpoint{CheckpointID: "ck_1", Kind: "milestone", Intent: "plan_pivot"}},
		{Type: TypeAssistant, Assistant: &Assistant{Text: "on it", ToolCalls: []ToolCall{{ID: "c1", Name: "skill", Arguments: []byte(`{}`)}}}},
		{Type: TypeToolResult, ToolResult: &ToolResult{ToolCallID: "c1", ToolName: "skill", OK: true, Content: "body", Artifacts: &Artifacts{Skill: "go-testing"}}},
		{Type: TypeToolResult, ToolResult: &ToolResult{ToolCallID: "c2", ToolName: "bash", OK: true, Content: "a skill is not a key", Artifacts: &Artifacts{Command: "ls", ExitCode: &exit}}},
		{Type: TypeAssistant, Assistant: &Assistant{Text: "done", Usage: &Usage{InputTokens: 900, OutputTokens: 12}}},
		{Type: TypeAssistant, Assistant: &Assistant{Text: "nothing counted"}},
	}
	var live []Meta
	for _, e := range entries {
		mustAppend(t, s, e)
	}
	live = append(live, s.Path()...)
	dir := filepath.Dir(s.FilePath())
	s2, _ := reopen(t, s, testOptions())
	resumed := s2.Path()
	if len(resumed) != len(live) {
		t.Fatalf("resumed %d entries, want %d", len(resumed), len(live))
	}
	for i := range live {
		if !reflect.DeepEqual(live[i].Facts, resumed[i].Facts) {
			t.Errorf("entry %d (%s): facts after Append %+v, after Open %+v", i, live[i].Type, live[i].Facts, resumed[i].Facts)
		}
		if live[i].Type == TypeAssistant && live[i].MayHaveUsage && !resumed[i].MayHaveUsage {
			t.Errorf("entry %d: usage lost on resume", i)
		}
		if live[i].Line != resumed[i].Line || int(resumed[i].Line) != i+1 {
			t.Errorf("entry %d: line %d after Append, %d after Open", i, live[i].Line, resumed[i].Line)
		}
	}
	want := map[int]*Facts{2: {AutoCompact: &off, ConsumedIntents: []string{"milestone"}}, 3: {Intent: "plan_pivot"}, 5: {Skill: "go-testing"}}
	for i, m := range resumed {
		if !reflect.DeepEqual(m.Facts, want[i]) {
			t.Errorf("entry %d (%s): facts %+v, want %+v", i, m.Type, m.Facts, want[i])
		}
	}
	if resumed[8].MayHaveUsage || !resumed[7].MayHaveUsage {
		t.Errorf("usage hints: answer with usage %v, without %v", resumed[7].MayHaveUsage, resumed[8].MayHaveUsage)
	}

	// Hand-written lines: the decoder matches names case-insensitively and
	// resolves escapes, so the index must too.
	hand := []string{
		`{"id":"h","parentId":null,"type":"session","timestamp":"2026-07-01T12:00:00Z","session":{"sessionId":"s_hand"}}`,
		`{"id":"r1","parentId":"h","type":"tool_result","timestamp":"2026-07-01T12:00:01Z","tokens":3,"toolResult":{"toolCallId":"c","ok":true,"content":"x","artifacts":{"SKILL":"upper"}}}`,
		`{"id":"r2","parentId":"r1","type":"tool_result","timestamp":"2026-07-01T12:00:02Z","tokens":3,"toolResult":{"toolCallId":"c","ok":true,"content":"x","artifacts":{"\u0073kill":"escaped"}}}`,
		`{"id":"a1","parentId":"r2","type":"assistant","timestamp":"2026-07-01T12:00:03Z","tokens":3,"assistant":{"text":"x","Usage":{"inputTokens":5,"outputTokens":1}}}`,
	}
	path := filepath.Join(dir, "s_hand.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(hand, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s3, _, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	p := s3.Path()
	if p[1].Facts == nil || p[1].Facts.Skill != "upper" || p[2].Facts == nil || p[2].Facts.Skill != "escaped" || !p[3].MayHaveUsage {
		t.Errorf("hand-written lines: %+v %+v usage %v", p[1].Facts, p[2].Facts, p[3].MayHaveUsage)
	}
}

// TestMayName_RT4 is the byte filter behind the index's facts: a no must
// be certain (the decoder would find no such member), a yes may be wrong.
func TestMayName_RT4(t *testing.T) {
	cases := []struct {
		line string
		key  string
		want bool
	}{
		{`{"artifacts":{"skill":"x"}}`, "skill", true},
		{`{"artifacts":{"Skill":"x"}}`, "skill", true},
		{`{"artifacts":{"sKiLL":"x"}}`, "skill", true},
		{`{"artifacts":{"\u0073kill":"x"}}`, "skill", true},
		{`{"content":"skills are mentioned"}`, "skill", true}, // a mention: decoded to be sure
		{`{"content":"nothing of the sort","ok":true}`, "skill", false},
		{`{"content":"kill -9 and sk ill"}`, "skill", false},
		{`{"usage":{"inputTokens":1}}`, "usage", true},
		{`{"USAGE":{"inputTokens":1}}`, "usage", true},
		{`{"text":"no count"}`, "usage", false},
		{`k`, "skill", false},
		{`skill`, "skill", true},
	}
	for _, c := range cases {
		if got := mayName([]byte(c.line), c.key); got != c.want {
			t.Errorf("mayName(%s, %q) = %v, want %v", c.line, c.key, got, c.want)
		}
	}
}

// TestLoadLenientReportsOnce_RT3: an entry whose header indexes but whose
// payload does not decode reads as its header alone, reported once with
// its line, so no reader fails on it again and again.
func TestLoadLenientReportsOnce_RT3(t *testing.T) {
	lines := []string{
		`{"id":"h","parentId":null,"type":"session","timestamp":"2026-07-01T12:00:00Z","session":{"sessionId":"s_p"}}`,
		`{"id":"u1","parentId":"h","type":"user","timestamp":"2026-07-01T12:00:01Z","tokens":3,"user":{"text":123}}`,
		`{"id":"u2","parentId":"u1","type":"user","timestamp":"2026-07-01T12:00:02Z","tokens":3,"user":{"text":"fine"}}`,
	}
	path := filepath.Join(t.TempDir(), "s_p.jsonl")
	os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
	for _, open := range []struct {
		name string
		open func(string, Options) (*Store, *OpenReport, error)
	}{{"Open", Open}, {"OpenReadOnly", OpenReadOnly}} {
		t.Run(open.name, func(t *testing.T) {
			s, _, err := open.open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var heard []BadLine
			s.OnUndecodable(func(b BadLine) { heard = append(heard, b) })
			for range 3 {
				e, _, err := s.LoadLenient("u1")
				if err != nil || e.ID != "u1" || e.User != nil || e.Parent() != "h" {
					t.Fatalf("LoadLenient(u1) = %+v, %v; want the header alone", e, err)
				}
			}
			if len(heard) != 1 || heard[0].Line != 2 || !strings.Contains(heard[0].Err.Error(), `entry "u1" cannot be decoded`) {
				t.Fatalf("reports %+v, want one naming line 2", heard)
			}
			if e, bad, err := s.LoadLenient("u2"); err != nil || bad != nil || e.User == nil || e.User.Text != "fine" {
				t.Fatalf("LoadLenient(u2) = %+v, %v, %v", e, bad, err)
			}
			if _, err := s.Load("u1"); err == nil {
				t.Fatal("Load of the poisoned entry succeeded")
			}
		})
	}
}

// TestOpenReadOnlyNeverWrites_RT1: the offline commands' store reads a
// session a server holds (no lock) and refuses to append.
func TestOpenReadOnlyNeverWrites_RT1(t *testing.T) {
	s := newTestStore(t, testOptions())
	mustAppend(t, s, user("held by the server"))
	before := readFile(t, s.FilePath())
	r, rep, err := OpenReadOnly(s.FilePath(), Options{})
	if err != nil {
		t.Fatalf("read-only open of a held session: %v", err)
	}
	defer r.Close()
	if rep.Entries != 2 || r.Leaf() != s.Leaf() {
		t.Fatalf("read-only index: %d entries, leaf %s, want 2 and %s", rep.Entries, r.Leaf(), s.Leaf())
	}
	if _, err := r.Append(user("sneaky")); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("append on a read-only store = %v", err)
	}
	if after := readFile(t, s.FilePath()); string(after) != string(before) {
		t.Fatal("the read-only store changed the file")
	}
}
