package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHostileWorkspaceRealBinary_RW1: the built binary opened on a
// repository whose .gitignore and MEMORY.md link to /dev/zero, whose skill is
// a FIFO, with a link to /dev/stdin, a sparse 64 GB file and a session file
// that is a FIFO. Every request is answered (the whole case is bounded: the
// process is killed after 30 s, which fails the reads), the hostile session
// and capsule are refused with errors naming them, soba.budget answers
// afterwards, and shutdown/exit end the process with 0.
func TestHostileWorkspaceRealBinary_RW1(t *testing.T) {
	ws := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{".soba/memory", ".soba/skills/x", ".soba/sessions"} {
		must(os.MkdirAll(filepath.Join(ws, d), 0o755))
	}
	must(os.WriteFile(filepath.Join(ws, ".soba", "config.json"), []byte(`{"model":{"provider":"openai","baseURL":"http://127.0.0.1:9/v1","name":"m"}}`), 0o644))
	must(os.Symlink("/dev/zero", filepath.Join(ws, ".gitignore")))
	must(os.Symlink("/dev/zero", filepath.Join(ws, ".soba", "memory", "MEMORY.md")))
	must(syscall.Mkfifo(filepath.Join(ws, ".soba", "skills", "x", "SKILL.md"), 0o644))
	must(syscall.Mkfifo(filepath.Join(ws, ".soba", "sessions", "s_fifo.jsonl"), 0o600))
	must(os.Symlink("/dev/stdin", filepath.Join(ws, "stdin")))
	f, err := os.Create(filepath.Join(ws, "core.dump"))
	must(err)
	must(f.Truncate(64 << 30))
	must(f.Close())

	cmd := exec.Command(binary, "--log-file", filepath.Join(t.TempDir(), "soba.log"))
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME=")
	in, err := cmd.StdinPipe()
	must(err)
	out, err := cmd.StdoutPipe()
	must(err)
	must(cmd.Start())
	killer := time.AfterFunc(30*time.Second, func() { _ = cmd.Process.Kill() })
	defer killer.Stop()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	p := &proc{t: t, cmd: cmd, in: in, out: bufio.NewReader(out)}

	p.initialize()
	execute := func(id int, command string, args ...any) map[string]any {
		p.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": "workspace/executeCommand",
			"params": map[string]any{"command": command, "arguments": args}})
		return p.response(id)
	}
	for _, c := range []struct {
		id      int
		command string
		args    map[string]any
		has     string
	}{
		{2, "soba.session.resume", map[string]any{"sessionId": "s_fifo"}, "not a regular file"},
		{3, "soba.capsule.load", map[string]any{"path": "/dev/zero"}, "not a regular file"},
		{4, "soba.capsule.load", map[string]any{"path": "stdin"}, "escapes the workspace root"},
		{5, "soba.capsule.load", map[string]any{"path": "core.dump"}, "over the"},
	} {
		r := execute(c.id, c.command, c.args)
		e, _ := r["error"].(map[string]any)
		if msg, _ := e["message"].(string); !strings.Contains(msg, c.has) {
			t.Errorf("%s %v = %v, want an error saying %q", c.command, c.args, r, c.has)
		}
	}
	if r := execute(6, "soba.budget"); r["result"] == nil {
		t.Errorf("soba.budget after the attacks: %v", r)
	}
	p.send(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "shutdown"})
	p.response(7)
	p.send(map[string]any{"jsonrpc": "2.0", "method": "exit"})
	if code := p.exitCode(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
}

// TestCapsuleShowHostileFile_RW1: `capsule show` of /dev/zero, a link to it,
// a FIFO or a sparse giant exits 1 at once with an error naming the file.
func TestCapsuleShowHostileFile_RW1(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.capsule.md")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.capsule.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Create(filepath.Join(dir, "big.capsule.md"))
	f.Truncate(64 << 30)
	f.Close()
	for _, c := range []struct{ file, has string }{
		{"/dev/zero", "/dev/zero is not a regular file"},
		{filepath.Join(dir, "zero.capsule.md"), "zero.capsule.md is not a regular file"},
		{filepath.Join(dir, "pipe.capsule.md"), "pipe.capsule.md is not a regular file (a named pipe)"},
		{filepath.Join(dir, "big.capsule.md"), "big.capsule.md is 68719476736 bytes, over the"},
	} {
		var out, errb strings.Builder
		done := make(chan int, 1)
		go func() { done <- run([]string{"capsule", "show", c.file}, strings.NewReader(""), &out, &errb) }()
		select {
		case code := <-done:
			if code != 1 || !strings.Contains(errb.String(), c.has) {
				t.Errorf("capsule show %s: exit %d, %q; want 1 saying %q", c.file, code, errb.String(), c.has)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("capsule show %s did not return within 10s", c.file)
		}
	}
}
