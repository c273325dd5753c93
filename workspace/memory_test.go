package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

func openTestMemory(t *testing.T) (*Memory, *Root) {
	t.Helper()
	r, err := NewRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m, err := OpenMemory(r)
	if err != nil {
		t.Fatal(err)
	}
	return m, r
}

var day = time.Date(2026, 7, 1, 14, 3, 5, 0, time.UTC)

// TestMemoryMirror_RC4 checks the Project Memory layout of PROTOCOL.md
// "Fixed details": the capsule at .soba/memory/capsules/<id>.capsule.md and
// one line in .soba/memory/MEMORY.md with id, title, date and relative link.
func TestMemoryMirror_RC4(t *testing.T) {
	m, r := openTestMemory(t)
	md := []byte("# Capsule\n\n## Goal\nShip the watcher.\n")
	path, err := m.Mirror("ck_8f2a1c", "Ship the watcher", day, md)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(r.Dir(), ".soba", "memory", "capsules", "ck_8f2a1c.capsule.md"); path != want {
		t.Errorf("path = %q, want %q", path, want)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != string(md) {
		t.Fatalf("capsule file = %q, %v", got, err)
	}
	index, err := os.ReadFile(filepath.Join(r.Dir(), ".soba", "memory", "MEMORY.md"))
	if err != nil {
		t.Fatal(err)
	}
	wantLine := "- ck_8f2a1c — Ship the watcher — 2026-07-01T14:03:05Z — [capsules/ck_8f2a1c.capsule.md](capsules/ck_8f2a1c.capsule.md)\n"
	if !strings.HasPrefix(string(index), "# Project Memory\n") || !strings.HasSuffix(string(index), wantLine) {
		t.Errorf("MEMORY.md =\n%s\nwant a header and the line\n%s", index, wantLine)
	}
	// No temporary files are left behind.
	for _, d := range []string{filepath.Join(r.Dir(), ".soba", "memory"), filepath.Join(r.Dir(), ".soba", "memory", "capsules")} {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".tmp") {
				t.Errorf("temporary file left: %s", e.Name())
			}
		}
	}
}

// TestMemoryMirrorIdempotent_RC4 checks that mirroring the same checkpoint
// again replaces its file and keeps one index line, and that the list is
// newest first.
func TestMemoryMirrorIdempotent_RC4(t *testing.T) {
	m, _ := openTestMemory(t)
	mirror := func(id, title string, at time.Time, body string) {
		t.Helper()
		if _, err := m.Mirror(id, title, at, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	mirror("ck_1", "first", day, "v1")
	mirror("ck_2", "second", day.Add(time.Hour), "two")
	mirror("ck_1", "first, again", day, "v2")

	items, err := m.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 {
		t.Fatalf("List() = %+v, want 2 items", items)
	}
	if items[0].CheckpointID != "ck_2" || items[1].CheckpointID != "ck_1" {
		t.Errorf("order = %s, %s; want newest first", items[0].CheckpointID, items[1].CheckpointID)
	}
	it := items[1]
	if it.Title != "first, again" || !it.Created.Equal(day) || it.Path != ".soba/memory/capsules/ck_1.capsule.md" {
		t.Errorf("item = %+v", it)
	}
	body, _ := os.ReadFile(filepath.Join(m.root.Dir(), filepath.FromSlash(it.Path)))
	if string(body) != "v2" {
		t.Errorf("capsule body = %q, want v2", body)
	}
	index, _ := os.ReadFile(m.IndexPath())
	if n := strings.Count(string(index), "- ck_1 "); n != 1 {
		t.Errorf("ck_1 listed %d times:\n%s", n, index)
	}
}

// TestMemoryIndexTolerant checks List against an index edited by hand:
// foreign lines are skipped, titles with the separator survive, links out of
// memory/ are refused, and an index line whose file was deleted is dropped
// at the next Mirror.
func TestMemoryIndexTolerant(t *testing.T) {
	m, _ := openTestMemory(t)
	if _, err := m.Mirror("ck_a", "Plan — phase 2 — done", day, []byte("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Mirror("ck_gone", "deleted later", day, []byte("g")); err != nil {
		t.Fatal(err)
	}
	index, _ := os.ReadFile(m.IndexPath())
	edited := string(index) + "\nSome note by hand.\n- ck_evil — x — 2026-07-01T00:00:00Z — [x](../../../etc/passwd)\n- ck_bad — x — yesterday — [x](capsules/x.md)\n"
	if err := os.WriteFile(m.IndexPath(), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	items, err := m.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || items[0].CheckpointID != "ck_a" || items[0].Title != "Plan — phase 2 — done" {
		t.Fatalf("List() = %+v", items)
	}
	if err := os.Remove(filepath.Join(m.root.Dir(), ".soba", "memory", "capsules", "ck_gone.capsule.md")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Mirror("ck_b", "b", day.Add(time.Minute), []byte("b")); err != nil {
		t.Fatal(err)
	}
	items, _ = m.List()
	var ids []string
	for _, it := range items {
		ids = append(ids, it.CheckpointID)
	}
	if strings.Join(ids, ",") != "ck_b,ck_a" {
		t.Errorf("ids after Mirror = %v, want ck_b,ck_a", ids)
	}
}

// TestMemoryMirrorRefuses checks that bad input gives an error naming it and
// writes nothing, so an id can never become a path out of memory/.
func TestMemoryMirrorRefuses(t *testing.T) {
	m, _ := openTestMemory(t)
	for _, id := range []string{"", "8f2a1c", "ck_../../x", "ck_a/b", "ck_", "ck_a b"} {
		if _, err := m.Mirror(id, "t", day, []byte("x")); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", id)) {
			t.Errorf("Mirror(%q): err = %v, want one naming the id", id, err)
		}
	}
	if _, err := m.Mirror("ck_ok", "t", time.Time{}, []byte("x")); err == nil || !strings.Contains(err.Error(), "creation time") {
		t.Errorf("zero time: err = %v", err)
	}
	if items, _ := m.List(); len(items) != 0 {
		t.Errorf("refused mirrors were listed: %+v", items)
	}
}

// TestMemoryTitleOneLine checks that a title cannot break the one-line
// format.
func TestMemoryTitleOneLine(t *testing.T) {
	m, _ := openTestMemory(t)
	long := strings.Repeat("x", 300)
	for id, title := range map[string]string{"ck_nl": "two\nlines\r\n here", "ck_empty": "  \n ", "ck_long": long, "ck_dash": "ends with —"} {
		if _, err := m.Mirror(id, title, day, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	items, _ := m.List()
	got := map[string]string{}
	for _, it := range items {
		got[it.CheckpointID] = it.Title
	}
	if got["ck_nl"] != "two lines here" || got["ck_empty"] != "(untitled)" || got["ck_dash"] != "ends with" {
		t.Errorf("titles = %q", got)
	}
	if n := len([]rune(got["ck_long"])); n != maxTitleRunes+1 {
		t.Errorf("long title has %d runes, want %d", n, maxTitleRunes+1)
	}
	if len(items) != 4 {
		t.Errorf("List() has %d items, want 4", len(items))
	}
}

// TestMemoryConcurrentMirror checks that concurrent mirrors (two Memory
// values on the same workspace, as two processes would have) all land in
// the index.
func TestMemoryConcurrentMirror(t *testing.T) {
	m1, r := openTestMemory(t)
	m2, err := OpenMemory(r)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := m1
			if i%2 == 1 {
				m = m2
			}
			if _, err := m.Mirror(fmt.Sprintf("ck_%02d", i), "t", day.Add(time.Duration(i)*time.Second), []byte("x")); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	items, _ := m1.List()
	if len(items) != 20 {
		t.Errorf("List() has %d items, want 20", len(items))
	}
}

// TestMemorySummary checks the system-prompt text of Project Memory.
func TestMemorySummary(t *testing.T) {
	m, _ := openTestMemory(t)
	if s := m.Summary(); s != "" {
		t.Errorf("empty memory: Summary() = %q, want \"\"", s)
	}
	if _, err := m.Mirror("ck_1", "Fix the flaky watcher", day, []byte("x")); err != nil {
		t.Fatal(err)
	}
	want := "Project Memory (.soba/memory/MEMORY.md) holds 1 capsule from earlier sessions, newest first; read one with read_file when it bears on the task:\n" +
		"- 2026-07-01 ck_1: Fix the flaky watcher (.soba/memory/capsules/ck_1.capsule.md)\n"
	if got := m.Summary(); got != want {
		t.Errorf("Summary() =\n%s\nwant\n%s", got, want)
	}
	for i := range 25 {
		if _, err := m.Mirror(fmt.Sprintf("ck_n%02d", i), "t", day.Add(time.Duration(i+1)*time.Hour), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	s := m.Summary()
	if lines := strings.Count(s, "\n"); lines != 1+summaryItems+1 {
		t.Errorf("Summary() has %d lines, want %d:\n%s", lines, 1+summaryItems+1, s)
	}
	if !strings.Contains(s, "holds 26 capsules") || !strings.Contains(s, "… and 6 older") || !strings.Contains(s, "ck_n24") {
		t.Errorf("Summary() =\n%s", s)
	}
}

// TestEnsureSobaDir checks `.soba/.gitignore` (PROTOCOL.md "Files"):
// transcripts and flight records are ignored by git, Project Memory and
// capsules are not, and a user's own file is left alone.
func TestEnsureSobaDir(t *testing.T) {
	r, err := NewRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir, err := EnsureSobaDir(r)
	if err != nil {
		t.Fatal(err)
	}
	if dir != filepath.Join(r.Dir(), ".soba") {
		t.Errorf("dir = %q", dir)
	}
	data, err := os.ReadFile(filepath.Join(dir, ".gitignore"))
	if err != nil {
		t.Fatal(err)
	}
	// Check the rules with the same matcher the watcher uses, rooted at .soba.
	m := gitignore.NewMatcher(parseGitignore(data))
	for rel, want := range map[string]bool{
		"sessions/s1.jsonl":                true,
		"flight/s1.jsonl":                  true,
		"memory/MEMORY.lock":               true,
		"memory/.MEMORY.md.123.tmp":        true,
		"memory/MEMORY.md":                 false,
		"memory/capsules/ck_1.capsule.md":  false,
		"capsules/ck_1-handoff.capsule.md": false,
		"skills/go/SKILL.md":               false,
		"config.json":                      false,
	} {
		if got := m.Match(strings.Split(rel, "/"), false); got != want {
			t.Errorf(".soba/.gitignore ignores %s: %v, want %v", rel, got, want)
		}
	}
	// A user's own .gitignore is kept.
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureSobaDir(r); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, ".gitignore")); string(data) != "mine\n" {
		t.Errorf(".gitignore overwritten: %q", data)
	}
}
