package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// session/delete (ACP) moves a session out of List and keeps it: the file
// and its index go to deleted/, a second delete of the same id keeps both
// copies, a missing session is not found, and a session open in a Store is
// refused with its reason.
func TestDeleteKeepsTheSessionAside(t *testing.T) {
	tests := []struct {
		name      string
		prepare   func(t *testing.T, dir string) // before Delete(dir, "s_a")
		wantFound bool
		wantErr   string
		wantList  int // sessions List still shows
		wantKept  int // *.jsonl files in deleted/
	}{
		{"a closed session", func(t *testing.T, dir string) { create(t, dir, "s_a").Close() }, true, "", 0, 1},
		{"with its index", func(t *testing.T, dir string) {
			create(t, dir, "s_a").Close()
			writeFile(t, filepath.Join(dir, "s_a.jsonl"+IndexFileSuffix), "index")
		}, true, "", 0, 1},
		{"deleted twice over", func(t *testing.T, dir string) {
			create(t, dir, "s_a").Close()
			if _, err := Delete(dir, "s_a"); err != nil {
				t.Fatal(err)
			}
			create(t, dir, "s_a").Close()
		}, true, "", 0, 2},
		{"another session stays", func(t *testing.T, dir string) {
			create(t, dir, "s_a").Close()
			create(t, dir, "s_b").Close()
		}, true, "", 1, 1},
		{"no such session", func(t *testing.T, dir string) { create(t, dir, "s_b").Close() }, false, "", 1, 0},
		{"no session directory", func(t *testing.T, dir string) { os.RemoveAll(dir) }, false, "", 0, 0},
		{"open in a store", func(t *testing.T, dir string) {
			s := create(t, dir, "s_a")
			t.Cleanup(func() { s.Close() })
		}, true, "open in another SOBA process", 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "sessions")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			tt.prepare(t, dir)
			found, err := Delete(dir, "s_a")
			if found != tt.wantFound || (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Delete = %v, %v; want %v, %q", found, err, tt.wantFound, tt.wantErr)
			}
			list, err := List(dir)
			if err != nil || len(list) != tt.wantList {
				t.Fatalf("List after Delete: %d sessions (%v), want %d", len(list), err, tt.wantList)
			}
			kept, _ := filepath.Glob(filepath.Join(dir, DeletedDir, "*.jsonl"))
			if len(kept) != tt.wantKept {
				t.Fatalf("deleted/ holds %v, want %d sessions", kept, tt.wantKept)
			}
			if tt.name == "with its index" {
				if _, err := os.Stat(filepath.Join(dir, DeletedDir, "s_a.jsonl"+IndexFileSuffix)); err != nil {
					t.Fatalf("the index did not move with its session: %v", err)
				}
			}
		})
	}
}

func create(t *testing.T, dir, id string) *Store {
	t.Helper()
	s, err := Create(dir, SessionHeader{Version: 1, SessionID: id}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
