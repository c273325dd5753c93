package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// hostileTree makes a workspace and an outside directory with the links an
// attacker commits: a link to an outside file, to /dev/zero, to an outside
// directory, a FIFO and a sparse 64 GB file.
func hostileTree(t *testing.T) (root *Root, ws, outside string) {
	t.Helper()
	ws, outside = t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte("root:x:0:0 outside secret\n"), 0o644))
	must(os.WriteFile(filepath.Join(ws, "ok.txt"), []byte("hello\n"), 0o644))
	must(os.Mkdir(filepath.Join(ws, "sub"), 0o755))
	must(os.WriteFile(filepath.Join(ws, "sub", "inner.txt"), []byte("inner\n"), 0o644))
	must(os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ws, "leak")))
	must(os.Symlink("/dev/zero", filepath.Join(ws, "zero")))
	must(os.Symlink(outside, filepath.Join(ws, "outdir")))
	must(os.Symlink("sub/inner.txt", filepath.Join(ws, "inlink")))
	must(syscall.Mkfifo(filepath.Join(ws, "pipe"), 0o644))
	f, err := os.Create(filepath.Join(ws, "core.dump"))
	must(err)
	must(f.Truncate(64 << 30))
	must(f.Close())
	root, err = NewRoot(ws)
	must(err)
	t.Cleanup(func() { root.Close() })
	return root, ws, outside
}

// within runs f and fails the test if it does not return within d: a case
// that hangs is a failure of R-W1, not a stuck test binary.
func within(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("did not return within %v", d)
	}
}

func TestDoorReadsOnlyRegularFilesInside_RW1(t *testing.T) {
	root, ws, _ := hostileTree(t)
	cases := []struct {
		name, path string
		want       string // content, or "" when an error is expected
		errIs      func(error) bool
		errHas     string
	}{
		{"regular file", "ok.txt", "hello\n", nil, ""},
		{"absolute path inside", filepath.Join(ws, "ok.txt"), "hello\n", nil, ""},
		{"symlink inside to inside", "inlink", "inner\n", nil, ""},
		{"symlink to outside file", "leak", "", isEscape, "escapes the workspace root"},
		{"symlink to /dev/zero", "zero", "", isEscape, "escapes the workspace root"},
		{"through a symlinked directory", "outdir/secret", "", isEscape, "escapes the workspace root"},
		{"dot-dot", "../x", "", isEscape, "escapes the workspace root"},
		{"absolute outside", "/etc/passwd", "", isEscape, "escapes the workspace root"},
		{"FIFO", "pipe", "", isNotRegular, "pipe is not a regular file (a named pipe)"},
		{"directory", "sub", "", isNotRegular, "sub is not a regular file (a directory)"},
		{"sparse 64 GB file", "core.dump", "", isTooLarge, "core.dump is 68719476736 bytes, over the 1048576-byte limit"},
		{"NUL byte", "ok\x00.txt", "", nil, "NUL byte"},
		{"missing", "nope.txt", "", func(err error) bool { return errors.Is(err, fs.ErrNotExist) }, "nope.txt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var data []byte
			var err error
			within(t, 5*time.Second, func() { data, err = root.ReadFile(c.path, 1<<20) })
			if c.want != "" {
				if err != nil || string(data) != c.want {
					t.Fatalf("ReadFile(%q) = %q, %v; want %q", c.path, data, err, c.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("ReadFile(%q) = %q, want an error", c.path, data)
			}
			if c.errIs != nil && !c.errIs(err) {
				t.Errorf("ReadFile(%q) error %v (%T) is not the expected kind", c.path, err, err)
			}
			if !strings.Contains(err.Error(), c.errHas) {
				t.Errorf("ReadFile(%q) error %q does not say %q", c.path, err, c.errHas)
			}
			if strings.Contains(err.Error(), "secret") && strings.Contains(err.Error(), "root:x") {
				t.Errorf("error leaks outside content: %v", err)
			}
		})
	}
}

func isEscape(err error) bool     { var e *EscapeError; return errors.As(err, &e) }
func isNotRegular(err error) bool { var e *NotRegularError; return errors.As(err, &e) }
func isTooLarge(err error) bool   { var e *TooLargeError; return errors.As(err, &e) }

func TestDoorWritesOnlyInside_RW1(t *testing.T) {
	root, _, outside := hostileTree(t)
	cases := []struct {
		name, path string
		ok         bool
	}{
		{"new file in a new directory", "a/b/new.txt", true},
		{"through a symlink to an outside file", "leak", false},
		{"through a symlinked directory", "outdir/planted", false},
		{"dot-dot", "../planted", false},
		{"FIFO", "pipe", false},
		{"/dev/zero link", "zero", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			within(t, 5*time.Second, func() { err = root.WriteFile(c.path, []byte("written\n"), 0o644) })
			if c.ok != (err == nil) {
				t.Fatalf("WriteFile(%q) = %v, want ok=%v", c.path, err, c.ok)
			}
		})
	}
	assertOutsideUntouched(t, outside)
}

// assertOutsideUntouched checks that the outside directory still holds only
// its secret, unchanged.
func assertOutsideUntouched(t *testing.T, outside string) {
	t.Helper()
	ents, _ := os.ReadDir(outside)
	if len(ents) != 1 || ents[0].Name() != "secret" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("outside directory holds %v, want only secret", names)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "root:x:0:0 outside secret\n" {
		t.Errorf("outside secret changed: %q", b)
	}
}

func TestDoorWalkNeverFollowsSymlinks_RW1(t *testing.T) {
	root, _, _ := hostileTree(t)
	var seen []string
	within(t, 5*time.Second, func() {
		err := root.Walk(context.Background(), ".", func(rel string, d fs.DirEntry) error {
			seen = append(seen, rel)
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	})
	want := ".,core.dump,inlink,leak,ok.txt,outdir,pipe,sub,sub/inner.txt,zero"
	if got := strings.Join(seen, ","); got != want {
		t.Errorf("walk saw %s\nwant %s", got, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := root.Walk(ctx, ".", func(string, fs.DirEntry) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("walk under a cancelled context = %v, want context.Canceled", err)
	}
}

// TestDoorSymlinkSwapRace_RW1: a directory of the workspace is swapped with
// a symlink to an outside directory in a loop while 400 writes and reads go
// through it. os.Root resolves each open in the kernel relative to the
// root's descriptor, so no write lands outside and no read returns an
// outside file.
func TestDoorSymlinkSwapRace_RW1(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "f.txt"), []byte("OUTSIDE"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := NewRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	d := filepath.Join(ws, "d")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			os.Rename(d, d+".real")
			os.Symlink(outside, d)
			os.Remove(d)
			os.Rename(d+".real", d)
		}
	}()
	leakedReads := 0
	for i := range 400 {
		_ = root.WriteFile("d/f.txt", []byte("inside"), 0o644)
		if b, err := root.ReadFile("d/f.txt", 1<<10); err == nil && string(b) == "OUTSIDE" {
			leakedReads++
		}
		_ = i
	}
	stop.Store(true)
	wg.Wait()
	if b, _ := os.ReadFile(filepath.Join(outside, "f.txt")); string(b) != "OUTSIDE" {
		t.Errorf("a write landed outside: outside f.txt = %q", b)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("outside directory has %d entries, want 1", len(ents))
	}
	if leakedReads > 0 {
		t.Errorf("%d reads returned the outside file", leakedReads)
	}
}

// TestServerFilesLinkedToDevZero_RW1: a committed .gitignore, config or
// MEMORY.md that links to /dev/zero, to an outside file or is a FIFO is
// refused at once with an error naming it; nothing is read without bound.
func TestServerFilesLinkedToDevZero_RW1(t *testing.T) {
	targets := []struct {
		name string
		make func(t *testing.T, p string)
	}{
		{"link to /dev/zero", func(t *testing.T, p string) { mustT(t, os.Symlink("/dev/zero", p)) }},
		{"FIFO", func(t *testing.T, p string) { mustT(t, syscall.Mkfifo(p, 0o644)) }},
		{"link outside", func(t *testing.T, p string) { mustT(t, os.Symlink("/etc/hostname", p)) }},
	}
	files := []struct {
		name, rel string
		read      func(root *Root) error
	}{
		{".gitignore", ".gitignore", func(root *Root) error { _, err := NewIgnore(root); return err }},
		{"config", ".soba/config.json", func(root *Root) error {
			_, _, err := LoadConfig(root.Dir(), Layers{})
			return err
		}},
		{"MEMORY.md", ".soba/memory/MEMORY.md", func(root *Root) error {
			m, err := OpenMemory(root)
			if err != nil {
				return err
			}
			_, err = m.List()
			return err
		}},
	}
	for _, f := range files {
		for _, tg := range targets {
			t.Run(f.name+" "+tg.name, func(t *testing.T) {
				ws := t.TempDir()
				p := filepath.Join(ws, filepath.FromSlash(f.rel))
				mustT(t, os.MkdirAll(filepath.Dir(p), 0o755))
				tg.make(t, p)
				root, err := NewRoot(ws)
				mustT(t, err)
				defer root.Close()
				within(t, 5*time.Second, func() { err = f.read(root) })
				if err == nil {
					t.Fatalf("reading %s (%s) succeeded", f.rel, tg.name)
				}
				if base := filepath.Base(f.rel); !strings.Contains(err.Error(), base) {
					t.Errorf("error %q does not name %s", err, base)
				}
			})
		}
	}
}

func mustT(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSessionDirStaysInside_RW2: a sessionDir that leaves the workspace,
// lexically, by an absolute path or through a symlinked directory, is a
// configuration error naming the key and its layer.
func TestSessionDirStaysInside_RW2(t *testing.T) {
	cases := []struct {
		name, value string
		ok          bool
	}{
		{"default", "", true},
		{"relative inside", "transcripts", true},
		{"dot-dot", "../../x", false},
		{"absolute outside", "/tmp/elsewhere", false},
		{"home", "~/soba", false},
		{"through a symlinked directory", "linked/sessions", false},
		{"absolute inside", "ABS/inside", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws, outside := t.TempDir(), t.TempDir()
			mustT(t, os.Symlink(outside, filepath.Join(ws, "linked")))
			mustT(t, os.MkdirAll(filepath.Join(ws, ".soba"), 0o755))
			v := strings.Replace(c.value, "ABS", ws, 1)
			body := "{}"
			if v != "" {
				body = `{"sessionDir":"` + v + `"}`
			}
			mustT(t, os.WriteFile(filepath.Join(ws, ".soba", "config.json"), []byte(body), 0o644))
			_, _, err := LoadConfig(ws, Layers{})
			if c.ok != (err == nil) {
				t.Fatalf("sessionDir %q: err = %v, want ok=%v", v, err, c.ok)
			}
			if err != nil && (!strings.Contains(err.Error(), "sessionDir") || !strings.Contains(err.Error(), "config.json") || !strings.Contains(err.Error(), "inside the workspace")) {
				t.Errorf("error %q does not name the key, the layer and the rule", err)
			}
		})
	}
}

// TestServerDirectoriesAreNotLinks_RW2: a repository that commits .soba,
// .soba/memory or its capsules directory as a symlink (outside, or
// elsewhere inside) cannot redirect Project Memory's writes: opening it
// fails naming the directory, and nothing is written where the link points.
func TestServerDirectoriesAreNotLinks_RW2(t *testing.T) {
	cases := []struct{ name, link, target, has string }{
		{".soba outside", ".soba", "OUT", `".soba" escapes the workspace root`},
		{"memory outside", ".soba/memory", "OUT", `".soba/memory/capsules" escapes the workspace root`},
		{"memory elsewhere inside", ".soba/memory", "../src", ".soba/memory/capsules leads through a symbolic link (to src/capsules)"},
		{"capsules outside", ".soba/memory/capsules", "OUT", `".soba/memory/capsules" escapes the workspace root`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws, outside := t.TempDir(), t.TempDir()
			mustT(t, os.MkdirAll(filepath.Join(ws, "src"), 0o755))
			p := filepath.Join(ws, filepath.FromSlash(c.link))
			mustT(t, os.MkdirAll(filepath.Dir(p), 0o755))
			target := strings.Replace(c.target, "OUT", outside, 1)
			mustT(t, os.Symlink(target, p))
			root, err := NewRoot(ws)
			mustT(t, err)
			defer root.Close()
			_, err = OpenMemory(root)
			if err == nil || !strings.Contains(err.Error(), c.has) {
				t.Fatalf("OpenMemory = %v, want an error saying %q", err, c.has)
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Errorf("%d entries written outside", len(ents))
			}
			if ents, _ := os.ReadDir(filepath.Join(ws, "src")); len(ents) != 0 {
				t.Errorf("%d entries written into src", len(ents))
			}
		})
	}
}
