package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
)

// These tests attack the built binary over real pipes with input no client
// should send (R-W7) and with a repository whose instruction file links out
// (R-W1, R-W5). The model is a fake over HTTP, named in the user's own
// configuration file (a user-owned layer).

// startUserConfigured runs the binary (args: "acp" or none) in dir with a
// private HOME and XDG_CONFIG_HOME holding config as the user's config.json.
func startUserConfigured(t testing.TB, dir, config string, args ...string) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"--log-file", filepath.Join(t.TempDir(), "soba.log")}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+userConfigDir(t, config))
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, in, bufio.NewReaderSize(out, 1<<20)
}

func modelConfig(url string, contextWindow int) string {
	b, _ := json.Marshal(map[string]any{
		"model": map[string]any{"provider": "openai", "baseURL": url, "name": "m", "contextWindow": contextWindow, "maxOutputTokens": 2000},
		"tools": map[string]any{"approval": "auto"},
	})
	return string(b)
}

// peakRSS is the process's peak resident set (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skip("no /proc here:", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// writeHuge writes prefix, n bytes of filler and suffix to w in 1 MB
// pieces (the test never holds the message whole), reporting on done.
func writeHuge(w io.Writer, prefix string, n int, suffix string) <-chan error {
	done := make(chan error, 1)
	go func() {
		chunk := []byte(strings.Repeat("word ", 1<<20/5))
		_, err := io.WriteString(w, prefix)
		for left := n; err == nil && left > 0; left -= len(chunk) {
			_, err = w.Write(chunk[:min(left, len(chunk))])
		}
		if err == nil {
			_, err = io.WriteString(w, suffix)
		}
		done <- err
	}()
	return done
}

// TestHugePromptRefusedRealBinary_RW7: soba.prompt texts that can never be
// sent, from one over the message limit (300 MB, never read into memory) to
// ones under it but over the hard limit (refused on their bytes, or
// counted), are answered with an error naming both sizes within a second of
// being sent, the server's peak RSS stays under 200 MB, nothing is stored,
// and soba.budget answers afterwards.
func TestHugePromptRefusedRealBinary_RW7(t *testing.T) {
	const window = 32000 // hard limit about 28k tokens
	model := providertest.NewOpenAI(t, providertest.Text("ok"))
	model.RepeatLast()
	ws := t.TempDir()
	cmd, in, out := startUserConfigured(t, ws, modelConfig(model.URL, window))
	p := &proc{t: t, cmd: cmd, in: in, out: out}
	p.initialize()
	for i, tc := range []struct {
		name   string
		bytes  int
		says   []string
		within time.Duration // from the first byte sent to the error
	}{
		// Answered from the header and the id alone, whatever the load.
		{"300 MB: over the message limit", 300 << 20, []string{"over the limit of 16777216 bytes for one message"}, time.Second},
		// Read whole (under the message limit) and decoded, then refused on
		// its bytes or counted: the bound only tells a hang apart on a
		// loaded machine (about 0.3 s for 10 MB on an idle one).
		{"10 MB: over the hard limit on its bytes", 10 << 20, []string{"the prompt is at least 81,920 tokens (10,485,760 bytes)", "over the hard limit of", "can never be sent"}, 15 * time.Second},
		{"1 MB: counted, over the hard limit", 1 << 20, []string{"tokens (1,048,576 bytes); with the system prompt's", "over the hard limit of", "can never be sent"}, 15 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := 100 + i
			prefix := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"workspace/executeCommand","params":{"command":"soba.prompt","arguments":[{"text":"`, id)
			suffix := `"}]}}`
			start := time.Now()
			if _, err := fmt.Fprintf(in, "Content-Length: %d\r\n\r\n", len(prefix)+tc.bytes+len(suffix)); err != nil {
				t.Fatal(err)
			}
			written := writeHuge(in, prefix, tc.bytes, suffix)
			r := p.response(id)
			took := time.Since(start)
			e, _ := r["error"].(map[string]any)
			msg, _ := e["message"].(string)
			if tc.bytes > 16<<20 {
				tc.says = append(tc.says, fmt.Sprintf("the message is %d bytes", len(prefix)+tc.bytes+len(suffix)))
			}
			for _, s := range tc.says {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q does not say %q", msg, s)
				}
			}
			if took > tc.within {
				t.Errorf("the error came after %v, want within %v", took, tc.within)
			}
			t.Logf("answered in %v", took)
			if err := <-written; err != nil {
				t.Fatalf("writing the prompt: %v", err)
			}
			if budget := p.command(200+i, "soba.budget", nil); budget["hardLimit"] == nil {
				t.Fatalf("soba.budget after the prompt: %v", budget)
			}
			rss := peakRSS(t, cmd.Process.Pid)
			if rss > 200<<20 {
				t.Errorf("peak RSS %d MB, want under 200 MB", rss>>20)
			}
			t.Logf("peak RSS so far %d MB", rss>>20)
		})
	}
	if n := len(model.Requests()); n != 0 {
		t.Errorf("the model got %d requests; no prompt may have been sent", n)
	}
}

// acpResponse reads newline-delimited messages until the response with id.
func acpResponse(t *testing.T, out *bufio.Reader, id int) map[string]any {
	t.Helper()
	for {
		line, err := out.ReadBytes('\n')
		if err != nil {
			t.Fatalf("reading response %d: %v", id, err)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("bad JSON from the server: %.200s", line)
		}
		if m["id"] == float64(id) && m["method"] == nil {
			return m
		}
	}
}

// TestHugeACPPromptRefusedRealBinary_RW7: over ACP, a session/prompt of
// 300 MB (over the line limit, never held) and one of 5 MB (under it, over
// the hard limit) are answered with an error naming both sizes, the peak
// RSS stays under 200 MB, and the session still answers a prompt that fits.
func TestHugeACPPromptRefusedRealBinary_RW7(t *testing.T) {
	model := providertest.NewOpenAI(t, providertest.Text("ok"))
	model.RepeatLast()
	ws := t.TempDir()
	cmd, in, out := startUserConfigured(t, ws, modelConfig(model.URL, 32000), "acp")
	send := func(v any) {
		b, _ := json.Marshal(v)
		if _, err := in.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}})
	acpResponse(t, out, 1)
	send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": map[string]any{"cwd": ws, "mcpServers": []any{}}})
	res, _ := acpResponse(t, out, 2)["result"].(map[string]any)
	sid, _ := res["sessionId"].(string)
	if sid == "" {
		t.Fatalf("session/new: %v", res)
	}
	for i, tc := range []struct {
		name   string
		bytes  int
		says   []string
		within time.Duration
	}{
		{"300 MB: over the line limit", 300 << 20, []string{"over the limit of 8388608 bytes for one message"}, time.Second},
		{"5 MB: over the hard limit", 5 << 20, []string{"the prompt is at least 40,960 tokens (5,242,880 bytes)", "can never be sent"}, 15 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := 10 + i
			prefix := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"`, id, sid)
			start := time.Now()
			written := writeHuge(in, prefix, tc.bytes, `"}]}}`+"\n")
			r := acpResponse(t, out, id)
			took := time.Since(start)
			msg, _ := json.Marshal(r["error"])
			for _, s := range tc.says {
				if !strings.Contains(string(msg), s) {
					t.Errorf("error %s does not say %q", msg, s)
				}
			}
			if took > tc.within {
				t.Errorf("the error came after %v, want within %v", took, tc.within)
			}
			if err := <-written; err != nil {
				t.Fatalf("writing the prompt: %v", err)
			}
			rss := peakRSS(t, cmd.Process.Pid)
			if rss > 200<<20 {
				t.Errorf("peak RSS %d MB, want under 200 MB", rss>>20)
			}
			t.Logf("answered in %v; peak RSS so far %d MB", took, rss>>20)
		})
	}
	send(map[string]any{"jsonrpc": "2.0", "id": 20, "method": "session/prompt", "params": map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "hello"}}}})
	if r, _ := acpResponse(t, out, 20)["result"].(map[string]any); r["stopReason"] != "end_turn" {
		t.Fatalf("a prompt that fits after the attacks: %v", r)
	}
	if n := len(model.Requests()); n != 1 {
		t.Errorf("the model got %d requests, want the one of the prompt that fits", n)
	}
}

// TestAgentsMDLinkAboveWorkspaceRealBinary_RW1_RW5: a sub-folder of a
// repository is opened; the repository's top-level AGENTS.md is a link.
// Leading out of the repository's folder (to a file of the user's), it is
// not followed: its content never reaches the model's request. Leading to a
// file within that folder, it is (the check can fail).
func TestAgentsMDLinkAboveWorkspaceRealBinary_RW1_RW5(t *testing.T) {
	const secret = "PRIVATE-KEY-MATERIAL-OF-THE-USER"
	for i, tc := range []struct {
		name     string
		target   func(top, repo string) string // the link's target
		reaches  bool
		contains string
	}{
		{"link leading out of the repository", func(top, repo string) string { return filepath.Join(top, "home", "id_rsa") }, false, secret},
		{"relative link leading out", func(top, repo string) string { return "../home/id_rsa" }, false, secret},
		{"link within the repository's folder", func(top, repo string) string { return "docs/agents.md" }, true, "Run the linter first."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top := t.TempDir()
			repo := filepath.Join(top, "repo")
			ws := filepath.Join(repo, "services", "api")
			for path, text := range map[string]string{
				filepath.Join(top, "home", "id_rsa"):     secret,
				filepath.Join(repo, "docs", "agents.md"): "Run the linter first.",
				filepath.Join(ws, "main.go"):             "package main\n",
			} {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(tc.target(top, repo), filepath.Join(repo, "AGENTS.md")); err != nil {
				t.Fatal(err)
			}
			model := providertest.NewOpenAI(t, providertest.Text("ok"))
			cmd, in, out := startUserConfigured(t, ws, modelConfig(model.URL, 32000))
			p := &proc{t: t, cmd: cmd, in: in, out: out}
			p.initialize()
			p.command(10+i, "soba.prompt", map[string]any{"text": "hello"})
			if end := p.notification("soba/event", func(m map[string]any) bool { return m["type"] == "turn_end" }); end["outcome"] != "completed" {
				t.Fatalf("turn: %v", end)
			}
			reqs := model.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d model requests, want 1", len(reqs))
			}
			whole, _ := json.Marshal(reqs[0])
			if got := strings.Contains(string(whole), tc.contains); got != tc.reaches {
				t.Fatalf("the model's request carries %q: %v, want %v\nsystem prompt: %.600s", tc.contains, got, tc.reaches, reqs[0].System)
			}
		})
	}
}

// TestOversizedCapsuleLoadRealBinary_RW7: capsule.load of a capsule that
// with the system prompt is over the hard limit is refused naming both
// sizes, one over the capsule size bound is refused unread, nothing is
// stored, and soba.budget answers afterwards.
func TestOversizedCapsuleLoadRealBinary_RW7(t *testing.T) {
	model := providertest.NewOpenAI(t, providertest.Text("ok"))
	ws := t.TempDir()
	files := map[string]string{
		"tokens.capsule.md": "---\nformat: soba-capsule/1\n---\n## Notes\n\n- " + strings.Repeat("note ", 30000) + "\n",
		"bytes.capsule.md":  "---\nformat: soba-capsule/1\n---\n## Notes\n\n- " + strings.Repeat("note ", 2<<20/5) + "\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd, in, out := startUserConfigured(t, ws, modelConfig(model.URL, 32000))
	p := &proc{t: t, cmd: cmd, in: in, out: out}
	p.initialize()
	for i, tc := range []struct {
		file string
		says []string
	}{
		{"tokens.capsule.md", []string{"the capsule is", "tokens (150,", "over the hard limit of", "can never be sent"}},
		{"bytes.capsule.md", []string{"bytes.capsule.md is", "over the 1048576-byte limit"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			p.send(map[string]any{"jsonrpc": "2.0", "id": 30 + i, "method": "workspace/executeCommand",
				"params": map[string]any{"command": "soba.capsule.load", "arguments": []any{map[string]any{"path": tc.file}}}})
			r := p.response(30 + i)
			msg, _ := json.Marshal(r["error"])
			for _, s := range tc.says {
				if !strings.Contains(string(msg), s) {
					t.Errorf("capsule.load %s: error %s does not say %q", tc.file, msg, s)
				}
			}
		})
	}
	budget := p.command(40, "soba.budget", nil)
	if budget["hardLimit"] == nil || budget["lastCompaction"] != nil {
		t.Fatalf("soba.budget after the refused loads: %v", budget)
	}
	p.send(map[string]any{"jsonrpc": "2.0", "id": 41, "method": "workspace/executeCommand", "params": map[string]any{"command": "soba.capsule.list"}})
	if list, ok := p.response(41)["result"].([]any); !ok || len(list) != 0 {
		t.Fatalf("soba.capsule.list after the refused loads: %v, want none", list)
	}
}

// TestImportOfHostileSourcesRefused_RW7: import refuses at once, naming the
// file, a source that is a FIFO, a link to /dev/zero or a sparse giant over
// the bound of a transcript converted in memory.
func TestImportOfHostileSourcesRefused_RW7(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.jsonl"), 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.jsonl")); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "giant.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, tc := range []struct {
		file, says string
	}{
		{"pipe.jsonl", "is not a regular file"},
		{"zero.jsonl", "is not a regular file"},
		{"giant.jsonl", "is 1073741824 bytes, over the limit of 536870912 bytes"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			start := time.Now()
			_, stderr, code := runCLI(t, t.TempDir(), "import", "--format", "claude-code", filepath.Join(dir, tc.file))
			if code != 1 || !strings.Contains(stderr, tc.says) || !strings.Contains(stderr, tc.file) {
				t.Fatalf("import %s: exit %d, stderr %q; want 1 and %q", tc.file, code, stderr, tc.says)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("import %s took %v", tc.file, d)
			}
		})
	}
}
