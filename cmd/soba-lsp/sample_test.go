package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soba-agent/soba-lsp/compaction/tokens"
	"github.com/soba-agent/soba-lsp/session"
)

var update = flag.Bool("update", false, "regenerate the embedded sample session")

// sampleSession writes the long sample session that `soba-lsp replay` runs
// by default: a developer and the agent work through a small HTTP service
// over 36 turns — reading files, editing, running tests that fail and pass.
func sampleSession(t *testing.T, dir string) string {
	t.Helper()
	clock := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	now := func() time.Time { clock = clock.Add(7 * time.Second); return clock }
	s, err := session.Create(dir, session.SessionHeader{Version: 1, SessionID: "sample", Workspace: "/work/orders-service"},
		session.Options{Now: now, Sync: session.SyncNever, Estimate: tokens.EntryTokens})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := 0
	call := func(name string, args map[string]any) session.ToolCall {
		n++
		b, _ := json.Marshal(args)
		return session.ToolCall{ID: fmt.Sprintf("call_%03d", n), Name: name, Arguments: b}
	}
	ids := 0
	add := func(e session.Entry) {
		ids++
		e.ID = fmt.Sprintf("e%05d", ids)
		if _, err := s.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	result := func(c session.ToolCall, ok bool, content string, art *session.Artifacts) {
		add(session.Entry{Type: session.TypeToolResult, ToolResult: &session.ToolResult{ToolCallID: c.ID, ToolName: c.Name, OK: ok, Content: content, Artifacts: art}})
	}
	files := []string{"internal/orders/handler.go", "internal/orders/store.go", "internal/orders/validate.go", "internal/http/router.go", "internal/billing/invoice.go", "cmd/orders/main.go"}
	tasks := []string{
		"Return 404 instead of 500 when an order id does not exist.",
		"Validate that quantities are positive; reject zero with a clear message.",
		"Add pagination to GET /orders with limit and cursor parameters.",
		"The invoice total ignores discounts. Fix it, and never round before summing.",
		"Log the request id on every error response.",
		"Make the store's List method stable-sorted by creation time.",
	}
	for turn := 0; turn < 36; turn++ {
		task := tasks[turn%len(tasks)]
		file := files[turn%len(files)]
		add(session.Entry{Type: session.TypeUser, User: &session.UserMessage{Text: fmt.Sprintf("%s (step %d) Keep the public API unchanged and do not add dependencies.", task, turn+1)}})
		rd := call("read_file", map[string]any{"path": file})
		add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{Text: "Let me look at " + file + " first.", ToolCalls: []session.ToolCall{rd}}})
		result(rd, true, sourceOf(file, turn), &session.Artifacts{FilesRead: []string{file}})
		ed := call("edit_file", map[string]any{"path": file, "old_text": fmt.Sprintf("// step %d", turn), "new_text": fmt.Sprintf("// step %d done", turn)})
		add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{Text: "I'll make the change in " + file + ".", ToolCalls: []session.ToolCall{ed}}})
		result(ed, true, "edited "+file, &session.Artifacts{FilesModified: []string{file}})
		failing := turn%3 == 1
		for attempt := 0; attempt < 2; attempt++ {
			bs := call("bash", map[string]any{"command": "go test ./internal/..."})
			add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{ToolCalls: []session.ToolCall{bs}}})
			code := 0
			out := "ok  \torders/internal/orders\t0.41s\nok  \torders/internal/billing\t0.22s\n"
			if failing && attempt == 0 {
				code = 1
				out = fmt.Sprintf("--- FAIL: TestHandler%d (0.00s)\n    handler_test.go:%d: got status 500, want 404\nFAIL\nFAIL\torders/internal/orders\t0.38s\n", turn, 40+turn)
			}
			c := code
			result(bs, code == 0, out, &session.Artifacts{Command: "go test ./internal/...", ExitCode: &c})
			if code == 0 {
				break
			}
			fx := call("edit_file", map[string]any{"path": file, "old_text": "return err", "new_text": "return fmt.Errorf(\"orders: %w\", err)"})
			add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{Text: "The test shows the wrong status; fixing the error path.", ToolCalls: []session.ToolCall{fx}}})
			result(fx, true, "edited "+file, &session.Artifacts{FilesModified: []string{file}})
		}
		add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{Text: fmt.Sprintf("Done with step %d: %s The tests in internal/... pass.", turn+1, strings.ToLower(task[:1])+task[1:])}})
	}
	return s.FilePath()
}

// sourceOf is a plausible Go file body of about 6 KB.
func sourceOf(file string, turn int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "package %s\n\n", filepath.Base(filepath.Dir(file)))
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "// step %d\nfunc handle%d(ctx context.Context, id string) (*Order, error) {\n\to, err := s.get(ctx, id)\n\tif err != nil {\n\t\treturn err\n\t}\n\treturn o, nil\n}\n\n", turn*100+i, i)
	}
	return b.String()
}

func TestSampleSessionUpToDate(t *testing.T) {
	dir := t.TempDir()
	path := sampleSession(t, dir)
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The store picks the header's id at random; fix it so the file is
	// reproducible.
	hdr, err := session.DecodeLine(got[:bytes.IndexByte(got, '\n')])
	if err != nil {
		t.Fatal(err)
	}
	got = bytes.ReplaceAll(got, []byte(`"`+hdr.ID+`"`), []byte(`"e00000"`))
	if *update {
		if err := os.WriteFile(filepath.Join("sample", "session.jsonl"), got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if string(got) != string(sampleJSONL) {
		t.Fatal("sample/session.jsonl is stale: run go test ./cmd/soba-lsp -run TestSampleSessionUpToDate -update")
	}
}

func TestReplayPrintsCompletedCompaction(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"replay", "--workspace", t.TempDir()}, strings.NewReader(""), &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	text := out.String()
	for _, want := range []string{"replaying 36 turns", "Compacting context before response", "Compacted context · ", "tokens (", "% reclaimed) · ck_", "replayed 36 turns"} {
		if !strings.Contains(text, want) {
			t.Fatalf("replay output lacks %q:\n%s", want, text)
		}
	}
}

func TestCapsuleExportAndShowOffline(t *testing.T) {
	dir := t.TempDir()
	sess := filepath.Join(dir, "s.jsonl")
	if err := os.WriteFile(sess, sampleJSONL, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"compact", sess}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("compact: exit %d: %s", code, errb.String())
	}
	exported := filepath.Join(dir, "handoff.capsule.md")
	out.Reset()
	errb.Reset()
	if code := run([]string{"capsule", "export", sess, "latest", exported}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("capsule export: exit %d: %s", code, errb.String())
	}
	if code := run([]string{"capsule", "export", sess, "latest", exported}, strings.NewReader(""), &out, &errb); code == 0 || !strings.Contains(errb.String(), "--overwrite") {
		t.Fatalf("export over an existing file: exit %d %q", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"capsule", "show", exported}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("capsule show: exit %d: %s", code, errb.String())
	}
	data, _ := os.ReadFile(exported)
	if out.String() != string(data) {
		t.Fatal("show of an exported capsule must print it unchanged (round trip)")
	}
	for _, want := range []string{"format: soba-capsule/1", "## Goal", "internal/orders/handler.go", "`go test ./internal/...`"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("capsule lacks %q", want)
		}
	}
	bad := filepath.Join(dir, "bad.capsule.md")
	os.WriteFile(bad, []byte("---\nformat: soba-capsule/7\n---\n"), 0o644)
	errb.Reset()
	if code := run([]string{"capsule", "show", bad}, strings.NewReader(""), &out, &errb); code == 0 || errb.Len() == 0 {
		t.Fatalf("malformed capsule: exit %d %q", code, errb.String())
	}
}
