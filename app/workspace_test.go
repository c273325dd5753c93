package app

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soba-agent/soba-lsp/agent"
	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/compaction/tokens"
	"github.com/soba-agent/soba-lsp/workspace"
)

// The system prompt of a new session lists what Project Memory holds (R-C4).
func TestNewSessionSystemPromptListsProjectMemory_RC4(t *testing.T) {
	dir := t.TempDir()
	root, _ := workspace.NewRoot(dir)
	mem, err := workspace.OpenMemory(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Mirror("ck_mem001", "Billing rules agreed with finance", time.Now(), []byte("---\nformat: soba-capsule/1\n---\n")); err != nil {
		t.Fatal(err)
	}
	srv := providertest.NewOpenAI(t, providertest.Text("ok"))
	load := func(root string, init, change json.RawMessage) (Settings, []string, error) {
		return Settings{Model: ModelSettings{Provider: "openai", BaseURL: srv.URL, Name: "m", ContextWindow: 65000, MaxOutputTokens: 8000},
			Compaction: compaction.DefaultConfig(), Approval: "auto", SessionDir: filepath.Join(root, ".soba", "sessions")}, nil, nil
	}
	rec := &turnEnds{ended: make(chan string, 4)}
	counter := tokens.Default()
	ws, _, err := OpenWorkspace(WorkspaceOptions{Root: dir, Load: load, Notifier: rec, Counter: counter,
		EntryTokens: tokens.Estimator{Counter: counter}.EntryTokens})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	id, _, err := ws.Agent().Prompt("hello")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-rec.ended:
		if got != id {
			t.Fatalf("turn %s ended, want %s", got, id)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the turn did not end")
	}
	sys := srv.Requests()[0].System
	if !strings.Contains(sys, "ck_mem001") || !strings.Contains(sys, "Billing rules agreed with finance") {
		t.Fatalf("the system prompt does not list Project Memory:\n%s", sys)
	}
}

// turnEnds is a Notifier that reports the turns that ended.
type turnEnds struct{ ended chan string }

func (r *turnEnds) Event(e agent.Event) {
	if e.Type == "turn_end" {
		r.ended <- e.TurnID
	}
}
func (r *turnEnds) Budget(compaction.Budget)         {}
func (r *turnEnds) Compaction(agent.CompactionEvent) {}
func (r *turnEnds) Log(string)                       {}
func (r *turnEnds) Warn(string)                      {}
