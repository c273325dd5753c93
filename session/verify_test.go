package session

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResumeAndVerifyClassifyAlike_RT3_RT5: resume and verify read the
// same damaged file through one scan. Each damaged line is named by its
// line number in both; the entries resume indexes are the ones verify
// counts; a line whose header is valid but whose payload is not is kept by
// both, reported by verify and by the first load, never fatal.
func TestResumeAndVerifyClassifyAlike_RT3_RT5(t *testing.T) {
	const ts = `"timestamp":"2026-07-01T12:00:00Z"`
	lines := []string{
		`{"id":"h","parentId":null,"type":"session",` + ts + `,"session":{"version":1,"sessionId":"d"}}`,
		`{"id":"u1","parentId":"h","type":"user",` + ts + `,"tokens":2,"user":{"text":"hi"}}`,
		`this is not json`,
		`{"id":"u1","parentId":"h","type":"user",` + ts + `,"tokens":2,"user":{"text":"dup"}}`,
		`{"id":"o1","parentId":"nowhere","type":"user",` + ts + `,"tokens":2,"user":{"text":"orphan"}}`,
		`{"id":"p1","parentId":"u1","type":"user",` + ts + `,"tokens":2,"user":{"text":123}}`,
		`{"id":"a1","parentId":"p1","type":"assistant",` + ts + `,"tokens":2,"assistant":{"toolCalls":[{"id":"c1","name":"bash","arguments":{}}]}}`,
		`{"id":"r1","parentId":"a1","type":"tool_result",` + ts + `,"tokens":2,"toolResult":{"toolCallId":"c9","toolName":"bash","ok":true,"content":""}}`,
		`{"id":"w1","parentId":"r1","type":"weird",` + ts + `}`,
		`{"id":"t1","parentId":"w1","type":"user",` + ts,
	}
	cases := []struct {
		line int
		what string
	}{
		{3, "not an entry"},
		{4, "duplicate entry id u1 (first at line 2)"},
		{5, "parent nowhere is not earlier in the file"},
		{6, `entry "p1" cannot be decoded`},
		{8, `no tool call "c9" before it`},
		{10, "torn last line"},
	}
	path := filepath.Join(t.TempDir(), "d.jsonl")
	os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600) // the last line torn
	v, err := VerifyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, rep, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	all := strings.Join(v.Problems, "\n")
	for _, c := range cases {
		want := fmt.Sprintf("line %d: ", c.line)
		found := false
		for _, p := range v.Problems {
			if strings.HasPrefix(p, want) && strings.Contains(p, c.what) {
				found = true
			}
		}
		if !found {
			t.Errorf("verify does not report line %d (%s):\n%s", c.line, c.what, all)
		}
	}
	if v.ProblemCount != len(cases) {
		t.Errorf("verify found %d problems, want %d:\n%s", v.ProblemCount, len(cases), all)
	}
	if v.Entries != rep.Entries || rep.Entries != 7 {
		t.Errorf("verify indexed %d entries, resume %d; want 7", v.Entries, rep.Entries)
	}
	for _, p := range rep.Problems {
		if !strings.Contains(all, p) {
			t.Errorf("resume reports %q, verify does not", p)
		}
	}
	if len(v.Notes) != 1 || !strings.Contains(v.Notes[0], `line 9: entry w1 has type "weird"`) {
		t.Errorf("notes %v", v.Notes)
	}
	_, bad, err := s.LoadLenient("p1")
	if err != nil || bad == nil || bad.Line != 6 {
		t.Errorf("resume's first load of the poisoned entry: %+v, %v; want line 6", bad, err)
	}
	if got := pathIDs(s.Path()); strings.Join(got, " ") != "h u1 p1 a1 r1 w1" {
		t.Errorf("resumed path %v", got)
	}
}

// TestLoadManyMatchesLoad_RT3: the batched loader of a path gives what
// Load gives, entry for entry, across reads that span gaps and branches,
// and a poisoned entry as its header alone, reported once (R-T3).
func TestLoadManyMatchesLoad_RT3(t *testing.T) {
	s := newTestStore(t, testOptions())
	var ids []string
	for i := range 50 {
		ids = append(ids, mustAppend(t, s, user(strings.Repeat(fmt.Sprint(i), i*100))).ID)
	}
	if _, err := s.Rewind(ids[20]); err != nil { // a branch: the path skips lines 23..52
		t.Fatal(err)
	}
	mustAppend(t, s, user("on the branch"))
	path := s.FilePath()
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, `{"id":"bad","parentId":%q,"type":"user","timestamp":"2026-07-01T12:00:00Z","tokens":3,"user":{"text":[1]}}`+"\n", s.Leaf())
	f.Close()
	s2, _ := reopen(t, s, testOptions())
	var heard int
	s2.OnUndecodable(func(BadLine) { heard++ })
	p := s2.Path()
	for round := range 2 {
		got, err := s2.LoadMany(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range p {
			want, err := s2.Load(m.ID)
			if m.ID == "bad" {
				if err == nil || got[i].User != nil || got[i].ID != "bad" {
					t.Fatalf("poisoned entry: %+v", got[i])
				}
				continue
			}
			if err != nil || normal(want) != normal(got[i]) {
				t.Fatalf("round %d, entry %d: LoadMany %s, Load %s", round, i, normal(got[i]), normal(want))
			}
		}
	}
	if heard != 1 {
		t.Fatalf("the poisoned entry was reported %d times, want once", heard)
	}
}

// TestHeaderOnlyKeepsTheParent_RT3: an entry whose payload does not decode
// reads as its header, parent included: an entry of the file, or the id
// its line names when that is not in the file.
func TestHeaderOnlyKeepsTheParent_RT3(t *testing.T) {
	const ts = `"timestamp":"2026-07-01T12:00:00Z"`
	lines := []string{
		`{"id":"h","parentId":null,"type":"session",` + ts + `,"session":{"version":1,"sessionId":"d"}}`,
		`{"id":"u1","parentId":"h","type":"user",` + ts + `,"tokens":2,"user":{"text":"hi"}}`,
		`{"id":"p1","parentId":"u1","type":"user",` + ts + `,"tokens":2,"user":{"text":123}}`,
		`{"id":"o1","parentId":"nowhere","type":"user",` + ts + `,"tokens":2,"user":{"text":456}}`,
	}
	path := filepath.Join(t.TempDir(), "d.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, _, err := OpenReadOnly(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for id, parent := range map[string]string{"p1": "u1", "o1": "nowhere"} {
		e, bad, err := s.LoadLenient(id)
		if err != nil || bad == nil || e.ParentID == nil || *e.ParentID != parent || e.User != nil {
			t.Errorf("LoadLenient(%s) = %+v (parent %v), %v, %v; want its header, parent %s", id, e, e.ParentID, bad, err, parent)
		}
	}
	m, _ := s.Meta("p1")
	es, err := s.LoadMany([]Meta{m})
	if err != nil || es[0].ParentID == nil || *es[0].ParentID != "u1" {
		t.Errorf("LoadMany(p1) = %+v, %v", es, err)
	}
}

// TestVerifyListsProblemsInOrderBounded_RT3: on a file that is mostly
// problems, verify lists the first ones in line order, capsules' included
// (whose first kept entry is later in the file or nowhere), and counts the
// rest without holding them.
func TestVerifyListsProblemsInOrderBounded_RT3(t *testing.T) {
	const ts = `"timestamp":"2026-07-01T12:00:00Z"`
	var b strings.Builder
	b.WriteString(`{"id":"h","parentId":null,"type":"session",` + ts + `,"session":{"version":1,"sessionId":"many"}}` + "\n")
	prev, want := "h", 0
	for i := range 1500 {
		id := fmt.Sprintf("e%04d", i)
		switch i % 10 {
		case 3: // keeps an entry later in the file
			fmt.Fprintf(&b, `{"id":"%s","parentId":"%s","type":"capsule",%s,"tokens":4,"capsule":{"checkpointId":"ck_%d","trigger":"user","firstKeptEntryId":"e%04d","tokensBefore":9,"tokensAfter":4,"quality":"full","state":{}}}`+"\n", id, prev, ts, i, i+1)
		case 6: // keeps an entry that is nowhere
			fmt.Fprintf(&b, `{"id":"%s","parentId":"%s","type":"capsule",%s,"tokens":4,"capsule":{"checkpointId":"ck_%d","trigger":"user","firstKeptEntryId":"gone","tokensBefore":9,"tokensAfter":4,"quality":"full","state":{}}}`+"\n", id, prev, ts, i)
		default: // a payload that does not decode
			fmt.Fprintf(&b, `{"id":"%s","parentId":"%s","type":"user",%s,"tokens":3,"user":{"text":%d}}`+"\n", id, prev, ts, i)
		}
		prev, want = id, want+1
	}
	path := filepath.Join(t.TempDir(), "many.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := VerifyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if v.ProblemCount != want || len(v.Problems) != maxProblems {
		t.Fatalf("%d problems, %d listed; want %d, %d", v.ProblemCount, len(v.Problems), want, maxProblems)
	}
	for k, p := range v.Problems {
		var line int
		if _, err := fmt.Sscanf(p, "line %d:", &line); err != nil || line != k+2 {
			t.Fatalf("problem %d is %q, want line %d's", k, p, k+2)
		}
		switch (line - 2) % 10 {
		case 3:
			if !strings.Contains(p, "is not on its path") {
				t.Fatalf("line %d: %q", line, p)
			}
		case 6:
			if !strings.Contains(p, "is not in the file") {
				t.Fatalf("line %d: %q", line, p)
			}
		default:
			if !strings.Contains(p, "cannot be decoded") {
				t.Fatalf("line %d: %q", line, p)
			}
		}
	}
}
