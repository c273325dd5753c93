package session

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func fixtureSeeds(f *testing.F) [][]byte {
	paths, _ := filepath.Glob(filepath.Join("..", "testdata", "sessions", "*.jsonl"))
	if len(paths) == 0 {
		f.Fatal("no fixtures in testdata/sessions")
	}
	var files [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		files = append(files, b)
	}
	return files
}

// headerKeys are the keys whose later occurrence on a line makes
// encoding/json's answer (last key wins, case-insensitive, escaped keys)
// differ from the prefix, which our writer never produces.
var headerKeys = [][]byte{[]byte(`"id"`), []byte(`"parentid"`), []byte(`"type"`), []byte(`"timestamp"`), []byte(`"tokens"`)}

// FuzzDecodeLine: decoding any line never panics, and whenever the fast header
// scanner accepts a line that encoding/json also accepts, both read the same
// header, so resume's fast path agrees with Load.
func FuzzDecodeLine(f *testing.F) {
	for _, file := range fixtureSeeds(f) {
		for _, l := range bytes.Split(file, []byte("\n")) {
			f.Add(l)
		}
	}
	f.Add([]byte(`{"id":"a","parentId":null,"type":"user","timestamp":"2026-01-01T00:00:00Z","tokens":0,"user":{"text":"x"}}`))
	f.Add([]byte(`{"id":"a","parentId":"","type":"x","timestamp":"2026-01-01T00:00:00+01:00"}`))
	f.Add([]byte(`{"id":"a","parentId":null,"type":"user","timestamp":"2026-07-01T12:00:01,5Z","user":{"text":"x"}}`))
	f.Add([]byte(`{"id":"a","parentId":null,"type":"user","timestamp":"2026-07-01T12:00:01+24:00","user":{"text":"x"}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := DecodeLine(line)
		if err == nil && !KnownType(e.Type) && !bytes.Equal(e.Raw, bytes.TrimSuffix(line, []byte("\r"))) {
			t.Fatalf("unknown type %q without its raw line", e.Type)
		}
		if len(line) == 0 {
			return
		}
		fast, ok := fastHeader(line, line[len(line)-1])
		if var1 := (Entry{}); ok && err != nil && json.Unmarshal(bytes.TrimSuffix(line, []byte("\r")), &var1) == nil {
			// Open would index the line and Load fail on it.
			t.Fatalf("the header scanner and encoding/json accept %q, DecodeLine fails: %v", line, err)
		}
		slow, serr := slowHeader(line)
		if !ok || serr != nil {
			return
		}
		rest := bytes.ToLower(line[len(litID):])
		for _, k := range headerKeys {
			if bytes.Contains(rest, k) {
				return
			}
		}
		if bytes.Contains(line, []byte(`\`)) {
			return
		}
		if !bytes.Equal(fast.id, slow.id) || !bytes.Equal(fast.parent, slow.parent) || !bytes.Equal(fast.typ, slow.typ) ||
			!fast.ts.Equal(slow.ts) || fast.tokens != slow.tokens {
			t.Fatalf("fast header %+v, decoder %+v for %q", fast, slow, line)
		}
	})
}

// FuzzOpen: Open never panics on any file content; what it indexes is a
// consistent tree (the path is a parent chain ending at the leaf); the file is
// not changed by Open; and an append afterwards becomes the leaf of the next
// Open, whatever junk came before it.
//
// Each input writes and reopens a session file, so the fuzzer's minimizing
// of a new input (60 s by default) stalls progress; run it with
// -fuzzminimizetime 0 (about 1,000–4,000 inputs a second here).
func FuzzOpen(f *testing.F) {
	for _, file := range fixtureSeeds(f) {
		f.Add(file)
		f.Add(file[:len(file)*2/3])
		f.Add(append(bytes.Clone(file), "garbage\n{\"id\":\"x\"}\n{}"...))
	}
	f.Add([]byte(`{"id":"a","parentId":"a","type":"user","timestamp":"2026-07-01T12:00:00Z","user":{}}` + "\n" +
		`{"id":"b","parentId":"a","type":"x","timestamp":"2026-07-01T12:00:00Z"}` + "\r\n" + `{"id":"b"` + " #torn\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "s.jsonl")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		s, rep, err := Open(path, Options{Sync: SyncNever})
		if err != nil {
			t.Fatal(err)
		}
		p := s.Path()
		if rep.Entries != s.Len() || (len(p) > 0) != (s.Len() > 0) {
			t.Fatalf("%d entries, path %d", s.Len(), len(p))
		}
		for i := 1; i < len(p); i++ {
			if s.parentOf(p[i]) != p[i-1].ID || p[i].Depth != p[i-1].Depth+1 {
				t.Fatalf("path[%d] = %+v does not hang from %+v", i, p[i], p[i-1])
			}
		}
		for _, m := range s.All() {
			s.Load(m.ID) // may fail on a damaged payload, must not panic
		}
		if !bytes.Equal(data, readFileF(t, path)) {
			t.Fatal("Open changed the file")
		}
		e, err := s.Append(Entry{Type: TypeUser, Timestamp: time.Unix(1, 0), User: &UserMessage{Text: "probe"}})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		s2, rep2, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		if s2.Leaf() != e.ID || rep2.Torn != nil || rep2.Entries != rep.Entries+1 {
			t.Fatalf("after append: leaf %q want %q; %v (before: %v)", s2.Leaf(), e.ID, rep2, rep)
		}
		if got, err := s2.Load(e.ID); err != nil || got.User.Text != "probe" {
			t.Fatalf("probe entry: %+v %v", got, err)
		}
	})
}

func readFileF(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
