package session

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"syscall"
	"testing"
	"time"
)

// indexEverything lets the tests' small transcripts get index files.
func indexEverything(t *testing.T) {
	t.Helper()
	prev := indexFileMinBytes
	indexFileMinBytes = 0
	t.Cleanup(func() { indexFileMinBytes = prev })
}

// varied writes a session with every kind of fact the index keeps: usage,
// settings, a checkpoint intent, a skill, a branch from a rewind, a
// timestamp with a zone. It returns the file's path, closed.
func varied(t *testing.T) string {
	t.Helper()
	s := newTestStore(t, testOptions())
	off := false
	mustAppend(t, s, user("first request"))
	call := mustAppend(t, s, Entry{Type: TypeAssistant, Assistant: &Assistant{Text: "reading",
		ToolCalls: []ToolCall{{ID: "c1", Name: "activate_skill", Arguments: []byte(`{}`)}}, Usage: &Usage{InputTokens: 900, OutputTokens: 40}}})
	mustAppend(t, s, Entry{Type: TypeToolResult, ToolResult: &ToolResult{ToolCallID: "c1", ToolName: "activate_skill", OK: true,
		Content: "skill text", Artifacts: &Artifacts{Skill: "review"}}})
	mustAppend(t, s, Entry{Type: TypeSettings, Settings: &Settings{AutoCompact: &off, ConsumedIntents: []string{"i1"}}})
	mustAppend(t, s, Entry{Type: TypeSettings, Settings: &Settings{Approval: "ask", Model: "alt", SummaryModel: "main"}})
	mustAppend(t, s, Entry{Type: TypeCheckpoint, Checkpoint: &Checkpoint{CheckpointID: "ck_1", Kind: "milestone", Intent: "milestone"}})
	zone := time.FixedZone("", 2*3600)
	mustAppend(t, s, Entry{Type: TypeUser, User: &UserMessage{Text: "from elsewhere"}, Timestamp: time.Date(2026, 7, 1, 14, 0, 0, 5, zone)})
	if _, err := s.Rewind(call.ID); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, user("on the branch"))
	path := s.FilePath()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// sameIndex compares two stores' indexes field by field (timestamps as
// instants with their offset).
func sameIndex(t *testing.T, what string, got, want *Store) {
	t.Helper()
	g, w := got.All(), want.All()
	if len(g) != len(w) {
		t.Fatalf("%s: %d entries, want %d", what, len(g), len(w))
	}
	var marked []int32 // capsules and entries with facts, by hand
	for i, m := range w {
		if m.Facts != nil || m.Type == TypeCapsule {
			marked = append(marked, int32(i))
		}
	}
	if len(marked) == 0 || !slices.Equal(got.Marked(), marked) || !slices.Equal(want.Marked(), marked) {
		t.Errorf("%s: marked %v (the scan's %v), want %v", what, got.Marked(), want.Marked(), marked)
	}
	for i := range g {
		a, b := g[i], w[i]
		// The instant and the zone's offset; zone names are not kept.
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: entry %d\n got %+v\nwant %+v", what, i, a, b)
		}
	}
	if !slices.Equal(pathIDs(got.Path()), pathIDs(want.Path())) || got.Leaf() != want.Leaf() {
		t.Errorf("%s: path %v, want %v", what, pathIDs(got.Path()), pathIDs(want.Path()))
	}
	gh, _ := got.Header()
	wh, _ := want.Header()
	if !reflect.DeepEqual(gh, wh) || got.lines != want.lines || got.size != want.size {
		t.Errorf("%s: header %+v lines %d size %d, want %+v %d %d", what, gh, got.lines, got.size, wh, want.lines, want.size)
	}
}

func openBoth(t *testing.T, path string) (fromIndex, scanned *Store, rep *OpenReport) {
	t.Helper()
	fromIndex, rep, err := OpenReadOnly(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fromIndex.Close() })
	scanned, srep, err := OpenReadOnly(path, Options{FullScan: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { scanned.Close() })
	if srep.FromIndexFile || rep.Entries != srep.Entries || rep.ProblemCount != srep.ProblemCount {
		t.Fatalf("reports: %+v, full scan %+v", rep, srep)
	}
	return fromIndex, scanned, rep
}

// TestIndexFileResumesAlike_RT4: resume from the index file restores the
// same leaf, path, header and facts as reading the transcript, and the
// session goes on from there (rewind to an old entry, appends, a
// duplicate id refused); the next close writes the index anew.
func TestIndexFileResumesAlike_RT4(t *testing.T) {
	indexEverything(t)
	path := varied(t)
	if _, err := os.Stat(path + IndexFileSuffix); err != nil {
		t.Fatalf("no index file after close: %v", err)
	}
	got, want, rep := openBoth(t, path)
	if !rep.FromIndexFile {
		t.Fatal("resume did not use the index file")
	}
	sameIndex(t, "from the index file", got, want)

	s, rep, err := Open(path, testOptions())
	if err != nil || !rep.FromIndexFile {
		t.Fatalf("Open: %v, from index file %v", err, rep != nil && rep.FromIndexFile)
	}
	first := s.All()[1] // the first request: older than anything find looks at without the map
	if e, err := s.Load(first.ID); err != nil || e.User == nil || e.User.Text != "first request" {
		t.Fatalf("Load(%s) = %+v, %v", first.ID, e, err)
	}
	if _, err := s.Rewind(first.ID); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, user("after the second rewind"))
	if _, err := s.Append(Entry{ID: first.ID, Type: TypeUser, User: &UserMessage{Text: "again"}}); err == nil {
		t.Error("an entry with an id already in the session was appended")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got, want, rep = openBoth(t, path)
	if !rep.FromIndexFile || got.Len() != 12 {
		t.Fatalf("after appends: from index file %v, %d entries", rep.FromIndexFile, got.Len())
	}
	sameIndex(t, "after appends", got, want)
	if p := pathIDs(got.Path()); p[len(p)-3] != first.ID {
		t.Errorf("path after the rewind: %v", p)
	}
}

// TestIndexFileIgnoredUnlessItIsTheTranscripts_RT1: the index file is used
// only for the very transcript it was written from, unchanged; otherwise
// resume reads the transcript, finds what is there, and reports nothing
// about the index file (it is a cache).
func TestIndexFileIgnoredUnlessItIsTheTranscripts_RT1(t *testing.T) {
	indexEverything(t)
	tests := []struct {
		name   string
		change func(t *testing.T, path string)
	}{
		{"another writer appended", func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString(`{"id":"x1","parentId":null,"type":"user","timestamp":"2026-07-01T12:00:00Z","tokens":3,"user":{"text":"x"}}` + "\n"); err != nil {
				t.Fatal(err)
			}
		}},
		{"a byte changed in place", func(t *testing.T, path string) {
			b := readFile(t, path)
			i := bytes.Index(b, []byte("first request"))
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte("F"), int64(i)); err != nil {
				t.Fatal(err)
			}
		}},
		{"the transcript replaced by a copy", func(t *testing.T, path string) {
			b := readFile(t, path)
			if err := os.WriteFile(path+".new", b, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(path+".new", path); err != nil {
				t.Fatal(err)
			}
		}},
		{"times set back after a change", func(t *testing.T, path string) {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			b := readFile(t, path)
			b[bytes.Index(b, []byte("reading"))] = 'R'
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		}},
		{"a flipped byte in the index file", func(t *testing.T, path string) {
			b := readFile(t, path+IndexFileSuffix)
			b[len(b)/2] ^= 0x40
			if err := os.WriteFile(path+IndexFileSuffix, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"a truncated index file", func(t *testing.T, path string) {
			if err := os.Truncate(path+IndexFileSuffix, 100); err != nil {
				t.Fatal(err)
			}
		}},
		{"an empty index file", func(t *testing.T, path string) {
			if err := os.WriteFile(path+IndexFileSuffix, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"another session's index file", func(t *testing.T, path string) {
			other := varied(t)
			if err := os.Rename(other+IndexFileSuffix, path+IndexFileSuffix); err != nil {
				t.Fatal(err)
			}
		}},
		{"an index file larger than the transcript", func(t *testing.T, path string) {
			fi, _ := os.Stat(path)
			if err := os.WriteFile(path+IndexFileSuffix, make([]byte, fi.Size()+1<<20), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"a link to the index file", func(t *testing.T, path string) {
			if err := os.Rename(path+IndexFileSuffix, path+".elsewhere"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Base(path)+".elsewhere", path+IndexFileSuffix); err != nil {
				t.Fatal(err)
			}
		}},
		{"a FIFO as the index file", func(t *testing.T, path string) {
			os.Remove(path + IndexFileSuffix)
			if err := syscall.Mkfifo(path+IndexFileSuffix, 0o600); err != nil {
				t.Skip("mkfifo:", err)
			}
		}},
		{"a directory as the index file", func(t *testing.T, path string) {
			os.Remove(path + IndexFileSuffix)
			if err := os.Mkdir(path+IndexFileSuffix, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := varied(t)
			time.Sleep(10 * time.Millisecond) // past the file system's timestamp granularity
			tt.change(t, path)
			done := make(chan struct{})
			go func() {
				defer close(done)
				got, want, rep := openBoth(t, path)
				if rep.FromIndexFile {
					t.Error("resume used the index file")
				}
				sameIndex(t, tt.name, got, want)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("resume hangs")
			}
		})
	}
}

// TestNoIndexFileForDamagedTranscript_RT3_RT5: a transcript with something
// for resume to report (a torn last line, a bad line, an unknown type) gets
// no index file, so every resume reads it and reports it again; a read-only
// store never writes one.
func TestNoIndexFileForDamagedTranscript_RT3_RT5(t *testing.T) {
	indexEverything(t)
	damage := map[string]string{
		"torn last line": `{"id":"t1","parentId":null,"type":"user"`,
		"bad line":       "not json\n",
		"unknown type":   `{"id":"u9","parentId":null,"type":"future_kind","timestamp":"2026-07-01T12:00:00Z"}` + "\n",
	}
	for name, text := range damage {
		t.Run(name, func(t *testing.T) {
			s := newTestStore(t, testOptions())
			mustAppend(t, s, user("hello"))
			path := s.FilePath()
			s.Close()
			os.Remove(path + IndexFileSuffix)
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(text)
			f.Close()
			for range 2 {
				s, rep, err := Open(path, testOptions())
				if err != nil {
					t.Fatal(err)
				}
				if rep.FromIndexFile || rep.ProblemCount == 0 && len(rep.UnknownTypes) == 0 {
					t.Errorf("report %+v: the damage is not reported", rep)
				}
				s.Close()
				if _, err := os.Lstat(path + IndexFileSuffix); err == nil {
					t.Fatal("an index file was written for a damaged transcript")
				}
			}
		})
	}
	t.Run("read-only", func(t *testing.T) {
		s := newTestStore(t, testOptions())
		mustAppend(t, s, user("hello"))
		path := s.FilePath()
		s.Close()
		os.Remove(path + IndexFileSuffix)
		r, _, err := OpenReadOnly(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		if _, err := os.Lstat(path + IndexFileSuffix); err == nil {
			t.Fatal("a read-only store wrote an index file")
		}
	})
}

// TestVerifyReadsTheTranscript_RT3: verify never trusts the index file. An
// index file that disagrees with its transcript (made here by hand, with the
// transcript's stamp) is what resume sees; verify reports the transcript.
func TestVerifyReadsTheTranscript_RT3(t *testing.T) {
	indexEverything(t)
	path := varied(t)
	s, rep, err := Open(path, testOptions())
	if err != nil || !rep.FromIndexFile {
		t.Fatalf("Open: %v", err)
	}
	for i := range s.metas {
		if s.metas[i].Type == TypeUser {
			s.metas[i].Tokens = 7 // the transcript has none (testOptions estimates nothing)
		}
	}
	st, _ := stampFile(s.f)
	b, err := s.encodeIndex(st)
	if err != nil {
		t.Fatal(err)
	}
	s.indexFileValid = true // keep Close from writing the true index
	s.Close()
	if err := os.WriteFile(path+IndexFileSuffix, b, 0o600); err != nil {
		t.Fatal(err)
	}
	lying, rep, err := OpenReadOnly(path, Options{})
	if err != nil || !rep.FromIndexFile {
		t.Fatalf("the hand-made index file was not used: %v", err)
	}
	users := 0
	for _, m := range lying.All() {
		if m.Type == TypeUser {
			users++
			if m.Tokens != 7 {
				t.Fatalf("resume did not take the tokens from the index file: %+v", m)
			}
		}
	}
	lying.Close()
	v, err := VerifyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	truth, _, err := OpenReadOnly(path, Options{FullScan: true})
	if err != nil {
		t.Fatal(err)
	}
	defer truth.Close()
	want := 0
	for _, m := range truth.All() {
		if MissingEstimate(m.Type, int(m.Tokens)) {
			want++
		}
	}
	if v.Unestimated != want || want < users {
		t.Errorf("verify counted %d entries without an estimate, the transcript has %d (%d of them user entries): it read the index file", v.Unestimated, want, users)
	}
}

// FuzzIndexFile feeds decodeIndex index files whose checksum is made right
// after the fuzzer changed them, so that the record checks are what is
// tested: no input may panic, hang or allocate beyond its size, and what is
// accepted is an index resume could have made.
func FuzzIndexFile(f *testing.F) {
	prev := indexFileMinBytes
	indexFileMinBytes = 0
	defer func() { indexFileMinBytes = prev }()
	dir := f.TempDir()
	s, err := Create(dir, SessionHeader{SessionID: "s_fuzz"}, testOptions())
	if err != nil {
		f.Fatal(err)
	}
	for i := range 5 {
		if _, err := s.Append(user(string(rune('a' + i)))); err != nil {
			f.Fatal(err)
		}
	}
	s.Close()
	path := filepath.Join(dir, "s_fuzz.jsonl")
	seed, err := os.ReadFile(path + IndexFileSuffix)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	tf, err := os.Open(path)
	if err != nil {
		f.Fatal(err)
	}
	defer tf.Close()
	st, _ := stampFile(tf)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= 4 {
			body := b[:len(b)-4]
			binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(body, castagnoli))
		}
		var s Store
		if s.decodeIndex(b, st) != nil {
			return
		}
		for i, m := range s.metas {
			if p := s.parents[i]; p >= int32(i) || m.Offset+int64(m.Len) >= int64(st.size) || m.ID == "" ||
				(i > 0 && m.Offset <= s.metas[i-1].Offset) {
				t.Fatalf("accepted an impossible entry %d: %+v parent %d", i, m, p)
			}
		}
	})
}

// TestIndexFileCutShortUnderItsMapping_RT1: an index file truncated while
// resume reads it through a mapping (the pages past its new end fault) is
// an invalid index file, not a crash: resume scans.
func TestIndexFileCutShortUnderItsMapping_RT1(t *testing.T) {
	indexEverything(t)
	path := varied(t)
	x, err := os.OpenFile(path+IndexFileSuffix, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	page := int64(os.Getpagesize())
	if xi, err := x.Stat(); err != nil || xi.Size() > page {
		t.Fatalf("the index file: %v, %v; want one page at most", xi, err)
	}
	// Pad the file to four pages so that the last three can vanish.
	padded := 3*page + 100
	if err := x.Truncate(padded); err != nil {
		t.Fatal(err)
	}
	data, unmap, err := mapFile(x, padded)
	if err != nil {
		t.Skipf("cannot map: %v", err)
	}
	defer unmap()
	if err := x.Truncate(page); err != nil {
		t.Fatal(err)
	}
	tf, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tf.Close()
	st, _ := stampFile(tf)
	// The header names this transcript; the checksum is read from the
	// vanished last page.
	var s Store
	if err := s.decodeIndex(data, st); err != errIndexFile {
		t.Fatalf("decodeIndex over a mapping cut short: %v, want errIndexFile", err)
	}
	if _, rep, err := OpenReadOnly(path, Options{}); err != nil || rep.FromIndexFile {
		t.Fatalf("resume after the cut: %v, from the index file %v", err, rep != nil && rep.FromIndexFile)
	}
}
