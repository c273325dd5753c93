package agent

import (
	"fmt"
	"testing"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/session"
)

// countingPath is a Transcript that counts the payloads it is asked for.
type countingPath struct {
	compaction.Entries
	loads map[int]int
}

func (c *countingPath) Entry(i int) (*session.Entry, error) {
	c.loads[i]++
	return c.Entries.Entry(i)
}

// restorePath builds a path of n turns (user, answer with a tool call, its
// result, answer with usage), with a skill activated, settings and a
// checkpoint intent early on, and, when withCapsule, a capsule in the middle.
func restorePath(n int, withCapsule bool) compaction.Entries {
	off := false
	p := compaction.Entries{{ID: "h", Type: session.TypeSession, Session: &session.SessionHeader{SessionID: "s"}}}
	add := func(e session.Entry) {
		e.ID = fmt.Sprintf("e%d", len(p))
		parent := p[len(p)-1].ID
		e.ParentID = &parent
		if e.Type == session.TypeUser || e.Type == session.TypeAssistant || e.Type == session.TypeToolResult {
			e.Tokens = 10
		}
		p = append(p, e)
	}
	add(session.Entry{Type: session.TypeCheckpoint, Checkpoint: &session.Checkpoint{CheckpointID: "ck_m", Kind: "milestone", Intent: "milestone"}})
	add(session.Entry{Type: session.TypeCheckpoint, Checkpoint: &session.Checkpoint{CheckpointID: "ck_p", Kind: "plan_pivot", Intent: "plan_pivot"}})
	add(session.Entry{Type: session.TypeSettings, Settings: &session.Settings{AutoCompact: &off, ConsumedIntents: []string{"milestone"}}})
	for k := range n {
		if withCapsule && k == n/2 {
			add(session.Entry{Type: session.TypeCapsule, Capsule: &session.Capsule{CheckpointID: "ck_c", Trigger: "user", Quality: "deterministic",
				TokensBefore: 100, TokensAfter: 10, State: capsule.State{ActiveSkills: []string{"from-capsule"}}}})
		}
		add(session.Entry{Type: session.TypeUser, User: &session.UserMessage{Text: "go"}})
		call := fmt.Sprintf("c%d", k)
		add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{ToolCalls: []session.ToolCall{{ID: call, Name: "skill", Arguments: []byte(`{}`)}}}})
		res := &session.ToolResult{ToolCallID: call, ToolName: "skill", OK: true, Content: "x"}
		if k == n-2 {
			res.Artifacts = &session.Artifacts{Skill: "late-skill"}
		}
		add(session.Entry{Type: session.TypeToolResult, ToolResult: res})
		add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{Text: "ok", Usage: &session.Usage{InputTokens: 1000 + k, OutputTokens: 5}}})
	}
	add(session.Entry{Type: session.TypeUser, User: &session.UserMessage{Text: "and now?"}})
	return p
}

// TestRestoreReadsTheIndex_RT4: resume restores the settings, the pending
// intents, the active skills, the newest capsule and the usage of the
// newest answer while decoding at most the newest capsule and that answer,
// whatever the history's length.
func TestRestoreReadsTheIndex_RT4(t *testing.T) {
	for _, tc := range []struct {
		turns       int
		withCapsule bool
		skills      []string
	}{
		{10, false, []string{"late-skill"}},
		{5000, false, []string{"late-skill"}},
		{5000, true, []string{"from-capsule", "late-skill"}},
	} {
		t.Run(fmt.Sprintf("%d turns, capsule %v", tc.turns, tc.withCapsule), func(t *testing.T) {
			p := &countingPath{Entries: restorePath(tc.turns, tc.withCapsule), loads: map[int]int{}}
			b, err := compaction.FindBase(p)
			if err != nil {
				t.Fatal(err)
			}
			for k := range p.loads {
				delete(p.loads, k)
			}
			r, err := Restore(p, b, quarterCounter{})
			if err != nil {
				t.Fatal(err)
			}
			if r.AutoCompact || fmt.Sprint(r.Intents.List()) != "[plan_pivot]" || fmt.Sprint(r.ActiveSkills) != fmt.Sprint(tc.skills) {
				t.Errorf("restored auto-compact %v, intents %v, skills %v; want false, [plan_pivot], %v", r.AutoCompact, r.Intents.List(), r.ActiveSkills, tc.skills)
			}
			if r.Input.UsageAt < 0 || r.Input.Prompt != 1000+tc.turns-1 {
				t.Errorf("usage at %d, prompt %d; want the newest answer's %d", r.Input.UsageAt, r.Input.Prompt, 1000+tc.turns-1)
			}
			if tc.withCapsule != (r.LastCompaction != nil) {
				t.Errorf("last compaction %+v", r.LastCompaction)
			}
			if len(p.loads) > 2 {
				t.Errorf("Restore decoded %d entries of a %d-entry path, want at most 2 (the newest capsule and answer)", len(p.loads), p.Len())
			}
		})
	}
}
