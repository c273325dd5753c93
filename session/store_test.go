package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/soba-agent/soba-lsp/capsule"
)

// testClock returns a clock that ticks one second per call from a fixed start.
func testClock() func() time.Time {
	t := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Second); return t }
}

func testOptions() Options {
	return Options{Now: testClock(), Sync: SyncNever}
}

func newTestStore(t *testing.T, opts Options) *Store {
	t.Helper()
	s, err := Create(t.TempDir(), SessionHeader{SessionID: "s_test", Workspace: "/ws"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func user(text string) Entry { return Entry{Type: TypeUser, User: &UserMessage{Text: text}} }

func mustAppend(t *testing.T, s *Store, e Entry) Entry {
	t.Helper()
	out, err := s.Append(e)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func reopen(t *testing.T, s *Store, opts Options) (*Store, *OpenReport) {
	t.Helper()
	path := s.FilePath()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, rep, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Close() })
	return s2, rep
}

func pathIDs(p []Meta) []string {
	ids := make([]string, len(p))
	for i, m := range p {
		ids[i] = m.ID
	}
	return ids
}

// TestAppendOnly_RT1: whatever the store does, the bytes of the file before an
// operation are a prefix of the bytes after it.
func TestAppendOnly_RT1(t *testing.T) {
	type op struct {
		name string
		do   func(t *testing.T, s *Store) *Store
	}
	var target string
	ops := []op{
		{"append user", func(t *testing.T, s *Store) *Store { target = mustAppend(t, s, user("hello")).ID; return s }},
		{"append 200", func(t *testing.T, s *Store) *Store {
			for i := range 200 {
				mustAppend(t, s, user(fmt.Sprintf("message %d %s", i, strings.Repeat("x", i*7))))
			}
			return s
		}},
		{"rewind", func(t *testing.T, s *Store) *Store {
			if _, err := s.Rewind(target); err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{"append after rewind", func(t *testing.T, s *Store) *Store { mustAppend(t, s, user("branch")); return s }},
		{"failed appends", func(t *testing.T, s *Store) *Store {
			s.Append(Entry{Type: "bogus"})
			s.Append(Entry{Type: TypeUser})
			p := "nope"
			s.Append(Entry{Type: TypeUser, ParentID: &p, User: &UserMessage{}})
			return s
		}},
		{"reopen and append", func(t *testing.T, s *Store) *Store {
			s2, _ := reopen(t, s, testOptions())
			mustAppend(t, s2, user("after resume"))
			return s2
		}},
		{"capsule and checkpoint", func(t *testing.T, s *Store) *Store {
			mustAppend(t, s, Entry{Type: TypeCheckpoint, Checkpoint: &Checkpoint{CheckpointID: "ck_1", Kind: "milestone"}})
			mustAppend(t, s, Entry{Type: TypeCapsule, Capsule: &Capsule{CheckpointID: "ck_2", Trigger: "user", Quality: "full"}})
			return s
		}},
	}
	s := newTestStore(t, testOptions())
	before := readFile(t, s.FilePath())
	for _, o := range ops {
		s = o.do(t, s)
		after := readFile(t, s.FilePath())
		if !bytes.HasPrefix(after, before) {
			t.Fatalf("%s: the file before is not a prefix of the file after", o.name)
		}
		if o.name != "failed appends" && len(after) == len(before) {
			t.Fatalf("%s: nothing was appended", o.name)
		}
		before = after
	}
}

// TestIDsParentsAndPath_RT2: ids are unique, the first entry's parentId is
// null, each entry hangs from the previous leaf, and Path is root→leaf.
func TestIDsParentsAndPath_RT2(t *testing.T) {
	s := newTestStore(t, testOptions())
	const n = 2000
	for i := range n {
		mustAppend(t, s, user(fmt.Sprint(i)))
	}
	lines := bytes.Split(bytes.TrimSuffix(readFile(t, s.FilePath()), []byte("\n")), []byte("\n"))
	if len(lines) != n+1 {
		t.Fatalf("file has %d lines, want %d", len(lines), n+1)
	}
	seen := map[string]bool{}
	prev := ""
	for i, l := range lines {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(l, &raw); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		for _, k := range []string{"id", "parentId", "type", "timestamp"} {
			if _, ok := raw[k]; !ok {
				t.Fatalf("line %d lacks %q", i+1, k)
			}
		}
		var id string
		json.Unmarshal(raw["id"], &id)
		if len(id) != 8 || seen[id] {
			t.Fatalf("line %d: id %q is not a fresh 8-digit id", i+1, id)
		}
		seen[id] = true
		if i == 0 {
			if string(raw["parentId"]) != "null" {
				t.Fatalf("first entry's parentId is %s, want null", raw["parentId"])
			}
		} else if string(raw["parentId"]) != `"`+prev+`"` {
			t.Fatalf("line %d: parentId %s, want %q", i+1, raw["parentId"], prev)
		}
		prev = id
	}
	for _, st := range []*Store{s, func() *Store { s2, _ := reopen(t, s, testOptions()); return s2 }()} {
		p := st.Path()
		if len(p) != n+1 || st.parentOf(p[0]) != "" || p[len(p)-1].ID != prev || st.Leaf() != prev {
			t.Fatalf("path has %d entries from %q to %q, leaf %q; want %d to %q", len(p), p[0].ID, p[len(p)-1].ID, st.Leaf(), n+1, prev)
		}
		for i, m := range p {
			if int(m.Depth) != i || (i > 0 && st.parentOf(m) != p[i-1].ID) {
				t.Fatalf("path[%d] = %+v is not the child of %q at depth %d", i, m, p[max(i-1, 0)].ID, i)
			}
		}
	}
}

// TestExplicitIDAndClock checks the fields Append fills: caller ids are kept,
// the injected clock stamps entries, Estimate fills only unset Tokens.
func TestExplicitIDAndClock(t *testing.T) {
	calls := 0
	opts := testOptions()
	opts.Estimate = func(e *Entry) int { calls++; return len(e.User.Text) + 100 }
	s, err := Create(t.TempDir(), SessionHeader{SessionID: "s"}, Options{Now: opts.Now, Sync: SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, _, err = Open(s.FilePath(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := mustAppend(t, s, Entry{ID: "mine", Type: TypeUser, User: &UserMessage{Text: "abc"}})
	b := mustAppend(t, s, Entry{Type: TypeUser, Tokens: 7, User: &UserMessage{Text: "abc"}})
	if a.ID != "mine" || a.Tokens != 103 || b.Tokens != 7 || calls != 1 {
		t.Fatalf("ids %q, tokens %d/%d, estimate calls %d", a.ID, a.Tokens, b.Tokens, calls)
	}
	if !b.Timestamp.After(a.Timestamp) || a.Timestamp.Location() != time.UTC {
		t.Fatalf("timestamps %v, %v", a.Timestamp, b.Timestamp)
	}
	if m, _ := s.Meta("mine"); m.Tokens != 103 || !m.Timestamp().Equal(a.Timestamp) || m.Type != TypeUser {
		t.Fatalf("meta %+v", m)
	}
}

func TestAppendRejectsBadEntries(t *testing.T) {
	s := newTestStore(t, testOptions())
	first := mustAppend(t, s, user("x"))
	missing := "nope"
	cases := []struct {
		name string
		e    Entry
		want string
	}{
		{"unknown type", Entry{Type: "telemetry"}, `unknown entry type "telemetry"`},
		{"empty type", Entry{}, `unknown entry type ""`},
		{"missing payload", Entry{Type: TypeUser}, "user payload is missing"},
		{"two payloads", Entry{Type: TypeUser, User: &UserMessage{}, Settings: &Settings{}}, "also carries a settings payload"},
		{"duplicate id", Entry{ID: first.ID, Type: TypeUser, User: &UserMessage{}}, "already in the session"},
		{"unknown parent", Entry{ParentID: &missing, Type: TypeUser, User: &UserMessage{}}, `parent entry "nope" is not in the session`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			size := len(readFile(t, s.FilePath()))
			_, err := s.Append(c.e)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to say %q", err, c.want)
			}
			if len(readFile(t, s.FilePath())) != size || s.Leaf() != first.ID {
				t.Fatal("a refused append changed the file or the leaf")
			}
		})
	}
}

// allPayloads is one entry of every type with every field set.
func allPayloads() []Entry {
	one, yes := 1, true
	st := capsule.State{Goal: "g", Constraints: []string{"c"}, Done: []string{"d"}, InProgress: []string{"i"},
		Pending: []string{"p"}, Decisions: []capsule.Decision{{Decision: "x", Rationale: "y"}}, Blockers: []string{"b"},
		NextSteps: []string{"n"}, Notes: []string{"no"}, FilesRead: []string{"a.go"}, FilesModified: []string{"b.go"},
		Verification: []capsule.Verification{{Command: "go test", ExitCode: 1, Outcome: "failed"}},
		ActiveSkills: []string{"go"}, UserMessages: []string{"do it <now> & \"quoted\"\n"}}
	native := &capsule.Native{Provider: "openai", Model: "m", Items: []byte(`[{"type":"compaction","encrypted_content":"opaque=="}]`)}
	return []Entry{
		{Type: TypeUser, User: &UserMessage{Text: "héllo \u2028 <b> \x01 \\ \"q\""}},
		{Type: TypeAssistant, Tokens: 9, Assistant: &Assistant{Text: "t", Provider: "ollama", Model: "q", StopReason: "tool_use",
			ToolCalls: []ToolCall{{ID: "c1", Name: "bash", Arguments: json.RawMessage(`{"command":"ls -la"}`)}},
			Usage:     &Usage{InputTokens: 10, OutputTokens: 2, CachedTokens: 8}, Error: "cut", Native: native}},
		{Type: TypeToolResult, ToolResult: &ToolResult{ToolCallID: "c1", ToolName: "bash", OK: true, Content: "out\n",
			Artifacts: &Artifacts{FilesRead: []string{"r"}, FilesModified: []string{"m"}, Command: "ls", ExitCode: &one, Skill: "s"}}},
		{Type: TypeCapsule, Capsule: &Capsule{CheckpointID: "ck_a", Trigger: "user", FirstKeptEntryID: "e1", TokensBefore: 100,
			TokensAfter: 10, Quality: "degraded", SourceFrom: "e0", SourceTo: "e9", Title: "t", State: st, Native: native}},
		{Type: TypeCheckpoint, Checkpoint: &Checkpoint{CheckpointID: "ck_b", Kind: "capsule", Note: "n", Title: "t", Path: "p.capsule.md", State: &st, Intent: "milestone"}},
		{Type: TypeCapsuleLoad, CapsuleLoad: &CapsuleLoad{CheckpointID: "ck_c", Title: "t", Path: "x.capsule.md", Warnings: []string{"w"}, State: st}},
		{Type: TypeSettings, Settings: &Settings{AutoCompact: &yes, Model: "m2", ConsumedIntents: []string{"milestone"}}},
		{Type: TypeSession, Session: &SessionHeader{Version: 1, SessionID: "other", Workspace: "/w", ImportedFrom: "pi"}},
	}
}

// TestPayloadRoundTrip_RT3: every payload type comes back from Load exactly as
// Append wrote it, from the cache and from disk after resume.
func TestPayloadRoundTrip_RT3(t *testing.T) {
	s := newTestStore(t, testOptions())
	var written []Entry
	for _, e := range allPayloads() {
		written = append(written, mustAppend(t, s, e))
	}
	check := func(s *Store, from string) {
		for _, w := range written {
			got, err := s.Load(w.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(normal(got), normal(w)) {
				t.Errorf("%s %s entry:\n got %+v\nwant %+v", from, w.Type, got, w)
			}
		}
	}
	check(s, "cache")
	s2, rep := reopen(t, s, Options{CacheEntries: -1})
	if !rep.Clean() || rep.Entries != len(written)+1 {
		t.Fatalf("report %v", rep)
	}
	check(s2, "disk")
}

// normal compares entries by their JSON form (time.Time keeps no monotonic
// reading after decoding, RawMessage may differ in spacing).
func normal(e Entry) string {
	b, _ := json.Marshal(e)
	return string(b)
}

// TestUnknownTypesKept_RT3: an entry of a type this version does not know is
// indexed, kept in the tree, reported, and loads with Raw set; a foreign line
// with keys in another order is read through the full decoder.
func TestUnknownTypesKept_RT3(t *testing.T) {
	path := copyFixture(t, "s_rewound.jsonl")
	before := readFile(t, path)
	s, rep, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rep.UnknownTypes["telemetry"] != 1 || rep.BadLineCount != 0 || rep.Torn != nil || rep.Entries != 11 {
		t.Fatalf("report: %v", rep)
	}
	e, err := s.Load("b2000009")
	if err != nil {
		t.Fatal(err)
	}
	if e.Type != "telemetry" || !bytes.Contains(e.Raw, []byte(`"latencyMs":812`)) || e.Parent() != "b2000008" {
		t.Fatalf("unknown entry loaded as %+v", e)
	}
	foreign, err := s.Load("b200000a")
	if err != nil || foreign.User == nil || !strings.Contains(foreign.User.Text, "another order \u2014") || foreign.Raw != nil {
		t.Fatalf("foreign line: %+v, %v", foreign, err)
	}
	if m, _ := s.Meta("b200000a"); m.Tokens != 14 || s.parentOf(m) != "b2000009" || m.Type != TypeUser {
		t.Fatalf("foreign meta %+v", m)
	}
	s.Close()
	if !bytes.Equal(before, readFile(t, path)) {
		t.Fatal("Open changed the file")
	}
}

func copyFixture(t *testing.T, name string) string {
	t.Helper()
	b := readFile(t, filepath.Join("..", "testdata", "sessions", name))
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRewindBranches_RT4: rewind appends a settings entry hanging from the
// target; new entries branch from there; the old branch stays; resume
// restores the leaf; earlier Path snapshots are untouched.
func TestRewindBranches_RT4(t *testing.T) {
	s := newTestStore(t, testOptions())
	root := s.Leaf()
	a := mustAppend(t, s, user("a"))
	b := mustAppend(t, s, user("b"))
	c := mustAppend(t, s, user("c"))
	snap := s.Path()
	snapIDs := pathIDs(snap)

	if _, err := s.Rewind("zzzz"); err == nil || !strings.Contains(err.Error(), `entry "zzzz" is not in the session`) {
		t.Fatalf("rewind to an unknown id: %v", err)
	}
	rw, err := s.Rewind(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rw.Type != TypeSettings || rw.Settings.RewindTo != a.ID || rw.Parent() != a.ID || s.Leaf() != rw.ID {
		t.Fatalf("rewind entry %+v, leaf %q", rw, s.Leaf())
	}
	d := mustAppend(t, s, user("d"))
	want := []string{root, a.ID, rw.ID, d.ID}
	if got := pathIDs(s.Path()); !reflect.DeepEqual(got, want) {
		t.Fatalf("path after rewind+append = %v, want %v", got, want)
	}
	if !reflect.DeepEqual(pathIDs(snap), snapIDs) {
		t.Fatalf("an earlier Path snapshot changed: %v, was %v", pathIDs(snap), snapIDs)
	}
	if _, ok := s.Meta(c.ID); !ok || s.Len() != 6 {
		t.Fatalf("abandoned branch lost: len %d", s.Len())
	}

	// Rewinding onto the other branch walks up to the common ancestor.
	rw2, err := s.Rewind(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	want2 := []string{root, a.ID, b.ID, c.ID, rw2.ID}
	if got := pathIDs(s.Path()); !reflect.DeepEqual(got, want2) {
		t.Fatalf("path after rewind to the old branch = %v, want %v", got, want2)
	}
	for i, m := range s.Path() {
		if int(m.Depth) != i {
			t.Fatalf("path[%d] has depth %d", i, m.Depth)
		}
	}

	s2, rep := reopen(t, s, testOptions())
	if !rep.Clean() || s2.Leaf() != rw2.ID || !reflect.DeepEqual(pathIDs(s2.Path()), want2) {
		t.Fatalf("resume: leaf %q path %v report %v", s2.Leaf(), pathIDs(s2.Path()), rep)
	}
	e := mustAppend(t, s2, user("e"))
	if e.Parent() != rw2.ID {
		t.Fatalf("append after resume hangs from %q, want %q", e.Parent(), rw2.ID)
	}
}

// TestResumeRestoresLeafAndCapsule_RT4 uses the rewound fixture: the leaf path
// goes through the rewind entry, and the latest capsule load on it is found.
func TestResumeRestoresLeafAndCapsule_RT4(t *testing.T) {
	s, _, err := Open(copyFixture(t, "s_rewound.jsonl"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := []string{"d8fe3047", "b2000001", "69fc33ee", "b2000007", "b2000008", "b2000009", "b200000a"}
	if got := pathIDs(s.Path()); !reflect.DeepEqual(got, want) {
		t.Fatalf("path = %v, want %v", got, want)
	}
	m, ok := s.LatestOnPath(TypeCapsule, TypeCapsuleLoad)
	if !ok || m.ID != "b2000008" {
		t.Fatalf("latest capsule on path = %+v, %v", m, ok)
	}
	if _, ok := s.LatestOnPath(TypeCheckpoint); ok {
		t.Fatal("found a checkpoint on a path that has none")
	}
	// The settings entry with autoCompact=false is on the abandoned branch.
	if i := FindLatest(s.Path(), TypeSettings); i != 2 {
		t.Fatalf("latest settings on path at %d, want 2 (the rewind)", i)
	}
	if h, ok := s.Header(); !ok || h.SessionID != "s_rewound" || h.Version != 1 {
		t.Fatalf("header %+v %v", h, ok)
	}
}

// TestTornLastLine_RT5 truncates a file at several points inside its last
// line: Open ignores and reports the torn bytes, keeps every complete entry,
// leaves the file as is; the next append starts on a fresh line; a later Open
// reports the old torn bytes as one bad line and nothing torn.
func TestTornLastLine_RT5(t *testing.T) {
	src := newTestStore(t, testOptions())
	for i := range 5 {
		mustAppend(t, src, user(fmt.Sprint("entry ", i)))
	}
	last := mustAppend(t, src, Entry{Type: TypeCapsule, Capsule: &Capsule{CheckpointID: "ck_x", Trigger: "user", Quality: "full",
		State: capsule.State{Goal: "g", Decisions: []capsule.Decision{{Decision: "d"}}}}})
	src.Close()
	full := readFile(t, src.FilePath())
	lastStart := bytes.LastIndexByte(full[:len(full)-1], '\n') + 1
	lastLine := full[lastStart : len(full)-1]
	nested := lastStart + bytes.LastIndex(lastLine, []byte("}]}")) + 3 // just after a nested '}'... plus ']}'
	cuts := map[string]int{
		"one byte":              lastStart + 1,
		"inside the header":     lastStart + 20,
		"after the header":      lastStart + bytes.Index(lastLine, []byte(`"capsule":`)),
		"after a nested brace":  nested,
		"all but the newline":   len(full) - 1,
		"inside a string value": lastStart + bytes.Index(lastLine, []byte(`"ck_x"`)) + 3,
	}
	for name, cut := range cuts {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.jsonl")
			if err := os.WriteFile(path, full[:cut], 0o600); err != nil {
				t.Fatal(err)
			}
			s, rep, err := Open(path, testOptions())
			if err != nil {
				t.Fatal(err)
			}
			if rep.Torn == nil || rep.Torn.Offset != int64(lastStart) || rep.Torn.Bytes != cut-lastStart {
				t.Fatalf("torn = %+v, want offset %d, %d bytes", rep.Torn, lastStart, cut-lastStart)
			}
			if rep.Entries != 6 || rep.BadLineCount != 0 || s.Leaf() == last.ID {
				t.Fatalf("report %v, leaf %q", rep, s.Leaf())
			}
			if !bytes.Equal(readFile(t, path), full[:cut]) {
				t.Fatal("Open changed the file")
			}
			next := mustAppend(t, s, user("after the crash"))
			after := readFile(t, path)
			if !bytes.HasPrefix(after, full[:cut]) {
				t.Fatal("append rewrote the torn bytes")
			}
			m, _ := s.Meta(next.ID)
			if m.Offset == 0 || after[m.Offset-1] != '\n' {
				t.Fatalf("new entry does not start on a fresh line: %q", after[lastStart:])
			}
			s.Close()

			s2, rep2, err := Open(path, testOptions())
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			if rep2.Torn != nil || rep2.BadLineCount != 1 || rep2.BadLines[0].Line != 7 || rep2.BadLines[0].Offset != int64(lastStart) {
				t.Fatalf("second open: %v (%+v)", rep2, rep2.BadLines)
			}
			if rep2.Entries != 7 || s2.Leaf() != next.ID {
				t.Fatalf("second open: %d entries, leaf %q, want 7 and %q", rep2.Entries, s2.Leaf(), next.ID)
			}
			if _, ok := s2.Meta(last.ID); ok {
				t.Fatal("the torn entry came back as an entry")
			}
			if e, err := s2.Load(next.ID); err != nil || e.User.Text != "after the crash" {
				t.Fatalf("load after heal: %+v, %v", e, err)
			}
		})
	}
}

// TestTornFixture_RT5 opens the shipped torn fixture.
func TestTornFixture_RT5(t *testing.T) {
	path := copyFixture(t, "s_torn01.jsonl")
	s, rep, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rep.Torn == nil || rep.Torn.Bytes != 90 || rep.Entries != 6 || s.Leaf() != "a1000005" {
		t.Fatalf("report %v, leaf %q", rep, s.Leaf())
	}
	if !strings.Contains(rep.String(), "torn last line") {
		t.Fatalf("report string %q", rep.String())
	}
}

// TestLockRefusesSecondStore_RT5: a second Store on an open session file is
// refused with a clear error until the first closes.
func TestLockRefusesSecondStore_RT5(t *testing.T) {
	s := newTestStore(t, testOptions())
	path := s.FilePath()
	_, _, err := Open(path, Options{})
	want := fmt.Sprintf("session %s is in use by another process", path)
	if !errors.Is(err, ErrInUse) || err.Error() != want {
		t.Fatalf("second open: %v, want %q", err, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(user("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	s2, _, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	s2.Close()
}

func TestCreateErrors(t *testing.T) {
	dir := t.TempDir()
	for _, id := range []string{"", "..", "a/b"} {
		if _, err := Create(dir, SessionHeader{SessionID: id}, Options{}); err == nil {
			t.Errorf("Create with sessionId %q succeeded", id)
		}
	}
	s, err := Create(dir, SessionHeader{SessionID: "dup"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := Create(dir, SessionHeader{SessionID: "dup"}, Options{}); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("Create over an existing file: %v", err)
	}
	if _, _, err := Open(filepath.Join(dir, "missing.jsonl"), Options{}); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("Open of a missing file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.jsonl")); err == nil {
		t.Fatal("Open created the missing file")
	}
}

// TestLongLines: entries longer than the scan buffer, in our layout and in a
// foreign one, and CRLF line ends, resume correctly.
func TestLongLines(t *testing.T) {
	s := newTestStore(t, testOptions())
	big := strings.Repeat("0123456789abcdef", 200_000) // 3.2 MB
	a := mustAppend(t, s, Entry{Type: TypeToolResult, ToolResult: &ToolResult{ToolCallID: "c", ToolName: "bash", OK: true, Content: big}})
	b := mustAppend(t, s, user("small"))
	path := s.FilePath()
	s.Close()
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, `{"type":"user","id":"foreign1","parentId":%q,"timestamp":"2026-07-01T12:00:00Z","user":{"text":%q}}`+"\r\n", b.ID, big)
	fmt.Fprintf(f, `{"type":"user","id":"foreign2","parentId":"foreign1","timestamp":"2026-07-01T12:00:01Z","user":{"text":"crlf"}}`+"\r\n")
	f.Close()
	s2, rep, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if !rep.Clean() || rep.Entries != 5 || s2.Leaf() != "foreign2" || len(s2.Path()) != 5 {
		t.Fatalf("report %v, leaf %q, path %v", rep, s2.Leaf(), pathIDs(s2.Path()))
	}
	for id, want := range map[string]string{a.ID: big, "foreign1": big, "foreign2": "crlf"} {
		e, err := s2.Load(id)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if e.User != nil {
			got = e.User.Text
		} else {
			got = e.ToolResult.Content
		}
		if got != want {
			t.Fatalf("%s: loaded %d bytes, want %d", id, len(got), len(want))
		}
	}
}

// TestLoadWhileAppending: Load may run on other goroutines while the owner
// appends (run with -race).
func TestLoadWhileAppending(t *testing.T) {
	s := newTestStore(t, Options{Sync: SyncNever, CacheEntries: 8, CacheBytes: 4096})
	var wg conc.WaitGroup
	var failures atomic.Int32
	done := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				for _, m := range s.All() {
					e, err := s.Load(m.ID)
					if err != nil || e.ID != m.ID {
						failures.Add(1)
					}
				}
			}
		})
	}
	for i := range 300 {
		mustAppend(t, s, user(strings.Repeat("y", i)))
	}
	close(done)
	wg.Wait()
	if failures.Load() != 0 {
		t.Fatalf("%d loads failed", failures.Load())
	}
}

func TestLineCacheBounds(t *testing.T) {
	c := newLineCache(3, 10)
	c.put("a", []byte("1234"))
	c.put("b", []byte("1234"))
	c.put("c", []byte("12"))
	if _, ok := c.get("a"); !ok {
		t.Fatal("a evicted early")
	}
	c.put("d", []byte("12")) // 12 bytes > 10: evicts the least recent, b
	if _, ok := c.get("b"); ok {
		t.Fatal("b should be evicted by the byte bound")
	}
	c.put("e", []byte("1")) // 4 entries > 3: evicts c
	if _, ok := c.get("c"); ok {
		t.Fatal("c should be evicted by the entry bound")
	}
	c.put("huge", make([]byte, 11))
	if _, ok := c.get("huge"); ok || c.bytes > 10 || c.order.Len() > 3 {
		t.Fatalf("bounds broken: %d bytes, %d entries", c.bytes, c.order.Len())
	}
}

func TestList(t *testing.T) {
	dir := t.TempDir()
	if got, err := List(filepath.Join(dir, "none")); err != nil || got != nil {
		t.Fatalf("missing dir: %v, %v", got, err)
	}
	for _, name := range []string{"s_basic01.jsonl", "s_rewound.jsonl", "s_torn01.jsonl"} {
		b := readFile(t, filepath.Join("..", "testdata", "sessions", name))
		os.WriteFile(filepath.Join(dir, name), b, 0o600)
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("{}\n"), 0o600)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(dir, "s_basic01.jsonl"), old, old)
	got, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	entries := map[string]int{}
	for _, in := range got {
		entries[in.SessionID] = in.Entries
	}
	want := map[string]int{"s_basic01": 11, "s_rewound": 11, "s_torn01": 6}
	if !reflect.DeepEqual(entries, want) || got[len(got)-1].SessionID != "s_basic01" {
		t.Fatalf("List = %+v", got)
	}
	// A healed torn line is not counted.
	s, _, err := Open(filepath.Join(dir, "s_torn01.jsonl"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, user("after"))
	s.Close()
	got, _ = List(dir)
	if got[0].SessionID != "s_torn01" || got[0].Entries != 7 {
		t.Fatalf("after heal: %+v", got[0])
	}
}

// TestDamagedLines_RT3 feeds resume lines that are not entries, or entries
// with impossible links: each is skipped or kept as a root and reported,
// never fatal.
func TestDamagedLines_RT3(t *testing.T) {
	const ts = `"timestamp":"2026-07-01T12:00:00Z"`
	lines := []string{
		`{"id":"r","parentId":null,"type":"session",` + ts + `,"session":{"version":1,"sessionId":"d"}}`,
		`{"id":"self","parentId":"self","type":"user",` + ts + `,"user":{"text":"own parent"}}`,
		`{"id":"orphan","parentId":"gone","type":"user",` + ts + `,"user":{"text":"x"}}`,
		`not json at all`,
		`{"parentId":"r","type":"user",` + ts + `}`,
		`{"id":"r","parentId":null,"type":"user",` + ts + `,"user":{"text":"dup"}}`,
		`{"id":"notype","parentId":"r",` + ts + `}`,
		``,
		`{"id":"child","parentId":"orphan","type":"user",` + ts + `,"user":{"text":"y"}}`,
	}
	path := filepath.Join(t.TempDir(), "d.jsonl")
	os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
	s, rep, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rep.Entries != 4 || rep.BadLineCount != 4 || rep.MissingParentCount != 2 {
		t.Fatalf("report %v", rep)
	}
	var badAt []int
	for _, b := range rep.BadLines {
		badAt = append(badAt, b.Line)
	}
	if !reflect.DeepEqual(badAt, []int{4, 5, 6, 7}) || !strings.Contains(rep.BadLines[2].Err.Error(), `duplicate entry id "r"`) {
		t.Fatalf("bad lines %+v", rep.BadLines)
	}
	if got := pathIDs(s.Path()); !reflect.DeepEqual(got, []string{"orphan", "child"}) {
		t.Fatalf("path %v", got)
	}
	if m, _ := s.Meta("r"); m.Type != TypeSession {
		t.Fatalf("duplicate replaced the first entry: %+v", m)
	}
}

// TestOpenEstimatesEntriesWithoutTokens_RG4: lines stored without a token
// estimate (hand-written, or a foreign writer's) get one on Open, so a
// hand-written session is never budgeted as free and the hard limit still
// holds (R-G4); entries that carry an estimate are not re-estimated, and
// entries the model never sees stay at 0. The file is not changed (R-T1).
func TestOpenEstimatesEntriesWithoutTokens_RG4(t *testing.T) {
	lines := []string{
		`{"id":"h","parentId":null,"type":"session","timestamp":"2026-07-01T12:00:00Z","session":{"sessionId":"s_hand","workspace":"/ws"}}`,
		`{"id":"u1","parentId":"h","type":"user","timestamp":"2026-07-01T12:00:01Z","user":{"text":"twelve chars"}}`,
		`{"id":"a1","parentId":"u1","type":"assistant","timestamp":"2026-07-01T12:00:02Z","tokens":77,"assistant":{"text":"has its own"}}`,
		`{"id":"s1","parentId":"a1","type":"settings","timestamp":"2026-07-01T12:00:03Z","settings":{"autoCompact":false}}`,
		`{"id":"r1","parentId":"s1","type":"tool_result","timestamp":"2026-07-01T12:00:04Z","toolResult":{"toolCallId":"c1","content":"0123456789"}}`,
	}
	path := filepath.Join(t.TempDir(), "hand.jsonl")
	data := []byte(strings.Join(lines, "\n") + "\n")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	est := func(e *Entry) int {
		calls.Add(1)
		switch {
		case e.User != nil:
			return 1000 + len(e.User.Text)
		case e.ToolResult != nil:
			return 2000 + len(e.ToolResult.Content)
		}
		return 5
	}
	for _, tc := range []struct {
		name      string
		opts      Options
		want      map[string]int
		estimated int
	}{
		{"with an estimator", Options{Estimate: est}, map[string]int{"h": 0, "u1": 1012, "a1": 77, "s1": 0, "r1": 2010}, 2},
		{"without one", Options{}, map[string]int{"h": 0, "u1": 0, "a1": 77, "s1": 0, "r1": 0}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls.Store(0)
			s, rep, err := Open(path, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got := map[string]int{}
			for _, m := range s.Path() {
				got[m.ID] = int(m.Tokens)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("tokens %v, want %v", got, tc.want)
			}
			if rep.Estimated != tc.estimated || int(calls.Load()) != tc.estimated {
				t.Errorf("report says %d estimated, estimator called %d times; want %d", rep.Estimated, calls.Load(), tc.estimated)
			}
			if tc.estimated > 0 && !strings.Contains(rep.String(), "2 entries stored without a token estimate") {
				t.Errorf("report %q does not say what was estimated", rep.String())
			}
		})
	}
	if !bytes.Equal(readFile(t, path), data) {
		t.Fatal("Open changed the file")
	}
}

// TestMetaTimestampKeepsInstantAndOffset: the index keeps an entry's
// timestamp as its instant and its zone's offset (zone names are not
// kept), and a missing one as missing; live, resumed by a scan and resumed
// from the index file alike.
func TestMetaTimestampKeepsInstantAndOffset(t *testing.T) {
	for _, ts := range []time.Time{
		time.Date(2026, 7, 1, 12, 0, 0, 123456789, time.UTC),
		time.Date(2026, 7, 1, 12, 0, 0, 0, time.FixedZone("IST", 5*3600+1800)),
		time.Date(1969, 12, 31, 23, 59, 59, 0, time.FixedZone("", -8*3600)),
		{},
	} {
		var m Meta
		m.setTimestamp(ts)
		got := m.Timestamp()
		_, gotOff := got.Zone()
		_, wantOff := ts.Zone()
		if !got.Equal(ts) || gotOff != wantOff || got.IsZero() != ts.IsZero() {
			t.Errorf("%v: Timestamp() = %v", ts, got)
		}
		if ts.Location() == time.UTC && got.Location() != time.UTC {
			t.Errorf("%v: UTC came back as %v", ts, got.Location())
		}
	}
}

// TestHugeTokenEstimateSaturates: a hand-edited or hostile line whose token
// estimate does not fit 32 bits reads as the largest estimate, so the budget
// errs on the side of compacting, never as a negative count.
func TestHugeTokenEstimateSaturates(t *testing.T) {
	const ts = `"timestamp":"2026-07-01T12:00:00Z"`
	lines := `{"id":"h","parentId":null,"type":"session",` + ts + `,"session":{"version":1,"sessionId":"big"}}` + "\n" +
		`{"id":"u1","parentId":"h","type":"user",` + ts + `,"tokens":99999999999,"user":{"text":"hi"}}` + "\n"
	path := filepath.Join(t.TempDir(), "big.jsonl")
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	s, _, err := OpenReadOnly(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m, ok := s.Meta("u1")
	if !ok || m.Tokens != math.MaxInt32 {
		t.Fatalf("u1: %v %+v; want %d tokens", ok, m, math.MaxInt32)
	}
}
