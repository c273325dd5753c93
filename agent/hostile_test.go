package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/tool"
	"github.com/soba-agent/soba-lsp/workspace"
)

const outsideSecret = "root:x:0:0 OUTSIDE-SECRET\n"

// hostileEnv is a workspace as an attacker commits it: links to an outside
// file, to /dev/zero, to /dev/stdin and to an outside directory, a FIFO, a
// sparse 64 GB file, skills linked outside and to /dev/zero, next to honest
// files. outside is the directory the links point into.
func hostileEnv(t *testing.T) (env *toolEnv, outside string) {
	t.Helper()
	ws, outside := t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte(outsideSecret), 0o644))
	must(os.MkdirAll(filepath.Join(outside, "skill"), 0o755))
	must(os.WriteFile(filepath.Join(outside, "skill", "SKILL.md"), []byte(outsideSecret), 0o644))
	files := map[string]string{
		"main.go":                         "package main\n// needle\n",
		"lines.txt":                       strings.Repeat("line\n", 10000),
		".soba/skills/good/SKILL.md":      "---\nname: good\n---\nBe good.\n",
		".soba/sessions/s_1.jsonl":        "{}\n",
		".soba/config.json":               "{}\n",
		".soba/memory/MEMORY.md":          "# memory\n",
		".soba/flight/f.jsonl":            "{}\n",
		".soba/skills/linked/placeholder": "",
	}
	for name, content := range files {
		p := filepath.Join(ws, filepath.FromSlash(name))
		must(os.MkdirAll(filepath.Dir(p), 0o755))
		must(os.WriteFile(p, []byte(content), 0o644))
	}
	must(os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ws, "leak")))
	must(os.Symlink("/dev/zero", filepath.Join(ws, "zero")))
	must(os.Symlink("/dev/stdin", filepath.Join(ws, "stdin")))
	must(os.Symlink(outside, filepath.Join(ws, "outdir")))
	must(syscall.Mkfifo(filepath.Join(ws, "pipe"), 0o644))
	f, err := os.Create(filepath.Join(ws, "core.dump"))
	must(err)
	must(f.Truncate(64 << 30))
	must(f.Close())
	must(os.Symlink(filepath.Join(outside, "skill", "SKILL.md"), filepath.Join(ws, ".soba/skills/linked/SKILL.md")))
	must(os.MkdirAll(filepath.Join(ws, ".soba/skills/zero"), 0o755))
	must(os.Symlink("/dev/zero", filepath.Join(ws, ".soba/skills/zero/SKILL.md")))
	must(os.Symlink(filepath.Join(outside, "skill"), filepath.Join(ws, ".soba/skills/dirlink")))
	must(os.Symlink(".soba", filepath.Join(ws, "alias")))
	root, err := workspace.NewRoot(ws)
	must(err)
	t.Cleanup(func() { root.Close() })
	return &toolEnv{root: root, dir: root.Dir(), skills: &skillSet{root: root},
		protected: protectedPaths(root.Dir(), filepath.Join(root.Dir(), ".soba", "sessions"), filepath.Join(root.Dir(), ".soba", "flight"))}, outside
}

// bounded runs one tool call and fails the test when it does not return
// within 10 s: a hang is the failure these rules forbid.
func bounded(t *testing.T, env *toolEnv, name, args string) toolRun {
	t.Helper()
	done := make(chan toolRun, 1)
	go func() { done <- runTool(env, name, args) }()
	select {
	case r := <-done:
		return r
	case <-time.After(10 * time.Second):
		t.Fatalf("%s %s did not return within 10s", name, args)
	}
	return toolRun{}
}

func TestToolsReadOnlyInsideTheWorkspace_RW1(t *testing.T) {
	env, outside := hostileEnv(t)
	cases := []struct {
		name, tool, args string
		ok               bool
		has              string
	}{
		{"read_file link outside", tool.ReadFile, `{"path":"leak"}`, false, "escapes the workspace root"},
		{"read_file through a symlinked directory", tool.ReadFile, `{"path":"outdir/secret"}`, false, "escapes the workspace root"},
		{"read_file /dev/zero link", tool.ReadFile, `{"path":"zero"}`, false, "escapes the workspace root"},
		{"read_file /dev/stdin link", tool.ReadFile, `{"path":"stdin"}`, false, "escapes the workspace root"},
		{"read_file FIFO", tool.ReadFile, `{"path":"pipe"}`, false, "pipe is not a regular file (a named pipe)"},
		{"read_file sparse 64 GB with limit", tool.ReadFile, `{"path":"core.dump","limit":5}`, false, "core.dump is a binary file"},
		{"read_file offset and limit", tool.ReadFile, `{"path":"lines.txt","offset":9000,"limit":2}`, true, "line\nline\n\n[lines.txt: showing lines 9000-9001 of 10000; continue with offset 9002]"},
		{"read_file past the end", tool.ReadFile, `{"path":"lines.txt","offset":10001}`, false, "lines.txt has 10000 lines, offset 10001 is past the end"},
		{"grep skips links, FIFOs and huge files", tool.Grep, `{"pattern":"root|needle"}`, true, "main.go:2: // needle"},
		{"grep names the skipped huge file", tool.Grep, `{"pattern":"x"}`, true, "[skipped 1 files over 8388608 bytes: core.dump]"},
		{"grep a FIFO named explicitly", tool.Grep, `{"pattern":"x","path":"pipe"}`, true, "(no matches)"},
		{"grep a symlinked directory", tool.Grep, `{"pattern":"root","path":"outdir"}`, false, "escapes the workspace root"},
		{"list_files never enters a symlinked directory", tool.ListFiles, `{"path":"."}`, true, "outdir\npipe"},
		{"activate_skill linked outside", tool.ActivateSkill, `{"name":"linked"}`, false, "escapes the workspace root"},
		{"activate_skill /dev/zero", tool.ActivateSkill, `{"name":"zero"}`, false, "escapes the workspace root"},
		{"activate_skill directory linked outside", tool.ActivateSkill, `{"name":"dirlink"}`, false, "escapes the workspace root"},
		{"activate_skill inside", tool.ActivateSkill, `{"name":"good"}`, true, "Be good."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := bounded(t, env, c.tool, c.args)
			if r.ok != c.ok || !strings.Contains(r.content, c.has) {
				t.Fatalf("%s %s = ok %v %q\nwant ok %v containing %q", c.tool, c.args, r.ok, r.content, c.ok, c.has)
			}
			if strings.Contains(r.content, "OUTSIDE-SECRET") {
				t.Fatalf("%s %s returned outside content: %q", c.tool, c.args, r.content)
			}
		})
	}
	if names := env.skills.list(); len(names) != 1 || names[0].Name != "good" {
		t.Errorf("skills listed %v, want only good", names)
	}
	assertOutside(t, outside)
}

// assertOutside checks that the outside directory is as hostileEnv made it.
func assertOutside(t *testing.T, outside string) {
	t.Helper()
	var got []string
	filepath.WalkDir(outside, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			got = append(got, fmt.Sprintf("%s=%q", strings.TrimPrefix(p, outside), b))
		}
		return nil
	})
	want := fmt.Sprintf("/secret=%q /skill/SKILL.md=%q", outsideSecret, outsideSecret)
	if strings.Join(got, " ") != want {
		t.Errorf("outside directory is now %v\nwant %s", got, want)
	}
}

func TestToolsWriteOnlyInsideAndNeverTheReceipts_RW1_RW2(t *testing.T) {
	env, outside := hostileEnv(t)
	ws := env.dir
	cases := []struct {
		name, tool, args string
		has              string
		unchanged        string // a workspace file that must keep its content
	}{
		{"write through a link outside", tool.WriteFile, `{"path":"leak","content":"x"}`, "escapes the workspace root", ""},
		{"write into a symlinked directory", tool.WriteFile, `{"path":"outdir/planted","content":"x"}`, "escapes the workspace root", ""},
		{"write a FIFO", tool.WriteFile, `{"path":"pipe","content":"x"}`, "pipe is not a regular file", ""},
		{"write the transcript", tool.WriteFile, `{"path":".soba/sessions/s_1.jsonl","content":""}`, ".soba/sessions/s_1.jsonl is protected", ".soba/sessions/s_1.jsonl"},
		{"write a new session file", tool.WriteFile, `{"path":".soba/sessions/s_2.jsonl","content":"{}"}`, "is protected", ""},
		{"write the transcript by absolute path", tool.WriteFile, fmt.Sprintf(`{"path":%q,"content":""}`, filepath.Join(ws, ".soba/sessions/s_1.jsonl")), "is protected", ".soba/sessions/s_1.jsonl"},
		{"write the transcript through an alias", tool.WriteFile, `{"path":"alias/sessions/s_1.jsonl","content":""}`, ".soba/sessions/s_1.jsonl is protected", ".soba/sessions/s_1.jsonl"},
		{"write the config", tool.WriteFile, `{"path":".soba/config.json","content":"{\"tools\":{\"approval\":\"auto\"}}"}`, ".soba/config.json is protected", ".soba/config.json"},
		{"write a flight record", tool.WriteFile, `{"path":".soba/flight/f.jsonl","content":""}`, "is protected", ".soba/flight/f.jsonl"},
		{"write Project Memory", tool.WriteFile, `{"path":".soba/memory/MEMORY.md","content":""}`, "is protected", ".soba/memory/MEMORY.md"},
		{"edit the config", tool.EditFile, `{"path":".soba/config.json","old_text":"{}","new_text":"{\"tools\":{\"approval\":\"auto\"}}"}`, "is protected", ".soba/config.json"},
		{"edit the transcript through an alias", tool.EditFile, `{"path":"alias/sessions/s_1.jsonl","old_text":"{}","new_text":"x"}`, "is protected", ".soba/sessions/s_1.jsonl"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var before []byte
			if c.unchanged != "" {
				before, _ = os.ReadFile(filepath.Join(ws, c.unchanged))
			}
			r := bounded(t, env, c.tool, c.args)
			if r.ok || !strings.Contains(r.content, c.has) {
				t.Fatalf("%s %s = ok %v %q, want refused saying %q", c.tool, c.args, r.ok, r.content, c.has)
			}
			if c.unchanged != "" {
				if after, _ := os.ReadFile(filepath.Join(ws, c.unchanged)); string(after) != string(before) {
					t.Errorf("%s changed: %q → %q", c.unchanged, before, after)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(ws, ".soba/sessions/s_2.jsonl")); err == nil {
		t.Error("a refused write left .soba/sessions/s_2.jsonl behind")
	}
	if r := bounded(t, env, tool.WriteFile, `{"path":"src/new.go","content":"package src\n"}`); !r.ok {
		t.Errorf("an ordinary write was refused: %s", r.content)
	}
	assertOutside(t, outside)
}

// TestToolDeadlineAndCancel_RW4: a reading tool past its deadline ends with
// a result saying so, and a cancelled turn stops a running command at once.
func TestToolDeadlineAndCancel_RW4(t *testing.T) {
	env, _ := hostileEnv(t)
	// A tree big enough that walking it takes far longer than the deadline.
	for i := range 40 {
		d := filepath.Join(env.dir, "tree", fmt.Sprint(i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for j := range 100 {
			if err := os.WriteFile(filepath.Join(d, fmt.Sprint(j)), []byte("some text\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	env.timeout = time.Millisecond
	start := time.Now()
	r := bounded(t, env, tool.Grep, `{"pattern":"needle"}`)
	if r.ok || r.content != "grep: timed out after 1ms" {
		t.Errorf("grep past its deadline = ok %v %q, want %q", r.ok, r.content, "grep: timed out after 1ms")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("grep past its 1ms deadline took %v", d)
	}
	env.timeout = 0

	for _, c := range []struct{ name, tool, args, want string }{
		{"bash", tool.Bash, `{"command":"sleep 30"}`, "[interrupted]"},
		{"grep", tool.Grep, `{"pattern":"needle"}`, "grep: interrupted"},
	} {
		t.Run("cancel "+c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(200*time.Millisecond, cancel)
			if c.tool == tool.Grep {
				cancel() // before the walk can finish
			}
			start := time.Now()
			r := env.run(ctx, session.ToolCall{ID: "c", Name: c.tool, Arguments: json.RawMessage(c.args)})
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("cancelled %s returned after %v", c.name, d)
			}
			if r.ok || !strings.Contains(r.content, c.want) {
				t.Errorf("cancelled %s = ok %v %q, want %q", c.name, r.ok, r.content, c.want)
			}
		})
	}
}

// TestApprovalShowsExactlyWhatRuns_RW3: the approval text holds the whole
// command, however the model formats its arguments, with padding and
// control characters made visible; writes show the path and the change.
func TestApprovalShowsExactlyWhatRuns_RW3(t *testing.T) {
	pad := strings.Repeat(" ", 300)
	cases := []struct {
		name, tool, args string
		want             []string
		not              []string
	}{
		{"indented JSON", tool.Bash, "{\n  \"command\": \"go test ./...\"\n}", []string{"command:\ngo test ./..."}, []string{"{"}},
		{"padding before a second command", tool.Bash, fmt.Sprintf(`{"command":"echo checking build status%s; rm -rf ~/important"}`, pad),
			[]string{"echo checking build status[300 spaces]; rm -rf ~/important"}, []string{pad}},
		{"multi-line script", tool.Bash, `{"command":"set -e\nmake\nrm -rf /tmp/x"}`, []string{"command:\nset -e\nmake\nrm -rf /tmp/x"}, nil},
		{"escape sequences and carriage return", tool.Bash, `{"command":"echo ok\r\u001b[2Krm -rf ~"}`, []string{`echo ok\r\x1b[2Krm -rf ~`}, []string{"\x1b", "\r"}},
		{"bidirectional override", tool.Bash, `{"command":"echo \u202erm -rf ~"}`, []string{`echo \u202erm -rf ~`}, []string{"\u202e"}},
		{"tabs", tool.Bash, `{"command":"a\tb"}`, []string{`a\tb`}, []string{"\t"}},
		{"write_file", tool.WriteFile, `{"path":"src/a.go","content":"package a\n\nfunc A() {}\n"}`, []string{"write src/a.go (23 bytes):\npackage a\n\nfunc A() {}\n"}, nil},
		{"edit_file", tool.EditFile, `{"path":"a.go","old_text":"return a - b","new_text":"return a + b"}`, []string{"edit a.go, replacing:\nreturn a - b\nwith:\nreturn a + b"}, nil},
		{"undecodable arguments shown whole", tool.Bash, `{"command":42}`, []string{`arguments:` + "\n" + `{"command":42}`}, nil},
		{"long content says what is left out", tool.WriteFile, `{"path":"big.txt","content":"` + strings.Repeat("a", 20000) + `"}`, []string{"[… 3616 bytes not shown …]"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := approvalSummary(session.ToolCall{Name: c.tool, Arguments: json.RawMessage(c.args)})
			for _, w := range c.want {
				if !strings.Contains(s, w) {
					t.Errorf("approval text %q\nlacks %q", s, w)
				}
			}
			for _, n := range c.not {
				if strings.Contains(s, n) {
					t.Errorf("approval text %q contains %q", s, n)
				}
			}
		})
	}
}

// TestCapsuleExportRefusesReceipts_RW2: an export never replaces the live
// transcript, a flight record, a lock, the configuration or another
// session's transcript, by relative, absolute or symlinked path, even with
// overwrite; the transcript stays intact.
func TestCapsuleExportRefusesReceipts_RW2(t *testing.T) {
	f := newFixture(t, func(o *Options) { smallWindow(o); o.Compaction.Auto = false }, append(workScript(), providertest.Text("still here"))...)
	f.work(t)
	ck, _, err := f.agent.CapsuleCreate(context.Background(), "receipts")
	if err != nil {
		t.Fatal(err)
	}
	info, err := f.agent.Info()
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "elsewhere.jsonl")
	live, _ := os.ReadFile(info.Path)
	if err := os.WriteFile(other, live, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(info.Path, filepath.Join(f.dir, "innocent.capsule.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(f.dir, ".soba", "sessions"), filepath.Join(f.dir, "s")); err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(f.dir, info.Path)
	cases := []struct{ name, path, has string }{
		{"the live transcript, relative", rel, "is a receipt"},
		{"the live transcript, absolute", info.Path, "is a receipt"},
		{"a new file in the session directory", ".soba/sessions/new.capsule.md", "is a receipt"},
		{"through a symlinked directory", "s/" + filepath.Base(info.Path), "is a receipt"},
		{"through a symlink to the transcript", "innocent.capsule.md", "is a receipt"},
		{"its lock", info.Path + ".lock", "is a receipt"},
		{"a lock elsewhere", filepath.Join(t.TempDir(), "x.lock"), "is a lock file"},
		{"a flight record", ".soba/flight/f.jsonl", "is a receipt"},
		{"the configuration", ".soba/config.json", ".soba/config.json is protected"},
		{"another session's transcript", other, "is a session transcript"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := f.agent.CapsuleExport(ck, c.path, true); err == nil || !strings.Contains(err.Error(), c.has) {
				t.Fatalf("export to %s = %v, want refused saying %q", c.path, err, c.has)
			}
		})
	}
	if now, _ := os.ReadFile(info.Path); string(now) != string(live) {
		t.Error("the live transcript changed")
	}
	if b, _ := os.ReadFile(other); string(b) != string(live) {
		t.Error("the other transcript changed")
	}
	if _, err := f.agent.CapsuleExport(ck, "ok.capsule.md", true); err != nil {
		t.Errorf("an ordinary export was refused: %v", err)
	}
	f.prompt(t, "still answering")
	if _, err := session.VerifyFile(info.Path); err != nil {
		t.Errorf("transcript no longer scans: %v", err)
	}
}

// TestCapsuleLoadHostile_RW1: capsule.load of /dev/zero, a FIFO, a link to
// /dev/zero and a sparse giant returns an error at once and appends nothing.
func TestCapsuleLoadHostile_RW1(t *testing.T) {
	f := newFixture(t, nil)
	if err := syscall.Mkfifo(filepath.Join(f.dir, "pipe.capsule.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(f.dir, "zero.capsule.md")); err != nil {
		t.Fatal(err)
	}
	sp, _ := os.Create(filepath.Join(f.dir, "sparse.capsule.md"))
	sp.Truncate(64 << 30)
	sp.Close()
	outFifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(outFifo, 0o644); err != nil {
		t.Fatal(err)
	}
	before := len(f.entries(t))
	for _, c := range []struct{ path, has string }{
		{"/dev/zero", "not a regular file"},
		{"pipe.capsule.md", "not a regular file"},
		{"zero.capsule.md", "escapes the workspace root"},
		{"sparse.capsule.md", "over the"},
		{outFifo, "not a regular file"},
	} {
		done := make(chan error, 1)
		go func() { _, _, _, err := f.agent.CapsuleLoad(c.path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.has) {
				t.Errorf("load %s = %v, want an error saying %q", c.path, err, c.has)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("load %s did not return within 5s", c.path)
		}
	}
	if n := len(f.entries(t)); n != before {
		t.Errorf("%d entries appended by refused loads", n-before)
	}
}

// TestWriteFileSymlinkSwapRace_RW1: while a directory of the workspace is
// swapped with a symlink to an outside directory in a loop, 400 write_file
// and read_file calls go through it: no write lands outside and no read
// returns the outside file.
func TestWriteFileSymlinkSwapRace_RW1(t *testing.T) {
	env, outside := hostileEnv(t)
	victim := filepath.Join(outside, "victim")
	if err := os.MkdirAll(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(victim, "f.txt"), []byte("OUTSIDE-SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(env.dir, "d")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			os.Rename(d, d+".real")
			os.Symlink(victim, d)
			os.Remove(d)
			os.Rename(d+".real", d)
		}
	}()
	leaks := 0
	for range 400 {
		runTool(env, tool.WriteFile, `{"path":"d/f.txt","content":"inside"}`)
		if r := runTool(env, tool.ReadFile, `{"path":"d/f.txt"}`); strings.Contains(r.content, "OUTSIDE-SECRET") {
			leaks++
		}
	}
	close(stop)
	<-done
	if b, _ := os.ReadFile(filepath.Join(victim, "f.txt")); string(b) != "OUTSIDE-SECRET" {
		t.Errorf("a write landed outside: %q", b)
	}
	if ents, _ := os.ReadDir(victim); len(ents) != 1 {
		t.Errorf("outside directory has %d entries, want 1", len(ents))
	}
	if leaks > 0 {
		t.Errorf("%d reads returned the outside file", leaks)
	}
}

// TestApprovalRequestProposesTheChange_RW3: a write or an edit is asked with
// the path and the file's whole content after the change (what an editor
// diffs against the file); a call whose change is not known proposes
// nothing.
func TestApprovalRequestProposesTheChange_RW3(t *testing.T) {
	env, _ := hostileEnv(t)
	cases := []struct {
		name, tool, args string
		path, proposed   string // "" path: no proposal
	}{
		{"write_file", tool.WriteFile, `{"path":"src/a.go","content":"package a\n"}`, "src/a.go", "package a\n"},
		{"edit_file", tool.EditFile, `{"path":"main.go","old_text":"// needle","new_text":"// thread"}`, "main.go", "package main\n// thread\n"},
		{"edit_file not found", tool.EditFile, `{"path":"main.go","old_text":"absent","new_text":"x"}`, "", ""},
		{"write_file escaping", tool.WriteFile, `{"path":"../x","content":"y"}`, "", ""},
		{"bash", tool.Bash, `{"command":"ls"}`, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := env.approvalRequest(session.ToolCall{Name: c.tool, Arguments: json.RawMessage(c.args)})
			if req.Tool != c.tool || req.Summary == "" {
				t.Fatalf("request %+v", req)
			}
			if c.path == "" {
				if req.Path != "" || req.Proposed != nil {
					t.Errorf("request proposes %q for %s", req.Path, c.args)
				}
				return
			}
			if req.Path != c.path || req.Proposed == nil || *req.Proposed != c.proposed {
				t.Errorf("proposal %q %v, want %q %q", req.Path, req.Proposed, c.path, c.proposed)
			}
		})
	}
}

// TestFlightFileLinkRefused_RW2: resuming a session whose flight file was
// committed as a link to an outside file fails naming it, and nothing is
// appended outside.
func TestFlightFileLinkRefused_RW2(t *testing.T) {
	env, outside := hostileEnv(t)
	sessions := filepath.Join(env.dir, ".soba", "sessions")
	s, err := session.Create(sessions, session.SessionHeader{Version: 1, SessionID: "s_flight", Workspace: env.dir}, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	flight := filepath.Join(env.dir, ".soba", "flight")
	if err := os.MkdirAll(flight, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(flight, "s_flight.jsonl")); err != nil {
		t.Fatal(err)
	}
	opt := Options{Root: env.dir, Resolver: env.root, SessionDir: sessions, FlightDir: flight,
		Compaction: compaction.DefaultConfig(), Counter: quarterCounter{}, EntryTokens: entryTokens}
	a, _, err := Resume(opt, filepath.Join(sessions, "s_flight.jsonl"))
	if err == nil {
		a.Close()
		t.Fatal("resume with a linked flight file succeeded")
	}
	if !strings.Contains(err.Error(), "s_flight.jsonl: not a regular file") {
		t.Errorf("error %q does not name the flight file", err)
	}
	assertOutside(t, outside)
}

// recordingApprover answers every request with decision and records them.
type recordingApprover struct {
	mu       sync.Mutex
	decision Approval
	asked    []ApprovalRequest
}

func (r *recordingApprover) Approve(_ context.Context, req ApprovalRequest) (Approval, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, req)
	return r.decision, nil
}

// TestSkillChangeAlwaysAsked_RW3: a write to a skill is asked every time,
// under approval "auto" and after "Allow for session"; other writes under
// "auto" are not asked.
func TestSkillChangeAlwaysAsked_RW3(t *testing.T) {
	rec := &recordingApprover{decision: AllowSession}
	f := newFixture(t, func(o *Options) { o.Approval = "auto"; o.Approver = rec },
		providertest.Call("c1", "write_file", map[string]any{"path": ".soba/skills/x/SKILL.md", "content": "---\nname: x\n---\nobey\n"}),
		providertest.Call("c2", "write_file", map[string]any{"path": ".soba/skills/x/SKILL.md", "content": "---\nname: x\n---\nobey more\n"}),
		providertest.Call("c3", "write_file", map[string]any{"path": "notes.txt", "content": "hi"}),
		providertest.Text("done"))
	if end := f.prompt(t, "write the skill"); end.Outcome != "completed" {
		t.Fatalf("turn %s", end.Outcome)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.asked) != 2 {
		t.Fatalf("asked %d times, want 2 (each skill write, not notes.txt)", len(rec.asked))
	}
	for _, r := range rec.asked {
		// EveryTime: a front end offers no answer for the session, which would not hold.
		if r.Tool != tool.WriteFile || r.Path != ".soba/skills/x/SKILL.md" || r.Proposed == nil || !r.EveryTime {
			t.Errorf("request %+v", r)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, ".soba/skills/x/SKILL.md")); !strings.Contains(string(b), "obey more") {
		t.Errorf("the approved skill write did not happen: %q", b)
	}
}
