package app

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/soba-agent/soba-lsp/acp"
	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/compaction/tokens"
)

// rawACP is an ACP client that speaks the wire itself, for the unstable
// compaction updates no Go SDK type knows: it writes request lines and keeps
// every line the agent writes.
type rawACP struct {
	t  *testing.T
	w  io.Writer
	mu sync.Mutex
	in []map[string]any
	id int
}

func (c *rawACP) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		c.mu.Lock()
		c.in = append(c.in, m)
		c.mu.Unlock()
	}
}

// call sends a request and waits for its answer.
func (c *rawACP) call(method string, params any) map[string]any {
	c.t.Helper()
	c.mu.Lock()
	c.id++
	id := c.id
	c.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if _, err := c.w.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		for _, m := range c.in {
			if n, ok := m["id"].(float64); ok && int(n) == id && m["method"] == nil {
				c.mu.Unlock()
				if m["error"] != nil {
					c.t.Fatalf("%s: %v", method, m["error"])
				}
				res, _ := m["result"].(map[string]any)
				return res
			}
		}
		c.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatalf("%s: no answer", method)
	return nil
}

// updates are the session/update payloads received so far, from index from.
func (c *rawACP) updates(from int) []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []map[string]any
	for _, m := range c.in[min(from, len(c.in)):] {
		if m["method"] == "session/update" {
			p, _ := m["params"].(map[string]any)
			u, _ := p["update"].(map[string]any)
			out = append(out, u)
		}
	}
	return out
}

func (c *rawACP) received() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.in)
}

// runRawACP serves ACP in process over pipes, with a summary model, to a
// raw client that opted in to compaction updates.
func runRawACP(t *testing.T, script []providertest.Reply, summary providertest.Reply) (*rawACP, string) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dir := t.TempDir()
	model := providertest.NewOpenAI(t, script...)
	sum := providertest.NewOpenAI(t, summary)
	sum.RepeatLast()
	load := func(root string, init, change json.RawMessage) (Settings, []string, error) {
		c := compaction.DefaultConfig()
		c.KeepRecentTokens, c.MinReclaimableTokens, c.MinSavingsRatio = 100, 100, 0.1
		return Settings{Model: ModelSettings{Provider: "openai", BaseURL: model.URL, Name: "m", ContextWindow: 65000, MaxOutputTokens: 8000},
			SummaryModel: &ModelSettings{Provider: "openai", BaseURL: sum.URL, Name: "s", ContextWindow: 65000, MaxOutputTokens: 8000},
			Compaction:   c, Approval: "auto", SessionDir: filepath.Join(root, ".soba", "sessions")}, nil, nil
	}
	counter := tokens.Default()
	backend := &ACPBackend{Load: load, Counter: counter, EntryTokens: tokens.Estimator{Counter: counter}.EntryTokens}
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	var wg conc.WaitGroup
	wg.Go(func() {
		_ = acp.Serve(ctx, backend, toAgentR, toClientW, "test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	})
	c := &rawACP{t: t, w: toAgentW}
	wg.Go(func() { c.read(toClientR) })
	t.Cleanup(func() {
		cancel()
		toAgentW.Close()
		toClientW.Close()
		toClientR.Close()
		wg.Wait()
	})
	c.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"session": map[string]any{"compaction": map[string]any{}}}})
	s := c.call("session/new", map[string]any{"cwd": dir, "mcpServers": []any{}})
	id, _ := s["sessionId"].(string)
	if id == "" {
		t.Fatalf("session/new answered %v", s)
	}
	return c, id
}

const acpStreamedSummary = "## Goal\nwrite the notes\n## Done\n- wrote notes.txt\n## Next steps\n- review the notes\n"

// TestACPCompactionSummaryStreams_RB3: a client that opted in sees the
// summary model's answer as compaction_summary_chunk updates between
// in_progress and the terminal compaction_update; only a completed one
// carries a summary (the result line and the capsule's sections), a
// skipped one is cancelled with none, as schema 1.7.0 requires.
func TestACPCompactionSummaryStreams_RB3(t *testing.T) {
	filler := strings.Repeat("filler words for the history ", 150)
	tests := []struct {
		name       string
		turns      int
		wantStatus string
		wantChunks bool
	}{
		{"summary streamed, compaction completed", 2, "completed", true},
		{"nothing to compact", 0, "cancelled", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var script []providertest.Reply
			for i := 0; i < tt.turns; i++ {
				script = append(script, providertest.Text(fmt.Sprintf("answer %d %s", i, filler)))
			}
			c, id := runRawACP(t, script, providertest.Reply{Text: acpStreamedSummary, ChunkDelay: 5 * time.Millisecond})
			for i := 0; i < tt.turns; i++ {
				if r := c.call("session/prompt", map[string]any{"sessionId": id, "prompt": []any{map[string]any{"type": "text", "text": "question " + filler}}}); r["stopReason"] != "end_turn" {
					t.Fatalf("turn %d: %v", i, r)
				}
			}
			from := c.received()
			if r := c.call("session/prompt", map[string]any{"sessionId": id, "prompt": []any{map[string]any{"type": "text", "text": "/compact"}}}); r["stopReason"] != "end_turn" {
				t.Fatalf("/compact: %v", r)
			}
			var (
				seq      []string
				streamed strings.Builder
				chunks   int
				last     map[string]any
				compID   string
			)
			for _, u := range c.updates(from) {
				kind, _ := u["sessionUpdate"].(string)
				switch kind {
				case "compaction_update":
					seq = append(seq, u["status"].(string))
					last = u
					if compID == "" {
						compID, _ = u["compactionId"].(string)
					} else if u["compactionId"] != compID {
						t.Fatalf("compactionId changed: %v", u)
					}
				case "compaction_summary_chunk":
					if len(seq) != 1 || seq[0] != "in_progress" {
						t.Fatalf("a summary chunk outside in_progress (after %v)", seq)
					}
					if u["compactionId"] != compID {
						t.Fatalf("chunk of another compaction: %v", u)
					}
					content, _ := u["content"].(map[string]any)
					if content["type"] != "text" {
						t.Fatalf("chunk content %v", content)
					}
					streamed.WriteString(content["text"].(string))
					chunks++
				}
			}
			if len(seq) != 2 || seq[0] != "in_progress" || seq[1] != tt.wantStatus {
				t.Fatalf("compaction_update statuses %v, want in_progress, %s", seq, tt.wantStatus)
			}
			if tt.wantChunks {
				if chunks < 2 || streamed.String() != acpStreamedSummary {
					t.Fatalf("%d chunks streaming %q, want the summary model's answer %q", chunks, streamed.String(), acpStreamedSummary)
				}
			} else if chunks != 0 {
				t.Fatalf("%d chunks for a compaction without a summary", chunks)
			}
			summary, hasSummary := last["summary"].([]any)
			_, hasError := last["error"]
			switch tt.wantStatus {
			case "completed":
				text := summary[0].(map[string]any)["text"].(string)
				if !strings.HasPrefix(text, "Compacted context · user · ") || !regexp.MustCompile(`## Goal\n+write the notes`).MatchString(text) {
					t.Fatalf("completed summary %q", text)
				}
			default:
				if hasSummary || hasError {
					t.Fatalf("a %s update carries a summary or an error: %v", tt.wantStatus, last)
				}
			}
		})
	}
}
