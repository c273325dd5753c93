package lsp

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/lsp/protocol"
)

// sharedSlashCase is one case of testdata/slash-commands.json: what a typed
// text means (the server command and its arguments, a prompt, or a usage
// error that runs nothing).
type sharedSlashCase struct {
	Text  string `json:"text"`
	Sends *struct {
		Command string         `json:"command"`
		Args    map[string]any `json:"args"`
	} `json:"sends"`
	Prompt *string `json:"prompt"`
	Error  bool    `json:"error"`
}

// backendMethod names the Backend method each command reaches.
var backendMethod = map[string]string{
	protocol.CommandPrompt: "Prompt", protocol.CommandCancel: "Cancel", protocol.CommandBudget: "Budget", protocol.CommandCompact: "Compact",
	protocol.CommandAutoCompact: "SetAutoCompact", protocol.CommandCheckpoint: "Checkpoint", protocol.CommandCapsuleCreate: "CapsuleCreate",
	protocol.CommandCapsuleExport: "CapsuleExport", protocol.CommandCapsuleLoad: "CapsuleLoad", protocol.CommandCapsuleList: "CapsuleList",
	protocol.CommandCapsuleShow: "CapsuleShow", protocol.CommandSessionInfo: "SessionInfo", protocol.CommandSessionList: "SessionList",
	protocol.CommandSessionNew: "SessionNew", protocol.CommandSessionResume: "SessionResume", protocol.CommandSessionRewind: "SessionRewind",
	protocol.CommandSessionHistory: "SessionHistory",
}

// TestRun_SharedSlashCases types every case of the shared table into
// soba.run (PROTOCOL.md: the server owns the slash grammar) and checks what
// reached the backend: the mapped command with exactly its arguments, a
// prompt with its text, or nothing at all for a usage error, whose lines
// name the command.
func TestRun_SharedSlashCases(t *testing.T) {
	raw, err := os.ReadFile("../testdata/slash-commands.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []sharedSlashCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) < 30 {
		t.Fatalf("only %d shared cases", len(doc.Cases))
	}
	e := runServer(t)
	e.initialize(false)
	for _, c := range doc.Cases {
		e.script(func(b *testBackend) { b.calls, b.args = nil, nil })
		var got map[string]any
		if err := e.Command(protocol.CommandRun, map[string]any{"text": c.Text}, &got); err != nil {
			t.Errorf("soba.run %q: %v", c.Text, err)
			continue
		}
		var calls []string
		var args []any
		e.script(func(b *testBackend) { calls, args = b.calls, b.args })
		switch {
		case c.Sends != nil:
			want := backendMethod[c.Sends.Command]
			if len(calls) == 0 || calls[0] != want || got["kind"] != string(protocol.RunKindCommand) || got["command"] != c.Sends.Command {
				t.Errorf("soba.run %q: result %v, backend calls %v; want command %s (%s)", c.Text, got, calls, c.Sends.Command, want)
				continue
			}
			wantArgs := c.Sends.Args
			if wantArgs == nil {
				wantArgs = map[string]any{}
			}
			gotArgs := map[string]any{}
			if len(args) > 0 {
				b, _ := json.Marshal(args[0])
				_ = json.Unmarshal(b, &gotArgs)
			}
			if !reflect.DeepEqual(gotArgs, wantArgs) {
				t.Errorf("soba.run %q: %s got %v, want %v", c.Text, want, gotArgs, wantArgs)
			}
			if lines, _ := got["lines"].([]any); len(lines) == 0 {
				t.Errorf("soba.run %q: no lines to show: %v", c.Text, got)
			}
		case c.Prompt != nil:
			p, _ := args[0].(protocol.PromptArgs)
			if len(calls) != 1 || calls[0] != "Prompt" || p.Text != *c.Prompt || got["kind"] != string(protocol.RunKindPrompt) || got["turnId"] != "turn_1" || got["text"] != *c.Prompt {
				t.Errorf("soba.run %q: result %v, calls %v %v; want prompt %q", c.Text, got, calls, args, *c.Prompt)
			}
		case c.Error:
			lines, _ := got["lines"].([]any)
			msg, _ := got["error"].(string)
			word := strings.Fields(strings.TrimSpace(c.Text))[0]
			if len(calls) != 0 || msg == "" || len(lines) != 1 || lines[0] != msg || !strings.Contains(msg, word) {
				t.Errorf("soba.run %q: result %v, calls %v; want a usage error naming %s and no call", c.Text, got, calls, word)
			}
		default:
			t.Errorf("case %q says nothing", c.Text)
		}
	}
}

// TestRun_Lines checks the lines soba.run shows for results, help and the
// resume list.
func TestRun_Lines(t *testing.T) {
	e := runServer(t)
	e.initialize(false)
	tests := []struct {
		text string
		want []string // substrings, one per line, in order
	}{
		{"/budget", []string{"budget · 1,200 / 48,808 tokens · soft 39,046 · estimated · auto-compact on · idle"}},
		{"/auto-compact off", []string{"auto-compact is"}},
		{"/help", []string{"SOBA slash commands:", "/help", "/budget"}},
		{"/cancel", []string{"nothing to cancel"}},
		{"/session resume", []string{"", "", "resume one with /session resume <sessionId>"}},
		{"/rewind", []string{"1 point to rewind to, most recent first", "e_1 · ", "rewind to before one with /rewind <entryId>"}},
		{"/capsule list", []string{"no checkpoints yet"}},
	}
	for _, tt := range tests {
		var got protocol.RunCommandResult
		if err := e.Command(protocol.CommandRun, map[string]any{"text": tt.text}, &got); err != nil {
			t.Fatalf("soba.run %q: %v", tt.text, err)
		}
		if len(got.Lines) < len(tt.want) {
			t.Errorf("soba.run %q: lines %q, want at least %d", tt.text, got.Lines, len(tt.want))
			continue
		}
		for i, w := range tt.want {
			if !strings.Contains(got.Lines[i], w) {
				t.Errorf("soba.run %q: line %d = %q, want it to contain %q", tt.text, i, got.Lines[i], w)
			}
		}
		if tt.text == "/session resume" && got.Lines[len(got.Lines)-1] != "resume one with /session resume <sessionId>" {
			t.Errorf("soba.run /session resume: last line %q", got.Lines[len(got.Lines)-1])
		}
	}
}
