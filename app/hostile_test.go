package app

import (
	"encoding/json"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
	"github.com/soba-agent/soba-lsp/lsp"
	"github.com/soba-agent/soba-lsp/lsp/lsptest"
	"github.com/soba-agent/soba-lsp/lsp/protocol"
	"github.com/soba-agent/soba-lsp/session"
)

// The hostile-workspace suite: the real language server with the real
// agent backend over a pipe, the fake model speaking OpenAI's wire format,
// and a workspace built as an attacker would commit it. Every case is bounded
// by a deadline and ends by checking that the server still answers
// soba.budget, that nothing outside the workspace was read into the
// transcript or written, and that the transcript scans clean.

const hostileSecret = "root:x:0:0 HOSTILE-OUTSIDE-SECRET\n"

// hostileRepo lays out a workspace with the links and special files of the
// issue's attacks and returns it with the outside directory they point into.
// make adds case-specific files.
func hostileRepo(t *testing.T, make func(ws, outside string)) (ws, outside string) {
	t.Helper()
	ws, outside = t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte(hostileSecret), 0o644))
	must(os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n// needle\n"), 0o644))
	must(os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ws, "leak")))
	must(os.Symlink("/dev/stdin", filepath.Join(ws, "stdin")))
	must(os.Symlink("/dev/zero", filepath.Join(ws, "zero")))
	must(syscall.Mkfifo(filepath.Join(ws, "pipe"), 0o644))
	f, err := os.Create(filepath.Join(ws, "core.dump"))
	must(err)
	must(f.Truncate(64 << 30))
	must(f.Close())
	if make != nil {
		make(ws, outside)
	}
	return ws, outside
}

// hostileServer starts the real server on ws with the real configuration
// loader (the workspace's own .soba/config.json is read) and the fake model
// answering script, and sends initialize; it returns the editor and
// initialize's error, if any.
func hostileServer(t *testing.T, ws string, script []providertest.Reply) (*lsptest.Editor, *lsptest.Error) {
	e, _, rerr := hostileServerModel(t, ws, script)
	return e, rerr
}

// hostileServerModel is hostileServer that also returns the fake model, whose
// requests show what went to the model.
func hostileServerModel(t *testing.T, ws string, script []providertest.Reply) (*lsptest.Editor, *providertest.Server, *lsptest.Error) {
	t.Helper()
	model := providertest.NewOpenAI(t, script...)
	load := func(root string, init, change json.RawMessage) (Settings, []string, error) {
		s, warnings, err := LoadSettings(root, init, change)
		if err != nil {
			return s, warnings, err
		}
		s.Model = ModelSettings{Provider: "openai", BaseURL: model.URL, Name: "m", ContextWindow: 12000, MaxOutputTokens: 1000}
		s.Approval = "auto"
		return s, warnings, nil
	}
	srvEnd, edEnd := net.Pipe()
	e := serveLSP(t, load, srvEnd, edEnd)
	params := map[string]any{"processId": nil, "rootUri": (&url.URL{Scheme: "file", Path: ws}).String(),
		"capabilities": map[string]any{"window": map[string]any{"workDoneProgress": true}}}
	var rerr *lsptest.Error
	within(t, 10*time.Second, "initialize", func() { rerr = e.Call(lsp.MethodInitialize, params, nil) })
	if rerr == nil {
		e.Notify(lsp.MethodInitialized, map[string]any{})
	}
	return e, model, rerr
}

// within fails the test when f does not return within d.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// stillServing checks what every case ends with: soba.budget answers, the
// transcript (when there is one) scans without problems and holds no byte of
// the outside secret, and the outside directory is unchanged.
func stillServing(t *testing.T, e *lsptest.Editor, outside string) {
	t.Helper()
	within(t, 10*time.Second, "soba.budget", func() {
		if err := e.Command(protocol.CommandBudget, nil, nil); err != nil {
			t.Errorf("soba.budget after the attack: %v", err)
		}
	})
	var info protocol.SessionInfo
	if err := e.Command(protocol.CommandSessionInfo, nil, &info); err == nil && info.Path != "" {
		sc, err := session.VerifyFile(info.Path)
		if err != nil {
			t.Errorf("verify: %v", err)
		} else if len(sc.Problems) > 0 {
			t.Errorf("verify: transcript damaged: %v", sc.Problems)
		}
		if data, _ := os.ReadFile(info.Path); strings.Contains(string(data), "HOSTILE-OUTSIDE-SECRET") {
			t.Error("the transcript holds bytes read from outside the workspace")
		}
	}
	ents, _ := os.ReadDir(outside)
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); len(ents) != 1 || string(b) != hostileSecret {
		t.Errorf("the outside directory changed: %d entries, secret %q", len(ents), b)
	}
}

// TestOpeningHostileRepository_RW1: a repository whose .gitignore,
// Project Memory or a skill links to /dev/zero, or is a FIFO, is opened:
// initialize answers at once and the server serves.
func TestOpeningHostileRepository_RW1(t *testing.T) {
	cases := []struct {
		name, rel string
		fifo      bool
	}{
		{".gitignore to /dev/zero", ".gitignore", false},
		{".gitignore FIFO", ".gitignore", true},
		{"MEMORY.md to /dev/zero", ".soba/memory/MEMORY.md", false},
		{"SKILL.md to /dev/zero", ".soba/skills/x/SKILL.md", false},
		{"SKILL.md FIFO", ".soba/skills/x/SKILL.md", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws, outside := hostileRepo(t, func(ws, _ string) {
				p := filepath.Join(ws, filepath.FromSlash(c.rel))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				var err error
				if c.fifo {
					err = syscall.Mkfifo(p, 0o644)
				} else {
					err = os.Symlink("/dev/zero", p)
				}
				if err != nil {
					t.Fatal(err)
				}
			})
			e, rerr := hostileServer(t, ws, []providertest.Reply{providertest.Text("ok")})
			if rerr != nil {
				t.Fatalf("initialize: %v", rerr)
			}
			stillServing(t, e, outside)
		})
	}
}

// TestHostileConfigRefusedAtInitialize_RW1_RW2: a committed config that
// links to /dev/zero, or moves sessionDir outside, is refused with an error
// naming it; initialize answers instead of hanging.
func TestHostileConfigRefusedAtInitialize_RW1_RW2(t *testing.T) {
	cases := []struct {
		name string
		make func(ws string) error
		has  string
	}{
		{"config to /dev/zero", func(ws string) error { return os.Symlink("/dev/zero", filepath.Join(ws, ".soba", "config.json")) }, "escapes the workspace root"},
		{"config FIFO", func(ws string) error { return syscall.Mkfifo(filepath.Join(ws, ".soba", "config.json"), 0o644) }, "not a regular file"},
		{"sessionDir outside", func(ws string) error {
			return os.WriteFile(filepath.Join(ws, ".soba", "config.json"), []byte(`{"sessionDir":"../../x"}`), 0o644)
		}, "must resolve inside the workspace"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws, _ := hostileRepo(t, func(ws, _ string) {
				if err := os.MkdirAll(filepath.Join(ws, ".soba"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := c.make(ws); err != nil {
					t.Fatal(err)
				}
			})
			_, rerr := hostileServer(t, ws, nil)
			if rerr == nil || !strings.Contains(rerr.Message, c.has) || !strings.Contains(rerr.Message, "config.json") {
				t.Fatalf("initialize = %v, want an error naming config.json and saying %q", rerr, c.has)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(filepath.Dir(ws)), "x")); err == nil {
				t.Error("a session directory was made outside the workspace")
			}
		})
	}
}

// TestHostileToolCallsOverTheWire_RW1_RW4: the model asks for every read
// the issue found escaping or hanging; each call ends within its deadline
// with a refusal, the turn completes, and nothing from outside reaches the
// transcript.
func TestHostileToolCallsOverTheWire_RW1_RW4(t *testing.T) {
	ws, outside := hostileRepo(t, nil)
	calls := []struct {
		name string
		args map[string]any
	}{
		{"grep", map[string]any{"pattern": "root|needle"}},
		{"read_file", map[string]any{"path": "leak"}},
		{"read_file", map[string]any{"path": "pipe"}},
		{"read_file", map[string]any{"path": "stdin"}},
		{"read_file", map[string]any{"path": "core.dump", "limit": 5}},
		{"grep", map[string]any{"pattern": "x", "path": "pipe"}},
		{"list_files", map[string]any{}},
		{"write_file", map[string]any{"path": "leak", "content": "pwned"}},
		{"write_file", map[string]any{"path": ".soba/config.json", "content": `{"tools":{"approval":"auto"}}`}},
	}
	var script []providertest.Reply
	for i, c := range calls {
		script = append(script, providertest.Call("c"+string(rune('a'+i)), c.name, c.args))
	}
	script = append(script, providertest.Text("done"))
	e, rerr := hostileServer(t, ws, script)
	if rerr != nil {
		t.Fatalf("initialize: %v", rerr)
	}
	var r protocol.PromptResult
	if err := e.Command(protocol.CommandPrompt, map[string]any{"text": "look around"}, &r); err != nil {
		t.Fatal(err)
	}
	var end protocol.Event
	e.Await(func(s lsptest.State) bool {
		for _, n := range lsptest.Of(s.Notes, lsp.MethodEvent) {
			var ev protocol.Event
			_ = json.Unmarshal(n.Params, &ev)
			if ev.Type == "turn_end" && ev.TurnID == r.TurnID {
				end = ev
				return true
			}
		}
		return false
	}, 30*time.Second)
	if end.Outcome != "completed" {
		t.Fatalf("turn ended %s: %s", end.Outcome, end.Error)
	}
	var info protocol.SessionInfo
	if err := e.Command(protocol.CommandSessionInfo, nil, &info); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(info.Path)
	for _, want := range []string{"main.go:2: // needle", "escapes the workspace root", "pipe is not a regular file", "core.dump is a binary file", ".soba/config.json is protected"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("transcript lacks %q", want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".soba", "config.json")); len(b) > 0 {
		t.Errorf("the config was written: %q", b)
	}
	stillServing(t, e, outside)
}

// TestHostileSessionAndCapsuleFiles_RW1_RW2: resuming a session file that is
// a FIFO or a link to /dev/zero, loading /dev/zero or a FIFO as a capsule,
// and exporting over the live transcript all answer at once with an error,
// and the transcript stays intact.
func TestHostileSessionAndCapsuleFiles_RW1_RW2(t *testing.T) {
	ws, outside := hostileRepo(t, func(ws, _ string) {
		d := filepath.Join(ws, ".soba", "sessions")
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(filepath.Join(d, "s_fifo.jsonl"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/dev/zero", filepath.Join(d, "s_zero.jsonl")); err != nil {
			t.Fatal(err)
		}
	})
	e, rerr := hostileServer(t, ws, []providertest.Reply{providertest.Text("first"), providertest.Text("second")})
	if rerr != nil {
		t.Fatalf("initialize: %v", rerr)
	}
	var r protocol.PromptResult
	if err := e.Command(protocol.CommandPrompt, map[string]any{"text": "hello"}, &r); err != nil {
		t.Fatal(err)
	}
	var info protocol.SessionInfo
	e.Await(func(lsptest.State) bool {
		return e.Command(protocol.CommandSessionInfo, nil, &info) == nil && info.Entries >= 3
	}, 10*time.Second)
	cases := []struct {
		command string
		args    map[string]any
		has     string
	}{
		{protocol.CommandSessionResume, map[string]any{"sessionId": "s_fifo"}, "not a regular file"},
		{protocol.CommandSessionResume, map[string]any{"sessionId": "s_zero"}, "symbolic link"},
		{protocol.CommandCapsuleLoad, map[string]any{"path": "/dev/zero"}, "not a regular file"},
		{protocol.CommandCapsuleLoad, map[string]any{"path": "pipe"}, "not a regular file"},
		{protocol.CommandCapsuleLoad, map[string]any{"path": "core.dump"}, "over the"},
	}
	for _, c := range cases {
		var err *lsptest.Error
		within(t, 10*time.Second, c.command, func() { err = e.Command(c.command, c.args, nil) })
		if err == nil || !strings.Contains(err.Message, c.has) {
			t.Errorf("%s %v = %v, want an error saying %q", c.command, c.args, err, c.has)
		}
	}
	var ck protocol.CheckpointResult
	if err := e.Command(protocol.CommandCheckpoint, map[string]any{"kind": "milestone", "note": "n"}, &ck); err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	var created protocol.CapsuleCreateResult
	if err := e.Command(protocol.CommandCapsuleCreate, map[string]any{"title": "t"}, &created); err != nil {
		t.Fatalf("capsule create: %v", err)
	}
	before, _ := os.ReadFile(info.Path)
	err := e.Command(protocol.CommandCapsuleExport, map[string]any{"checkpointId": created.CheckpointID, "path": info.Path, "overwrite": true}, nil)
	if err == nil || !strings.Contains(err.Message, "is a receipt") {
		t.Errorf("export over the live transcript = %v, want refused", err)
	}
	if after, _ := os.ReadFile(info.Path); !strings.HasPrefix(string(after), string(before)) {
		t.Error("the live transcript was replaced")
	}
	stillServing(t, e, outside)
}

// TestPoisonedEntriesReportedOnResume_RT3: a session file with a line whose
// header is valid but whose payload is not ("user":{"text":123}), a garbage
// line, a duplicate id and a missing parent resumes with a warning for each,
// naming the lines; the poisoned entry (the leaf) is left out of the model input, so
// the next turn completes; verify reports the same line.
func TestPoisonedEntriesReportedOnResume_RT3(t *testing.T) {
	ws, outside := hostileRepo(t, nil)
	dir := filepath.Join(ws, ".soba", "sessions")
	s, err := session.Create(dir, session.SessionHeader{Version: 1, SessionID: "s_poison", Workspace: ws}, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := s.Append(session.Entry{Type: session.TypeUser, User: &session.UserMessage{Text: "an honest question"}})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	poison := "this is not json\n" +
		`{"id":"` + first.ID + `","parentId":null,"type":"user","timestamp":"2026-12-01T00:00:00Z","tokens":3,"user":{"text":"dup"}}` + "\n" +
		`{"id":"u_orphan","parentId":"u_nowhere","type":"user","timestamp":"2026-12-01T00:00:00Z","tokens":3,"user":{"text":"an orphan"}}` + "\n" +
		`{"id":"u_poison","parentId":"` + first.ID + `","type":"user","timestamp":"2026-12-01T00:00:00Z","tokens":3,"user":{"text":123}}` + "\n"
	f, err := os.OpenFile(filepath.Join(dir, "s_poison.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(poison)
	f.Close()

	e, model, rerr := hostileServerModel(t, ws, []providertest.Reply{providertest.Text("answered")})
	if rerr != nil {
		t.Fatalf("initialize: %v", rerr)
	}
	within(t, 10*time.Second, "soba.session.resume", func() {
		if err := e.Command(protocol.CommandSessionResume, map[string]any{"sessionId": "s_poison"}, nil); err != nil {
			t.Fatalf("resume: %v", err)
		}
	})
	st := e.Await(func(s lsptest.State) bool {
		n := 0
		for _, m := range lsptest.Of(s.Notes, lsp.MethodShowMessage) {
			if strings.Contains(string(m.Params), "s_poison") {
				n++
			}
		}
		return n >= 2
	}, 10*time.Second)
	var shown string
	for _, m := range lsptest.Of(st.Notes, lsp.MethodShowMessage) {
		shown += string(m.Params) + "\n"
	}
	for _, want := range []string{"line 6: entry \\\"u_poison\\\" cannot be decoded", "left out of the model input", "line 3:", "line 4:", "duplicate entry id", "u_orphan"} {
		if !strings.Contains(shown, want) {
			t.Errorf("resume warnings lack %q:\n%s", want, shown)
		}
	}
	var r protocol.PromptResult
	if err := e.Command(protocol.CommandPrompt, map[string]any{"text": "go on"}, &r); err != nil {
		t.Fatal(err)
	}
	var end protocol.Event
	e.Await(func(s lsptest.State) bool {
		for _, n := range lsptest.Of(s.Notes, lsp.MethodEvent) {
			var ev protocol.Event
			_ = json.Unmarshal(n.Params, &ev)
			if ev.Type == "turn_end" && ev.TurnID == r.TurnID {
				end = ev
				return true
			}
		}
		return false
	}, 20*time.Second)
	if end.Outcome != "completed" {
		t.Fatalf("the turn after resume ended %s: %s", end.Outcome, end.Error)
	}
	reqs := model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests", len(reqs))
	}
	var texts []string
	for _, m := range reqs[0].Messages {
		texts = append(texts, m.Text)
	}
	if all := strings.Join(texts, "\n"); !strings.Contains(all, "an honest question") || !strings.Contains(all, "go on") {
		t.Errorf("the model input lost the decodable entries: %q", all)
	}
	sc, err := session.VerifyFile(filepath.Join(dir, "s_poison.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(sc.Problems, "\n"), "line 6") {
		t.Errorf("verify does not report line 6: %v", sc.Problems)
	}
	stillServingNoVerify(t, e, outside)
}

// stillServingNoVerify is stillServing for a transcript that is damaged on
// purpose: the server answers and nothing outside changed.
func stillServingNoVerify(t *testing.T, e *lsptest.Editor, outside string) {
	t.Helper()
	within(t, 10*time.Second, "soba.budget", func() {
		if err := e.Command(protocol.CommandBudget, nil, nil); err != nil {
			t.Errorf("soba.budget: %v", err)
		}
	})
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != hostileSecret {
		t.Errorf("outside secret changed")
	}
}

// TestLinkedReceiptDirectoriesRefused_RW2: a repository that commits
// .soba/flight or .soba/sessions as a link outside cannot send the receipts
// there: initialize fails naming the directory, and nothing is written
// outside.
func TestLinkedReceiptDirectoriesRefused_RW2(t *testing.T) {
	for _, rel := range []string{".soba/flight", ".soba/sessions"} {
		t.Run(rel, func(t *testing.T) {
			var target string
			ws, _ := hostileRepo(t, func(ws, outside string) {
				target = filepath.Join(outside, "receipts")
				if err := os.MkdirAll(target, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(filepath.Join(ws, ".soba"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(target, filepath.Join(ws, filepath.FromSlash(rel))); err != nil {
					t.Fatal(err)
				}
			})
			_, rerr := hostileServer(t, ws, nil)
			if rerr == nil || !strings.Contains(rerr.Message, "escapes the workspace root") {
				t.Fatalf("initialize = %v, want refused", rerr)
			}
			if ents, _ := os.ReadDir(target); len(ents) != 0 {
				t.Errorf("%d receipts written outside", len(ents))
			}
		})
	}
}
