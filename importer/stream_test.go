package importer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soba-agent/soba-lsp/session"
)

// sessionShape reads a session file's leaf path with the random ids (entry
// and checkpoint) replaced by positions, so two imports of one source
// compare equal exactly when they wrote the same session.
func sessionShape(t *testing.T, path string) []string {
	t.Helper()
	s, rep, err := session.Open(path, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !rep.Clean() {
		t.Fatalf("%s: %v", path, rep)
	}
	pos := map[string]string{}
	var out []string
	for i, m := range s.Path() {
		pos[m.ID] = fmt.Sprint("#", i)
	}
	for _, m := range s.Path() {
		e, err := s.Load(m.ID)
		if err != nil {
			t.Fatal(err)
		}
		e.ID, e.ParentID = pos[e.ID], nil
		switch {
		case e.Session != nil, e.Settings != nil && e.Settings.RewindTo != "":
			e.Session, e.Timestamp = nil, time.Time{} // stamped at the import
			if e.Settings != nil {
				e.Settings = &session.Settings{RewindTo: pos[e.Settings.RewindTo]}
			}
		case e.Capsule != nil:
			c := *e.Capsule
			c.CheckpointID, c.FirstKeptEntryID, c.SourceFrom, c.SourceTo = "", pos[c.FirstKeptEntryID], pos[c.SourceFrom], pos[c.SourceTo]
			e.Capsule = &c
		case e.Checkpoint != nil:
			c := *e.Checkpoint
			c.CheckpointID = ""
			e.Checkpoint = &c
		}
		b, _ := json.Marshal(e)
		out = append(out, string(b))
	}
	return out
}

// TestStreamedImportMatchesInMemory_RT1: a pi session imported a window at
// a time (bounded memory) is the session the in-memory conversion writes,
// entry for entry, capsules built from entries already written included.
func TestStreamedImportMatchesInMemory_RT1(t *testing.T) {
	sources := map[string][]byte{}
	if data, err := os.ReadFile(filepath.Join("..", "testdata", "imports", "pi-v3.jsonl")); err == nil {
		sources["pi-v3"] = data
	} else {
		t.Fatal(err)
	}
	for _, name := range []string{"pi-mono__before-compaction.jsonl", "pi-mono__large-session.jsonl"} {
		if data, err := os.ReadFile(filepath.Join("..", "..", "shared", "transcripts", name)); err == nil {
			sources[name] = data
		}
	}
	// A long one with a compaction whose summarised entries were written
	// windows before it.
	var b strings.Builder
	b.WriteString(`{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00Z","cwd":"/p"}` + "\n")
	parent := "null"
	for i := range 300 {
		id := fmt.Sprintf("%08x", i+1)
		switch {
		case i == 250:
			fmt.Fprintf(&b, `{"type":"compaction","id":"%s","parentId":%s,"timestamp":"2026-01-01T00:00:01Z","summary":"## Goal\nkeep going","firstKeptEntryId":"%08x","tokensBefore":5000}`+"\n", id, parent, 240)
		case i%2 == 0:
			fmt.Fprintf(&b, `{"type":"message","id":"%s","parentId":%s,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"question %d"}}`+"\n", id, parent, i)
		default:
			fmt.Fprintf(&b, `{"type":"message","id":"%s","parentId":%s,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"assistant","content":[{"type":"text","text":"answer %d"}],"usage":{"input":%d,"output":3}}}`+"\n", id, parent, i, 100+i)
		}
		parent = `"` + id + `"`
	}
	sources["generated"] = []byte(b.String())

	for name, data := range sources {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "src.jsonl")
			os.WriteFile(src, data, 0o600)
			mem := filepath.Join(dir, "mem.jsonl")
			res, err := Convert(data, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := Write(res, mem, session.SessionHeader{}, session.Options{}); err != nil {
				t.Fatal(err)
			}
			for _, window := range []int{7, 4096} {
				old := streamWindow
				streamWindow = window
				streamed := filepath.Join(dir, fmt.Sprintf("streamed%d.jsonl", window))
				sres, err := ImportFile(src, streamed, session.SessionHeader{}, Options{}, session.Options{})
				streamWindow = old
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(sres.Stats) != fmt.Sprint(res.Stats) || len(sres.Problems) != len(res.Problems) {
					t.Errorf("window %d: stats %+v, %d problems; in memory %+v, %d", window, sres.Stats, len(sres.Problems), res.Stats, len(res.Problems))
				}
				want, got := sessionShape(t, mem), sessionShape(t, streamed)
				if len(want) != len(got) {
					t.Fatalf("window %d: %d entries on the path, in memory %d", window, len(got), len(want))
				}
				for i := range want {
					if want[i] != got[i] {
						t.Fatalf("window %d: entry %d differs:\nstreamed  %s\nin memory %s", window, i, got[i], want[i])
					}
				}
			}
		})
	}
}

// TestStreamedImportSkipsOverlongLines_RW1: a source line over the bound
// is reported with its number and skipped, never held whole.
func TestStreamedImportSkipsOverlongLines_RW1(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.jsonl")
	long := `{"type":"message","id":"00000002","parentId":"00000001","message":{"role":"user","content":"` + strings.Repeat("x", MaxLineBytes) + `"}}`
	os.WriteFile(src, []byte(`{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00Z","cwd":"/p"}`+"\n"+
		`{"type":"message","id":"00000001","parentId":null,"message":{"role":"user","content":"short"}}`+"\n"+long+"\n"+
		`{"type":"message","id":"00000003","parentId":"00000001","message":{"role":"user","content":"after"}}`+"\n"), 0o600)
	res, err := ImportFile(src, filepath.Join(dir, "out.jsonl"), session.SessionHeader{}, Options{}, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 1 || res.Problems[0].Line != 3 || !strings.Contains(res.Problems[0].Message, "longer than") || res.Stats.UserMessages != 2 {
		t.Fatalf("problems %v, %d user messages", res.Problems, res.Stats.UserMessages)
	}
}
