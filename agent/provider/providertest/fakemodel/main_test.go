package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soba-agent/soba-lsp/agent/provider"
)

// The program serves its script to a real client, writes its URL and,
// once stdin closes, the requests it received.
func TestServesScriptUntilStdinCloses(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "s.json")
	os.WriteFile(script, []byte(`{"replies":[{"toolCalls":[{"id":"c1","name":"read_file","arguments":{"path":"go.mod"}}]},{"text":"done"}]}`), 0o644)
	urlFile, reqFile := filepath.Join(dir, "url"), filepath.Join(dir, "req.json")
	stdinR, stdinW := io.Pipe()
	var out strings.Builder
	done := make(chan error, 1)
	go func() {
		done <- run([]string{"-script", script, "-url-file", urlFile, "-requests-file", reqFile}, stdinR, &out)
	}()
	var url string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(urlFile); err == nil && len(b) > 0 {
			url = strings.TrimSpace(string(b))
			break
		}
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/v1") {
		t.Fatalf("url %q", url)
	}
	p, _ := provider.New(provider.Config{Provider: "openai", BaseURL: url, Model: "m"})
	req := provider.Request{Messages: []provider.Message{{Role: "user", Text: "hi"}}}
	resp, err := p.Stream(context.Background(), req, nil)
	if err != nil || len(resp.ToolCalls) != 1 || string(resp.ToolCalls[0].Arguments) != `{"path":"go.mod"}` {
		t.Fatalf("%+v %v", resp, err)
	}
	if resp, err = p.Stream(context.Background(), req, nil); err != nil || resp.Text != "done" {
		t.Fatalf("%+v %v", resp, err)
	}
	stdinW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var got []struct {
		Messages []provider.Message `json:"messages"`
	}
	b, _ := os.ReadFile(reqFile)
	if err := json.Unmarshal(b, &got); err != nil || len(got) != 2 || got[1].Messages[0].Text != "hi" {
		t.Fatalf("requests file %s (%v)", b, err)
	}
	if !strings.Contains(out.String(), "fakemodel listening on "+url) {
		t.Errorf("stdout %q", out.String())
	}
}

func TestBadScriptIsAClearError(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "s.json")
	os.WriteFile(script, []byte(`{"replies":[{"delay":"later"}]}`), 0o644)
	err := run([]string{"-script", script}, strings.NewReader(""), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "s.json") || !strings.Contains(err.Error(), "delay") {
		t.Fatalf("err %v", err)
	}
	if err := run(nil, strings.NewReader(""), io.Discard); err == nil || !strings.Contains(err.Error(), "-script is required") {
		t.Fatalf("err %v", err)
	}
}
