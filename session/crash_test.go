package session

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// crashChildEnv names the session file the re-executed test binary appends
// to until it is killed.
const crashChildEnv = "SOBA_SESSION_CRASH_CHILD"

// TestCrashMidAppend_RT5 runs a child process (this test binary, re-executed)
// that appends entries of mixed sizes, fsyncing each, and prints each id once
// Append has returned. The parent checks that the child's lock refuses a
// second store across processes, SIGKILLs it mid-loop, and then resumes:
// every entry reported done is there, a torn line (if the kill cut a write)
// is ignored, and appending continues cleanly.
func TestCrashMidAppend_RT5(t *testing.T) {
	if path := os.Getenv(crashChildEnv); path != "" {
		crashChild(path)
		return
	}
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	s, err := Create(t.TempDir(), SessionHeader{SessionID: "s_crash"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := s.FilePath()
	s.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashMidAppend_RT5$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()

	var done []string
	sc := bufio.NewScanner(out)
	for sc.Scan() && len(done) < 60 {
		if id, ok := strings.CutPrefix(sc.Text(), "appended "); ok {
			done = append(done, id)
		}
		if len(done) == 5 {
			_, _, err := Open(path, Options{})
			if !errors.Is(err, ErrInUse) {
				t.Errorf("open while another process appends: %v, want %v", err, ErrInUse)
			}
		}
	}
	if len(done) < 60 {
		t.Fatalf("child stopped after %d entries: %v", len(done), sc.Err())
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no deferred cleanup runs
		t.Fatal(err)
	}
	cmd.Wait()
	killed = true

	s, rep, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t.Logf("after SIGKILL: %v", rep)
	for _, id := range done {
		if _, ok := s.Meta(id); !ok {
			t.Fatalf("entry %s was reported appended but is missing after the crash", id)
		}
	}
	if rep.BadLineCount != 0 || rep.MissingParentCount != 0 {
		t.Fatalf("damage beyond a torn tail: %v", rep)
	}
	p := s.Path()
	if len(p) != rep.Entries {
		t.Fatalf("path has %d entries, file %d: the chain is broken", len(p), rep.Entries)
	}
	for _, m := range s.All() {
		if _, err := s.Load(m.ID); err != nil {
			t.Fatalf("complete entry does not load: %v", err)
		}
	}
	next := mustAppend(t, s, user("after the crash"))
	s.Close()
	s2, rep2, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	wantBad := 0
	if rep.Torn != nil {
		wantBad = 1
	}
	if s2.Leaf() != next.ID || rep2.Torn != nil || rep2.BadLineCount != wantBad || rep2.Entries != rep.Entries+1 {
		t.Fatalf("after append: leaf %q (want %q), report %v", s2.Leaf(), next.ID, rep2)
	}
}

// crashChild appends until killed; every fifth entry is large so that a kill
// can land inside a write.
func crashChild(path string) {
	s, _, err := Open(path, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	deadline := time.Now().Add(2 * time.Minute) // never outlive a lost parent for long
	for i := 0; time.Now().Before(deadline); i++ {
		size := 200
		if i%5 == 4 {
			size = 2 << 20
		}
		e, err := s.Append(Entry{Type: TypeToolResult, ToolResult: &ToolResult{ToolCallID: fmt.Sprint("c", i), ToolName: "bash", OK: true,
			Content: strings.Repeat("z", size)}})
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(2)
		}
		fmt.Println("appended", e.ID)
	}
	os.Exit(3)
}
