package app

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/compaction/tokens"
	"github.com/soba-agent/soba-lsp/session"
)

// TestSessionOnStart_RT4 checks which session a workspace opens at start:
// under sessionOnStart "resume" the most recently updated one, under "new"
// (and for ACP's session/new) a new one; a newest session that cannot be
// reopened is left byte for byte as it was, a warning says so, and a new
// session starts.
func TestSessionOnStart_RT4(t *testing.T) {
	tests := []struct {
		name       string
		setting    string
		newSession bool // ACP's session/new
		existing   []string
		damage     func(t *testing.T, path string) func() // makes the newest session unopenable; returns the undo
		want       string                                 // "newest", "new"
		warning    string
	}{
		{name: "resume the newest", setting: "resume", existing: []string{"s_older", "s_newest"}, want: "newest"},
		{name: "unset means resume", setting: "", existing: []string{"s_older", "s_newest"}, want: "newest"},
		{name: "new", setting: "new", existing: []string{"s_older", "s_newest"}, want: "new"},
		{name: "nothing to resume", setting: "resume", want: "new"},
		{name: "ACP session/new", setting: "resume", newSession: true, existing: []string{"s_older", "s_newest"}, want: "new"},
		{name: "newest held by another window", setting: "resume", existing: []string{"s_older", "s_newest"}, want: "new",
			damage: func(t *testing.T, path string) func() {
				s, _, err := session.Open(path, session.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return func() { s.Close() }
			},
			warning: "session s_newest could not be reopened"},
		{name: "newest is not a session", setting: "resume", existing: []string{"s_older", "s_newest"}, want: "new",
			damage: func(t *testing.T, path string) func() {
				if err := os.WriteFile(path, []byte(strings.Repeat("x", 100)+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				return func() {}
			},
			warning: "session s_newest could not be reopened"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			sessions := filepath.Join(dir, ".soba", "sessions")
			for i, id := range tt.existing {
				s, err := session.Create(sessions, session.SessionHeader{SessionID: id}, session.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.Append(session.Entry{Type: session.TypeUser, User: &session.UserMessage{Text: "request of " + id}}); err != nil {
					t.Fatal(err)
				}
				s.Close()
				at := time.Now().Add(time.Duration(i-len(tt.existing)) * time.Hour)
				os.Chtimes(filepath.Join(sessions, id+".jsonl"), at, at)
			}
			newest := filepath.Join(sessions, "s_newest.jsonl")
			var before []byte
			if tt.damage != nil {
				undo := tt.damage(t, newest)
				defer undo()
				before, _ = os.ReadFile(newest)
			}
			load := func(root string, init, change json.RawMessage) (Settings, []string, error) {
				return Settings{Model: ModelSettings{Provider: "openai", BaseURL: "http://127.0.0.1:1", Name: "m", ContextWindow: 65000, MaxOutputTokens: 8000},
					Compaction: compaction.DefaultConfig(), Approval: "auto", SessionDir: sessions, SessionOnStart: tt.setting}, nil, nil
			}
			counter := tokens.Default()
			ws, warnings, err := OpenWorkspace(WorkspaceOptions{Root: dir, Load: load, Notifier: &turnEnds{ended: make(chan string, 4)},
				Counter: counter, EntryTokens: tokens.Estimator{Counter: counter}.EntryTokens, NewSession: tt.newSession})
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			info, err := ws.Agent().Info()
			if err != nil {
				t.Fatal(err)
			}
			switch tt.want {
			case "newest":
				if info.SessionID != "s_newest" || info.Entries < 2 {
					t.Errorf("opened %s (%d entries), want s_newest with its history", info.SessionID, info.Entries)
				}
			case "new":
				for _, id := range tt.existing {
					if info.SessionID == id {
						t.Errorf("opened %s, want a new session", id)
					}
				}
			}
			all := strings.Join(warnings, "\n")
			if tt.warning == "" && all != "" {
				t.Errorf("warnings %q, want none", all)
			}
			if tt.warning != "" && (!strings.Contains(all, tt.warning) || !strings.Contains(all, "kept on disk as it is")) {
				t.Errorf("warnings %q, want %q and that the file is kept", all, tt.warning)
			}
			if before != nil {
				if after, _ := os.ReadFile(newest); !bytes.Equal(before, after) {
					t.Errorf("the unopenable session changed on disk:\n%q\n→\n%q", before, after)
				}
			}
		})
	}
}
