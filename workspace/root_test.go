package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// newTestRoot makes a workspace root with a few files and an outside
// directory beside it, for confinement tests.
func newTestRoot(t *testing.T) (root *Root, outside string) {
	t.Helper()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	outside = filepath.Join(base, "outside")
	for _, d := range []string{ws, outside, filepath.Join(ws, "src", "pkg")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(ws, "src", "main.go"), "package main\n")
	write(t, filepath.Join(outside, "secret.txt"), "secret\n")
	r, err := NewRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	return r, outside
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestResolveConfinement checks PROTOCOL.md "Agent tools": paths are confined
// to the workspace root, with no `..` or symlink escape.
func TestResolveConfinement(t *testing.T) {
	r, outside := newTestRoot(t)
	ws := r.Dir()
	symlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(ws, "file-out"))
	symlink(t, outside, filepath.Join(ws, "dir-out"))
	symlink(t, "../outside/missing.txt", filepath.Join(ws, "dangling-out"))
	symlink(t, "src", filepath.Join(ws, "dir-in"))
	symlink(t, "src/main.go", filepath.Join(ws, "file-in"))
	symlink(t, filepath.Join(ws, "dir-out", "..", "ws", "src"), filepath.Join(ws, "roundtrip-in"))

	tests := []struct {
		name    string
		path    string
		wantRel string // "" means an escape error is wanted
		symlink bool   // the escape goes through a symlink
	}{
		{"parent", "../", "", false},
		{"parent file", "../outside/secret.txt", "", false},
		{"dot-dot through a subdir", "a/../../x", "", false},
		{"absolute outside", filepath.Join(outside, "secret.txt"), "", false},
		{"absolute root parent", filepath.Dir(ws), "", false},
		{"sibling with root as prefix", ws + "-evil/x", "", false},
		{"symlinked file out", "file-out", "", true},
		{"symlinked dir out", "dir-out/secret.txt", "", true},
		{"new file under symlinked dir out", "dir-out/new/deeper.txt", "", true},
		{"dangling symlink out", "dangling-out", "", true},
		{"relative file", "src/main.go", "src/main.go", false},
		{"relative new file", "src/new/file.go", "src/new/file.go", false},
		{"dot-dot staying inside", "src/pkg/../main.go", "src/main.go", false},
		{"absolute inside", filepath.Join(ws, "src", "main.go"), "src/main.go", false},
		{"symlinked dir in", "dir-in/main.go", "dir-in/main.go", false},
		{"symlinked file in", "file-in", "file-in", false},
		{"new file under symlinked dir in", "dir-in/new.go", "dir-in/new.go", false},
		{"symlink leaving and coming back", "roundtrip-in/main.go", "roundtrip-in/main.go", false},
		{"root itself", ".", ".", false},
		{"root itself absolute", ws, ".", false},
		{"root with trailing slash", ws + "/", ".", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			abs, rel, err := r.Resolve(tc.path)
			if tc.wantRel == "" {
				var esc *EscapeError
				if !errors.As(err, &esc) {
					t.Fatalf("Resolve(%q) = %q, %q, %v; want an escape error", tc.path, abs, rel, err)
				}
				want := `path "` + tc.path + `" escapes the workspace root ` + ws
				if !strings.HasPrefix(err.Error(), want) {
					t.Errorf("error %q does not start with %q", err, want)
				}
				if got := esc.Target != ""; got != tc.symlink {
					t.Errorf("symlink target %q, want a target: %v", esc.Target, tc.symlink)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tc.path, err)
			}
			if rel != tc.wantRel {
				t.Errorf("rel = %q, want %q", rel, tc.wantRel)
			}
			if want := filepath.Join(ws, filepath.FromSlash(tc.wantRel)); abs != want {
				t.Errorf("abs = %q, want %q", abs, want)
			}
		})
	}
}

// TestResolveErrorMessage checks the exact message an escape gives.
func TestResolveErrorMessage(t *testing.T) {
	r, _ := newTestRoot(t)
	_, _, err := r.Resolve("../x")
	want := `path "../x" escapes the workspace root ` + r.Dir()
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if _, _, err := r.Resolve(""); err == nil || err.Error() != "empty path" {
		t.Errorf("empty path: err = %v", err)
	}
	if _, _, err := r.Resolve("a\x00b"); err == nil || !strings.Contains(err.Error(), "NUL") {
		t.Errorf("NUL byte: err = %v", err)
	}
	if _, _, err := r.Resolve("src/main.go/x"); err == nil || !strings.Contains(err.Error(), `path "src/main.go/x"`) || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("file as a directory: err = %v", err)
	}
}

// TestResolveSymlinkLoop checks that a symlink cycle is an error, not a hang.
func TestResolveSymlinkLoop(t *testing.T) {
	r, _ := newTestRoot(t)
	symlink(t, "loop-b", filepath.Join(r.Dir(), "loop-a"))
	symlink(t, "loop-a", filepath.Join(r.Dir(), "loop-b"))
	if _, _, err := r.Resolve("loop-a/x"); err == nil {
		t.Fatal("Resolve through a symlink loop succeeded")
	}
}

// TestNewRootResolvesSymlinks checks that the root is absolute and real, so a
// workspace opened through a symlink confines to its real location.
func TestNewRootResolvesSymlinks(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, real, filepath.Join(base, "alias"))
	r, err := NewRoot(filepath.Join(base, "alias"))
	if err != nil {
		t.Fatal(err)
	}
	wantDir, _ := filepath.EvalSymlinks(real)
	if r.Dir() != wantDir {
		t.Errorf("Dir() = %q, want %q", r.Dir(), wantDir)
	}
	// An absolute path through the alias names a file inside the root.
	abs, rel, err := r.Resolve(filepath.Join(base, "alias", "f.txt"))
	if err != nil || rel != "f.txt" || abs != filepath.Join(wantDir, "f.txt") {
		t.Errorf("Resolve via alias = %q, %q, %v", abs, rel, err)
	}

	write(t, filepath.Join(base, "file"), "x")
	for _, bad := range []string{"", filepath.Join(base, "missing"), filepath.Join(base, "file")} {
		if _, err := NewRoot(bad); err == nil {
			t.Errorf("NewRoot(%q) succeeded", bad)
		}
	}
}

func TestRel(t *testing.T) {
	r, outside := newTestRoot(t)
	for in, want := range map[string]string{
		filepath.Join(r.Dir(), "src", "main.go"): "src/main.go",
		r.Dir():                                  ".",
		outside:                                  outside,
	} {
		if got := r.Rel(in); got != want {
			t.Errorf("Rel(%q) = %q, want %q", in, got, want)
		}
	}
}

// BenchmarkResolve measures confinement of an existing file, a new file
// (the manual walk past the missing tail) and a new file under a symlinked
// directory, the per-call cost of every agent file tool.
func BenchmarkResolve(b *testing.B) {
	base := b.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "src", "pkg", "deep"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "src", "pkg", "deep", "f.go"), nil, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.Symlink("src/pkg", filepath.Join(ws, "link")); err != nil {
		b.Fatal(err)
	}
	r, err := NewRoot(ws)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, path string }{
		{"existing", "src/pkg/deep/f.go"},
		{"new", "src/pkg/deep/new/f.go"},
		{"new_under_symlink", "link/deep/new.go"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, _, err := r.Resolve(bc.path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
