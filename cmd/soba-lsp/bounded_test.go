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
func startUserConfigured(t *testing.T, dir, config string, args ...string) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
	t.Helper()
	xdg := t.TempDir()
	if err := os.MkdirAll(filepath.Join(xdg, "soba"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(xdg, "soba", "config.json"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, append(args, "--log-file", filepath.Join(t.TempDir(), "soba.log"))...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+xdg)
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
