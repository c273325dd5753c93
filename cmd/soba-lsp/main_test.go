package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// These tests run the built binary as a subprocess over real pipes
// (PROTOCOL.md "Process": exit codes, stdin EOF, --version).

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "soba-lsp-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "soba-lsp")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building soba-lsp: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is the binary under test with framed stdin/stdout.
type proc struct {
	t   testing.TB
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// start runs the binary in a fresh workspace directory (the root when the
// client names none), with a private HOME whose user configuration points
// the model at a closed loopback port.
func start(t testing.TB) *proc {
	t.Helper()
	return startInWorkspace(t, `{"model":{"provider":"openai","baseURL":"http://127.0.0.1:9/v1","name":"m"}}`)
}

// startInWorkspace runs the binary in a fresh workspace (with its .soba
// folder) with config as the user's own configuration.
func startInWorkspace(t testing.TB, config string) *proc {
	t.Helper()
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".soba"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd, in, out := startUserConfigured(t, ws, config)
	return &proc{t: t, cmd: cmd, in: in, out: out}
}

// userConfigDir returns a private XDG_CONFIG_HOME whose soba/config.json
// (the user's own layer, which may choose the model) is config.
func userConfigDir(t testing.TB, config string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "soba"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "soba", "config.json"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func (p *proc) send(v any) {
	p.t.Helper()
	b, _ := json.Marshal(v)
	if _, err := fmt.Fprintf(p.in, "Content-Length: %d\r\n\r\n%s", len(b), b); err != nil {
		p.t.Fatalf("write: %v", err)
	}
}

// response reads messages until the response with this id.
func (p *proc) response(id int) map[string]any {
	p.t.Helper()
	tp := textproto.NewReader(p.out)
	for {
		hdr, err := tp.ReadMIMEHeader()
		if err != nil {
			p.t.Fatalf("reading response %d: %v", id, err)
		}
		n, _ := strconv.Atoi(hdr.Get("Content-Length"))
		body := make([]byte, n)
		if _, err := io.ReadFull(p.out, body); err != nil {
			p.t.Fatalf("reading body: %v", err)
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			p.t.Fatalf("bad JSON from server: %s", body)
		}
		if m["id"] == float64(id) {
			return m
		}
	}
}

// notification reads messages until a notification of method whose params
// satisfy match.
func (p *proc) notification(method string, match func(map[string]any) bool) map[string]any {
	p.t.Helper()
	tp := textproto.NewReader(p.out)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		hdr, err := tp.ReadMIMEHeader()
		if err != nil {
			p.t.Fatalf("reading %s: %v", method, err)
		}
		n, _ := strconv.Atoi(hdr.Get("Content-Length"))
		body := make([]byte, n)
		if _, err := io.ReadFull(p.out, body); err != nil {
			p.t.Fatalf("reading body: %v", err)
		}
		var m struct {
			Method string         `json:"method"`
			Params map[string]any `json:"params"`
		}
		if json.Unmarshal(body, &m) == nil && m.Method == method && match(m.Params) {
			return m.Params
		}
	}
	p.t.Fatalf("no %s notification", method)
	return nil
}

func (p *proc) initialize() {
	p.send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"processId": nil, "rootUri": nil, "capabilities": map[string]any{}}})
	if r := p.response(1); r["result"] == nil {
		p.t.Fatalf("initialize: %v", r)
	}
	p.send(map[string]any{"jsonrpc": "2.0", "method": "initialized", "params": map[string]any{}})
}

// exitCode waits for the process to end.
func (p *proc) exitCode() int {
	p.t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		if err != nil {
			p.t.Fatalf("wait: %v", err)
		}
		return 0
	case <-time.After(10 * time.Second):
		p.t.Fatal("soba-lsp did not exit within 10s")
		return -1
	}
}

func TestShutdownThenExit_Code0(t *testing.T) {
	p := start(t)
	p.initialize()
	p.send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand", "params": map[string]any{"command": "soba.budget"}})
	if r := p.response(2); r["result"].(map[string]any)["hardLimit"] != 48808.0 {
		t.Errorf("budget = %v", r)
	}
	p.send(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "shutdown"})
	p.response(3)
	p.send(map[string]any{"jsonrpc": "2.0", "method": "exit"})
	if code := p.exitCode(); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
}

func TestExitWithoutShutdown_Code1(t *testing.T) {
	p := start(t)
	p.initialize()
	p.send(map[string]any{"jsonrpc": "2.0", "method": "exit"})
	if code := p.exitCode(); code != 1 {
		t.Errorf("exit code = %d, want 1", code)
	}
}

func TestStdinEOF_Ends(t *testing.T) {
	p := start(t)
	p.initialize()
	_ = p.in.Close()
	if code := p.exitCode(); code != 1 {
		t.Errorf("exit code on stdin EOF without shutdown = %d, want 1", code)
	}
}

// With no model server reachable the server still serves, and a prompt's
// turn fails with an error naming the endpoint (PROTOCOL.md Configuration).
func TestPromptWithoutModelServer_NamesEndpoint(t *testing.T) {
	p := start(t)
	p.initialize()
	p.send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand", "params": map[string]any{
		"command": "soba.prompt", "arguments": []any{map[string]any{"text": "hi"}}}})
	if r := p.response(2); r["result"] == nil {
		t.Fatalf("soba.prompt = %v", r)
	}
	end := p.notification("soba/event", func(params map[string]any) bool { return params["type"] == "turn_end" })
	if end["outcome"] != "failed" || !strings.Contains(fmt.Sprint(end["error"]), "127.0.0.1:9") {
		t.Fatalf("turn_end = %v, want a failure naming the endpoint", end)
	}
	p.send(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "workspace/executeCommand", "params": map[string]any{"command": "soba.session.info"}})
	if r := p.response(3); r["result"] == nil {
		t.Fatalf("the server must keep serving: %v", r)
	}
}

func TestVersionFlag(t *testing.T) {
	out, err := exec.Command(binary, "--version").Output()
	if err != nil || !bytes.HasPrefix(out, []byte("soba-lsp ")) {
		t.Errorf("--version = %q, %v", out, err)
	}
}

func TestSubcommandDispatch(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"nosuch"}, strings.NewReader(""), &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), `unknown subcommand "nosuch"`) {
		t.Errorf("unknown subcommand: code %d, stderr %q", code, stderr.String())
	}
	for _, c := range subcommands {
		if c.name == "" || c.run == nil || c.summary == "" {
			t.Errorf("incomplete subcommand entry %+v", c)
		}
	}
}

func TestStdioFlagAccepted(t *testing.T) {
	cmd := exec.Command(binary, "--stdio", "--version")
	if out, err := cmd.Output(); err != nil || !bytes.HasPrefix(out, []byte("soba-lsp ")) {
		t.Fatalf("--stdio --version = %q, %v", out, err)
	}
}

// BenchmarkStartToFirstBudget is what an editor waits for when it attaches:
// spawning soba-lsp, initialize/initialized, and the answer to soba.budget
// (the token counter and the workspace are ready by then), then a clean
// shutdown and exit.
func BenchmarkStartToFirstBudget(b *testing.B) {
	for b.Loop() {
		p := start(b)
		p.initialize()
		p.send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand", "params": map[string]any{"command": "soba.budget"}})
		if r := p.response(2); r["result"] == nil {
			b.Fatalf("budget = %v", r)
		}
		b.StopTimer()
		p.send(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "shutdown"})
		p.response(3)
		p.send(map[string]any{"jsonrpc": "2.0", "method": "exit"})
		p.exitCode()
		b.StartTimer()
	}
}
