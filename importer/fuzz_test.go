package importer

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/session"
)

// FuzzConvert: a foreign file of any content never crashes an import, and
// whatever Convert accepts is a well-formed session: unique ids, every
// parent an earlier entry (or the header), every tool result after its call
// on its path, the leaf one of the entries; written through the store, it
// reopens clean (R-T2, R-T3, R-M3).
//
// Each input writes and reopens a session file, so the fuzzer's minimizing
// of a new input (60 s by default) stalls progress; run it with
// -fuzzminimizetime 0 (about 1,000–4,000 inputs a second here).
func FuzzConvert(f *testing.F) {
	for _, name := range []string{"pi-v3.jsonl", "claude-code.jsonl", "codex-rollout.jsonl", "opencode-export.json"} {
		data, err := os.ReadFile(filepath.Join("..", "testdata", "imports", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		lines := bytes.SplitAfter(data, []byte("\n"))
		f.Add(bytes.Join(lines[:len(lines)/2], nil))
		if !strings.HasSuffix(name, ".jsonl") {
			continue // a JSON document without one of its lines is mostly not JSON: the half above covers that
		}
		for i := range lines {
			if len(lines) > 3 { // each fixture without one of its lines: a missing parent, an orphan result
				f.Add(bytes.Join(append(append([][]byte{}, lines[:i]...), lines[i+1:]...), nil))
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := Convert(data, Options{Estimate: func(*session.Entry) int { return 1 }})
		if err != nil {
			return
		}
		seen := map[string]int{}
		calls := map[string]bool{}
		for i, e := range res.Entries {
			if e.ID == "" || e.Type == "" {
				t.Fatalf("entry %d has no id or type: %+v", i, e)
			}
			if _, dup := seen[e.ID]; dup {
				t.Fatalf("duplicate id %s", e.ID)
			}
			if p := e.Parent(); p != "" {
				if _, ok := seen[p]; !ok {
					t.Fatalf("entry %s: parent %s is not an earlier entry", e.ID, p)
				}
			}
			seen[e.ID] = i
			if e.Assistant != nil {
				for _, c := range e.Assistant.ToolCalls {
					calls[c.ID] = true
				}
			}
			if e.ToolResult != nil && !calls[e.ToolResult.ToolCallID] {
				t.Fatalf("tool result %s answers no earlier call %q", e.ID, e.ToolResult.ToolCallID)
			}
		}
		if _, ok := seen[res.Leaf]; res.Leaf != "" && !ok {
			t.Fatalf("leaf %s is not an entry", res.Leaf)
		}
		path := filepath.Join(t.TempDir(), "s_fuzz.jsonl")
		if err := Write(res, path, session.SessionHeader{ImportedFrom: "fuzz"}, session.Options{}); err != nil {
			t.Fatalf("Write: %v", err)
		}
		s, rep, err := session.Open(path, session.Options{})
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		defer s.Close()
		if !rep.Clean() {
			t.Fatalf("the written session does not reopen clean: %s", rep)
		}
		if res.Leaf != "" && s.Leaf() != res.Leaf {
			t.Fatalf("leaf after reopen %s, want %s", s.Leaf(), res.Leaf)
		}
	})
}
