package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
	"github.com/soba-agent/soba-lsp/compaction"
)

// startWithConfig runs the binary in a fresh workspace with config as the
// user's own configuration (a repository's may not choose the model, R-W5).
func startWithConfig(t *testing.T, config string) *proc {
	t.Helper()
	return startInWorkspace(t, config)
}

// command runs a workspace command and returns its result.
func (p *proc) command(id int, name string, args map[string]any) map[string]any {
	p.t.Helper()
	params := map[string]any{"command": name}
	if args != nil {
		params["arguments"] = []any{args}
	}
	p.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": "workspace/executeCommand", "params": params})
	r := p.response(id)
	res, ok := r["result"].(map[string]any)
	if !ok {
		p.t.Fatalf("%s = %v", name, r)
	}
	return res
}

// TestNativeRoundTrip_RN1_RN2: through the real binary and a Responses API
// fake over HTTP, an explicit compact stores the provider's compaction
// beside the portable capsule and says native, the next prompt's request
// carries the compaction item and not the capsule text, and
// soba.capsule.show says a native continuation is attached.
func TestNativeRoundTrip_RN1_RN2(t *testing.T) {
	big := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 60)
	srv := providertest.NewResponses(t,
		providertest.Reply{Text: "one " + big, Reasoning: "enc-r1"},
		providertest.Reply{Text: "two " + big, Reasoning: "enc-r2"},
		providertest.Reply{Text: "three " + big, Reasoning: "enc-r3"},
		providertest.Text("## Goal\nAnswer the questions.\n\n## Done\n- answered three questions\n"), // the capsule's summary
		providertest.Text("continuing"),
	)
	srv.AddCompact(providertest.Reply{Compaction: "enc-compaction-e2e"})
	cfg, _ := json.Marshal(map[string]any{
		"model": map[string]any{"provider": "openai-responses", "baseURL": srv.URL, "name": "test-model", "contextWindow": 12000, "maxOutputTokens": 1000},
		"compaction": map[string]any{"auto": false, "keepRecentTokens": 1500, "safetyReserveTokens": 1000, "minTokensForAutoCompact": 3000,
			"minReclaimableTokens": 1000, "timeoutMs": 10000},
		"tools": map[string]any{"approval": "auto"},
	})
	p := startWithConfig(t, string(cfg))
	p.initialize()
	id := 10
	for _, q := range []string{"first", "second", "third"} {
		id++
		p.command(id, "soba.prompt", map[string]any{"text": q + " " + big})
		end := p.notification("soba/event", func(m map[string]any) bool { return m["type"] == "turn_end" })
		if end["outcome"] != "completed" {
			t.Fatalf("turn %s: %v", q, end)
		}
	}
	res := p.command(20, "soba.compact", nil)
	if res["outcome"] != compaction.OutcomeCompleted || !strings.HasSuffix(fmt.Sprint(res["line"]), " · native") {
		t.Fatalf("soba.compact = %v", res)
	}
	show := p.command(21, "soba.capsule.show", nil)
	md := fmt.Sprint(show["markdown"])
	if !strings.Contains(md, "Answer the questions.") || !strings.Contains(md, "A native continuation is attached: openai-responses · test-model") {
		t.Fatalf("capsule show:\n%s", md)
	}
	p.command(22, "soba.prompt", map[string]any{"text": "go on"})
	if end := p.notification("soba/event", func(m map[string]any) bool { return m["type"] == "turn_end" }); end["outcome"] != "completed" {
		t.Fatalf("turn after the compaction: %v", end)
	}
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	hasItem := false
	for _, it := range last.NativeItems {
		hasItem = hasItem || strings.Contains(string(it), "enc-compaction-e2e")
	}
	if !hasItem || (len(last.Messages) > 0 && strings.HasPrefix(last.Messages[0].Text, compaction.CapsulePreamble)) {
		t.Fatalf("the request after the compaction: items %s, first message %+v", last.NativeItems, last.Messages[0])
	}
	budget := p.command(23, "soba.budget", nil)
	lc, _ := budget["lastCompaction"].(map[string]any)
	if !strings.HasSuffix(fmt.Sprint(lc["line"]), " · native") {
		t.Errorf("budget lastCompaction = %v", lc)
	}
}
