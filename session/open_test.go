package session

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHostileSessionFiles_RW1: a session file that is a FIFO, a link to
// /dev/zero or to an outside file, a directory or a sparse file over the
// bound is refused at once by resume and by the scan verify uses, with an
// error naming it, and nothing is appended to the outside file.
func TestHostileSessionFiles_RW1(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "victim.txt")
	if err := os.WriteFile(outside, []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		make func(p string) error
		has  string
	}{
		{"FIFO", func(p string) error { return syscall.Mkfifo(p, 0o600) }, "is not a regular file (a named pipe)"},
		{"link to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }, "is a symbolic link"},
		{"link to an outside file", func(p string) error { return os.Symlink(outside, p) }, "is a symbolic link"},
		{"directory", func(p string) error { return os.Mkdir(p, 0o700) }, "a directory"},
		{"sparse over the bound", func(p string) error {
			f, err := os.Create(p)
			if err != nil {
				return err
			}
			defer f.Close()
			return f.Truncate(MaxFileBytes + 1)
		}, "over the 2147483648-byte limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "s_1.jsonl")
			if err := c.make(p); err != nil {
				t.Fatal(err)
			}
			for _, op := range []struct {
				name string
				f    func() error
			}{
				{"Open", func() error {
					s, _, err := Open(p, Options{})
					if err == nil {
						s.Close()
					}
					return err
				}},
				{"VerifyFile", func() error { _, err := VerifyFile(p); return err }},
			} {
				done := make(chan error, 1)
				go func() { done <- op.f() }()
				select {
				case err := <-done:
					if err == nil || !strings.Contains(err.Error(), c.has) || !strings.Contains(err.Error(), p) {
						t.Errorf("%s = %v, want an error naming %s and saying %q", op.name, err, p, c.has)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("%s did not return within 5s", op.name)
				}
			}
			if b, _ := os.ReadFile(outside); string(b) != "outside\n" {
				t.Errorf("outside file changed: %q", b)
			}
		})
	}
}
