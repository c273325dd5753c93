package app

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/compaction/tokens"
	"github.com/soba-agent/soba-lsp/lsp"
	"github.com/soba-agent/soba-lsp/lsp/lsptest"
	"github.com/soba-agent/soba-lsp/lsp/protocol"
	"github.com/soba-agent/soba-lsp/session"
)

// pipeConn is one end of a connection made of two OS pipes: what an editor
// that starts soba-lsp as a child process talks over.
type pipeConn struct {
	r *os.File
	w *os.File
}

func (c pipeConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c pipeConn) Write(p []byte) (int, error) { return c.w.Write(p) }
func (c pipeConn) Close() error {
	err := c.w.Close()
	if e := c.r.Close(); err == nil {
		err = e
	}
	return err
}
func (c pipeConn) LocalAddr() net.Addr  { return pipeAddr{} }
func (c pipeConn) RemoteAddr() net.Addr { return pipeAddr{} }
func (c pipeConn) SetDeadline(t time.Time) error {
	_ = c.r.SetDeadline(t)
	return c.w.SetDeadline(t)
}
func (c pipeConn) SetReadDeadline(t time.Time) error  { return c.r.SetReadDeadline(t) }
func (c pipeConn) SetWriteDeadline(t time.Time) error { return c.w.SetWriteDeadline(t) }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// osPipes makes a server end and an editor end joined by two OS pipes.
func osPipes(t *testing.T) (server, editor pipeConn) {
	t.Helper()
	toServer, fromEditor, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	toEditor, fromServer, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return pipeConn{r: toServer, w: fromServer}, pipeConn{r: toEditor, w: fromEditor}
}

// TestToolResultsFitTheirShareOfASmallWindow: with contextWindow 8192 the
// model reads a 2,000-line file, greps a tree with 5,000 matches and runs a
// command that prints 1 MB; the turn completes, no result takes more than
// its share of the hard limit (a quarter, counted by the budget's counter),
// the big outputs are saved beside the session and named, and a read_file
// at the offset the first result suggested returns the next part
// (issue 26; R-G4 never fires on one result).
func TestToolResultsFitTheirShareOfASmallWindow(t *testing.T) {
	dir := t.TempDir()
	var big strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&big, "line %04d: the quick brown fox jumps over the lazy dog\n", i)
	}
	write := func(rel, body string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("notes.md", big.String())
	for f := 0; f < 50; f++ {
		var b strings.Builder
		for i := 0; i < 100; i++ {
			fmt.Fprintf(&b, "needle %d in file %d\n", i, f)
		}
		write(fmt.Sprintf("tree/d%d/f%d.txt", f%5, f), b.String())
	}
	const megabyte = "seq 1000000 1125000" // 125,001 lines of 8 bytes: 1 MB

	model := providertest.NewOpenAI(t,
		providertest.Call("c1", "read_file", map[string]any{"path": "notes.md"}),
		providertest.Call("c2", "grep", map[string]any{"pattern": "needle", "path": "tree"}),
		providertest.Call("c3", "bash", map[string]any{"command": megabyte}),
	)
	// A compaction in the turn asks its own summary model.
	summary := providertest.NewOpenAI(t, providertest.Text("## Goal\nSay what notes.md is about\n## Next steps\n- read notes.md on\n"))
	summary.RepeatLast()
	cfg := compaction.DefaultConfig()
	cfg.ContextWindow, cfg.MaxOutputTokens, cfg.SafetyReserveTokens = 8192, 1024, 1024
	cfg.KeepRecentTokens, cfg.MinTokensForAutoCompact, cfg.MinReclaimableTokens = 1500, 3000, 1000
	hard := cfg.HardLimit()
	share := hard / 4
	load := func(root string, init, change json.RawMessage) (Settings, []string, error) {
		return Settings{Model: ModelSettings{Provider: "openai", BaseURL: model.URL, Name: "m", ContextWindow: 8192, MaxOutputTokens: 1024},
			SummaryModel: &ModelSettings{Provider: "openai", BaseURL: summary.URL, Name: "s", ContextWindow: 8192, MaxOutputTokens: 1024},
			Compaction:   cfg, Approval: "ask", SessionDir: filepath.Join(dir, ".soba", "sessions")}, nil, nil
	}
	counter := tokens.Default() // the budget's counter, which the shares are measured in
	srvEnd, edEnd := osPipes(t)
	e := serveLSP(t, load, srvEnd, edEnd)

	// The command's approval is where the scripted model learns the offset
	// the first result suggested: the rest of its script is written then.
	offsetRe := regexp.MustCompile(`continue with offset (\d+)\]`)
	var mu sync.Mutex
	offset := 0
	e.Answer(func(method string, params json.RawMessage) (any, *lsptest.Error) {
		if method != lsp.MethodShowMessageRequest {
			return nil, nil
		}
		var p struct {
			Actions []struct {
				Title string `json:"title"`
			} `json:"actions"`
		}
		_ = json.Unmarshal(params, &p)
		mu.Lock()
		defer mu.Unlock()
		if offset == 0 {
			for _, r := range model.Requests() {
				for _, m := range r.Messages {
					if m.ToolCallID == "c1" {
						if g := offsetRe.FindStringSubmatch(m.Text); g != nil {
							offset, _ = strconv.Atoi(g[1])
						}
					}
				}
			}
			model.Add(providertest.Call("c4", "read_file", map[string]any{"path": "notes.md", "offset": offset}),
				providertest.Text("notes.md is a list of numbered lines about a fox."))
		}
		if len(p.Actions) < 2 {
			return nil, &lsptest.Error{Code: -32602, Message: "bad approval request"}
		}
		return p.Actions[1], nil // Allow once
	})
	var init map[string]any
	if err := e.Call(lsp.MethodInitialize, map[string]any{"processId": nil, "rootUri": (&url.URL{Scheme: "file", Path: dir}).String(),
		"capabilities": map[string]any{}}, &init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	e.Notify(lsp.MethodInitialized, map[string]any{})
	var r protocol.PromptResult
	if err := e.Command(protocol.CommandPrompt, map[string]any{"text": "Read notes.md, find the needles and run the generator; say what notes.md is about"}, &r); err != nil {
		t.Fatalf("soba.prompt: %v", err)
	}
	var end protocol.Event
	e.Await(func(s lsptest.State) bool {
		for _, n := range lsptest.Of(s.Notes, lsp.MethodEvent) {
			var ev protocol.Event
			_ = json.Unmarshal(n.Params, &ev)
			if ev.Type == protocol.EventTurnEnd && ev.TurnID == r.TurnID {
				end = ev
				return true
			}
		}
		return false
	}, 60*time.Second)
	for i, rq := range model.Requests() {
		last := rq.Messages[len(rq.Messages)-1]
		t.Logf("request %d: %d messages, system %d bytes, last %s %.80q", i, len(rq.Messages), len(rq.System), last.Role, last.Text)
	}
	if end.Outcome != protocol.TurnCompleted {
		t.Fatalf("the turn ended %s: %s", end.Outcome, end.Error)
	}

	// Every result in the transcript is what the model saw, within its share.
	matches, _ := filepath.Glob(filepath.Join(dir, ".soba", "sessions", "*.jsonl"))
	if len(matches) != 1 {
		t.Fatalf("sessions %v", matches)
	}
	data, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]*session.ToolResult{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		ent, err := session.DecodeLine([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		if ent.ToolResult != nil {
			results[ent.ToolResult.ToolCallID] = ent.ToolResult
		}
	}
	for _, id := range []string{"c1", "c2", "c3", "c4"} {
		res := results[id]
		if res == nil || !res.OK {
			t.Fatalf("result of %s: %+v", id, res)
		}
		n := counter.Count(res.Content)
		t.Logf("%s: %d tokens of a %d-token share (hard limit %d)", id, n, share, hard)
		if n > share {
			t.Errorf("the result of %s takes %d tokens, over its share of %d", id, n, share)
		}
	}
	// The transcript keeps what the model was sent: the receipt.
	for _, rq := range model.Requests() {
		for _, m := range rq.Messages {
			if res := results[m.ToolCallID]; m.Role == "tool" && res != nil && m.Text != res.Content {
				t.Errorf("the model saw a different %s result than the transcript keeps (%d vs %d bytes)", m.ToolCallID, len(m.Text), len(res.Content))
			}
		}
	}
	// read_file: whole lines, the total, and where to continue.
	first := results["c1"].Content
	if offset <= 1 || !strings.Contains(first, "of 2000, as many as fit") {
		t.Fatalf("first read (offset %d): %s", offset, first[len(first)-200:])
	}
	if want := fmt.Sprintf("line %04d:", offset-1); !strings.Contains(first, want) || strings.Contains(first, fmt.Sprintf("line %04d:", offset)) {
		t.Errorf("the first read does not end at line %d", offset-1)
	}
	next := results["c4"].Content
	if !strings.HasPrefix(next, fmt.Sprintf("line %04d:", offset)) {
		t.Errorf("the read at offset %d starts %q, want line %d", offset, next[:40], offset)
	}
	// grep and bash: head and tail, the count left out, the whole saved.
	for _, id := range []string{"c2", "c3"} {
		c := results[id].Content
		if !regexp.MustCompile(`\[… [\d,]+ lines \(\d+ bytes\) left out …\]`).MatchString(c) {
			t.Errorf("%s keeps no head and tail with the count left out: %s", id, c[:min(300, len(c))])
		}
		g := regexp.MustCompile(`saved in (\S+): read_file`).FindStringSubmatch(c)
		if g == nil {
			t.Fatalf("%s names no saved output: %s", id, c[len(c)-300:])
		}
		saved, err := os.ReadFile(filepath.Join(dir, g[1]))
		if err != nil {
			t.Fatal(err)
		}
		switch id {
		case "c2":
			if n := strings.Count(string(saved), "\n") + 1; n < 5000 {
				t.Errorf("the saved grep output holds %d lines, want all 5000 matches", n)
			}
		case "c3":
			if len(saved) < 1_000_000 {
				t.Errorf("the saved command output is %d bytes, want the whole megabyte", len(saved))
			}
		}
		if !strings.HasPrefix(g[1], ".soba/sessions/") {
			t.Errorf("saved at %s, want beside the session", g[1])
		}
	}
}
