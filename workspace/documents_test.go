package workspace

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func fileURI(p string) string { return (&url.URL{Scheme: "file", Path: filepath.ToSlash(p)}).String() }

// TestURIToRel checks the mapping of the editor's document URIs to
// workspace-relative paths, refusing what lies outside the root.
func TestURIToRel(t *testing.T) {
	r, outside := newTestRoot(t)
	ws := r.Dir()
	symlink(t, outside, filepath.Join(ws, "dir-out"))
	mkdirs(t, ws, "with space")
	tests := []struct {
		uri     string
		want    string
		wantErr string
	}{
		{fileURI(filepath.Join(ws, "src", "main.go")), "src/main.go", ""},
		{"file://" + ws + "/with%20space/a%23b.go", "with space/a#b.go", ""},
		{"file://localhost" + ws + "/src/main.go", "src/main.go", ""},
		{fileURI(ws), ".", ""},
		{fileURI(filepath.Join(ws, "src", "new.go")), "src/new.go", ""},
		{fileURI(filepath.Join(outside, "secret.txt")), "", "escapes the workspace root"},
		{fileURI(filepath.Join(ws, "dir-out", "secret.txt")), "", "escapes the workspace root"},
		{"file://" + ws + "/../outside/secret.txt", "", "escapes the workspace root"},
		{"untitled:Untitled-1", "", `scheme "untitled" is not file`},
		{"https://example.invalid/x.go", "", `scheme "https" is not file`},
		{"file://server/share/x.go", "", `host "server" is not local`},
		{"file:relative/x.go", "", "not an absolute file path"},
		{"file://%zz", "", "invalid URL escape"},
	}
	for _, tc := range tests {
		got, err := r.URIToRel(tc.uri)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("URIToRel(%q) = %q, %v; want error containing %q", tc.uri, got, err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tc.uri) {
				t.Errorf("error %q does not name the URI", err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("URIToRel(%q) = %q, %v; want %q", tc.uri, got, err, tc.want)
		}
	}
}

// TestTouchedSources_RC2 checks R-C2's sources: the editor's documents, the
// agent's tool calls and the watcher each land in the right list, and a file
// changed on disk by anyone is listed as modified (PROTOCOL.md "Fixed
// details").
func TestTouchedSources_RC2(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, ".gitignore"), "build/\n")
	r, _ := NewRoot(dir)
	ig, err := NewIgnore(r)
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTouched(r, ig)

	tr.Opened("docs/readme.md")                // read
	tr.Opened("src/a.go")                      // read, then edited unsaved
	tr.Changed("src/a.go")                     // modified
	tr.Opened("src/b.go")                      // read, saved
	tr.Saved("src/b.go")                       // modified
	tr.Closed("docs/readme.md")                // stays read
	tr.Read("./src/c.go")                      // agent read_file, cleaned
	tr.Modified("src/d.go")                    // agent write_file
	tr.Read(filepath.Join(dir, "src", "e.go")) // absolute inside
	tr.FromWatcher(Batch{Created: []string{"gen/new.go"}, Modified: []string{"src/c.go"}, Removed: []string{"old.go"}})
	tr.FromWatcher(Batch{Modified: []string{"src/d.go"}}) // duplicate

	// Left out: ignored, outside, the root itself, empty.
	tr.Opened("node_modules/x/index.js")
	tr.Saved(".git/COMMIT_EDITMSG")
	tr.Read(".soba/memory/MEMORY.md")
	tr.Changed("build/out.go")
	tr.Read("../outside.go")
	tr.Read("/etc/passwd")
	tr.Read(".")
	tr.Read("")
	tr.FromWatcher(Batch{Modified: []string{"node_modules/y.js", "../z", "/abs", "build/x.o", "."}})

	read, modified := tr.Snapshot()
	wantRead := []string{"docs/readme.md", "src/a.go", "src/b.go", "src/c.go", "src/e.go"}
	wantMod := []string{"gen/new.go", "src/a.go", "src/b.go", "src/c.go", "src/d.go", "old.go (deleted)"}
	if !slices.Equal(read, wantRead) {
		t.Errorf("read = %v, want %v", read, wantRead)
	}
	if !slices.Equal(modified, wantMod) {
		t.Errorf("modified = %v, want %v", modified, wantMod)
	}
	if open := tr.Open(); !slices.Equal(open, []string{"src/a.go", "src/b.go"}) {
		t.Errorf("Open() = %v", open)
	}
}

// TestTouchedWithWatcher_RC2 runs Touched behind a real watcher: a file
// written on disk by someone else during the session is listed as modified.
func TestTouchedWithWatcher_RC2(t *testing.T) {
	dir := t.TempDir()
	mkdirs(t, dir, "src", "node_modules/pkg")
	r, _ := NewRoot(dir)
	ig, err := NewIgnore(r)
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTouched(r, ig)
	w, err := NewWatcher(r, WatchOptions{Debounce: 20 * time.Millisecond, Ignore: ig, OnChange: tr.FromWatcher})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	write(t, filepath.Join(dir, "src", "by-someone.go"), "x")
	write(t, filepath.Join(dir, "node_modules", "pkg", "i.js"), "x")
	mkdirs(t, dir, "new/dir")
	write(t, filepath.Join(dir, "new", "dir", "f.go"), "x")
	eventually(t, "both files", func() bool {
		_, mod := tr.Snapshot()
		return slices.Contains(mod, "src/by-someone.go") && slices.Contains(mod, "new/dir/f.go")
	})
	_, mod := tr.Snapshot()
	if slices.Contains(mod, "node_modules/pkg/i.js") {
		t.Errorf("ignored file listed: %v", mod)
	}
}

// TestTouchedConcurrent checks that Touched is safe for concurrent use (run
// with -race).
func TestTouchedConcurrent(t *testing.T) {
	r, _ := NewRoot(t.TempDir())
	tr := NewTouched(r, nil)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				p := fmt.Sprintf("f%d.go", i%20)
				switch g {
				case 0:
					tr.Opened(p)
				case 1:
					tr.Changed(p)
				case 2:
					tr.FromWatcher(Batch{Modified: []string{p}})
				case 3:
					tr.Snapshot()
				}
			}
		}()
	}
	wg.Wait()
	read, mod := tr.Snapshot()
	if len(read) != 20 || len(mod) != 20 {
		t.Errorf("read %d, modified %d; want 20 each", len(read), len(mod))
	}
}

func TestTouchedSymlinkOut(t *testing.T) {
	r, outside := newTestRoot(t)
	symlink(t, outside, filepath.Join(r.Dir(), "out"))
	tr := NewTouched(r, nil)
	tr.Opened("out/secret.txt")
	if read, _ := tr.Snapshot(); len(read) != 0 {
		t.Errorf("a file outside through a symlink was listed: %v", read)
	}
	if _, err := os.Stat(filepath.Join(r.Dir(), "out", "secret.txt")); err != nil {
		t.Fatal(err)
	}
}

// TestTouchedDeletions_RC6: a file whose last change on disk was its removal
// is listed as deleted, not as modified; written again, by the watcher's
// report or the agent, it is modified again.
func TestTouchedDeletions_RC6(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps func(tr *Touched)
		want  []string
	}{
		{"written then removed", func(tr *Touched) {
			tr.Modified("a.go")
			tr.FromWatcher(Batch{Removed: []string{"a.go"}})
		}, []string{"a.go (deleted)"}},
		{"removed then created again", func(tr *Touched) {
			tr.FromWatcher(Batch{Removed: []string{"a.go"}})
			tr.FromWatcher(Batch{Created: []string{"a.go"}})
		}, []string{"a.go"}},
		{"removed then written by the agent", func(tr *Touched) {
			tr.FromWatcher(Batch{Removed: []string{"a.go"}})
			tr.Modified("a.go")
		}, []string{"a.go"}},
		{"a rename seen as a removal and a creation", func(tr *Touched) {
			tr.FromWatcher(Batch{Removed: []string{"old.go"}, Created: []string{"new.go"}})
		}, []string{"new.go", "old.go (deleted)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := NewRoot(t.TempDir())
			tr := NewTouched(r, nil)
			tc.steps(tr)
			if _, mod := tr.Snapshot(); !slices.Equal(mod, tc.want) {
				t.Errorf("modified %q, want %q", mod, tc.want)
			}
		})
	}
}
