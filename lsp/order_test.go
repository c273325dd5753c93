package lsp

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/lsp/lsptest"
	"github.com/soba-agent/soba-lsp/lsp/protocol"
)

// TestCompactAnswersAfterItsEnd_RB4: a soba.compact answer reaches the
// editor after its own soba/compaction end and $/progress end (with or
// without work-done progress), so a client never sees the result of an
// operation whose end it has not heard.
func TestCompactAnswersAfterItsEnd_RB4(t *testing.T) {
	for _, workDone := range []bool{true, false} {
		t.Run(fmt.Sprintf("workDoneProgress=%v", workDone), func(t *testing.T) {
			e := runServer(t)
			e.initialize(workDone)
			for i := range 20 {
				var r protocol.CompactionResult
				if err := e.Command(protocol.CommandCompact, map[string]any{}, &r); err != nil {
					t.Fatal(err)
				}
				// Command returned: everything read before the answer is in
				// the snapshot, in wire order.
				s := e.Snapshot()
				endSeen := false
				for _, n := range lsptest.Of(s.Notes, MethodCompaction) {
					var ev protocol.CompactionEvent
					_ = json.Unmarshal(n.Params, &ev)
					if ev.OperationID == r.OperationID && ev.Phase == protocol.PhaseEnd {
						endSeen = true
					}
				}
				if !endSeen {
					t.Fatalf("compact %d: answered %s before its soba/compaction end", i, r.OperationID)
				}
				if workDone {
					ends := 0
					for _, n := range lsptest.Of(s.Notes, MethodProgress) {
						if strings.Contains(string(n.Params), `"kind":"end"`) {
							ends++
						}
					}
					if ends != i+1 {
						t.Fatalf("compact %d: %d $/progress ends before the answer, want %d", i, ends, i+1)
					}
				} else if n := len(lsptest.Of(s.Notes, MethodShowMessage)); n != i+1 {
					t.Fatalf("compact %d: %d end messages before the answer, want %d", i, n, i+1)
				}
			}
		})
	}
}

// TestFailedTurnShownToGenericClients_RB4: a turn that fails reaches a
// client that knows nothing of soba/event as an error message.
func TestFailedTurnShownToGenericClients_RB4(t *testing.T) {
	tests := []struct {
		name string
		ev   protocol.Event
		want string // "" means no error message
	}{
		{"failed", protocol.Event{TurnID: "t1", Type: protocol.EventTurnEnd, Outcome: protocol.TurnFailed, Error: "model: connection refused"},
			"SOBA: the turn failed: model: connection refused"},
		{"failed without a reason", protocol.Event{TurnID: "t2", Type: protocol.EventTurnEnd, Outcome: protocol.TurnFailed}, "SOBA: the turn failed"},
		{"completed", protocol.Event{TurnID: "t3", Type: protocol.EventTurnEnd, Outcome: protocol.TurnCompleted}, ""},
		{"cancelled", protocol.Event{TurnID: "t4", Type: protocol.EventTurnEnd, Outcome: protocol.TurnCancelled}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := runServer(t)
			e.initialize(true)
			e.backend.notifier().Event(tt.ev)
			// A marker after the event: once it arrives, anything the event
			// caused has arrived too.
			e.backend.notifier().Event(protocol.Event{TurnID: "marker", Type: protocol.EventQueued})
			s := e.Await(func(s lsptest.State) bool {
				for _, n := range lsptest.Of(s.Notes, MethodEvent) {
					if strings.Contains(string(n.Params), `"marker"`) {
						return true
					}
				}
				return false
			}, wait)
			var got []string
			for _, m := range lsptest.Of(s.Notes, MethodShowMessage) {
				var p struct {
					Type    int    `json:"type"`
					Message string `json:"message"`
				}
				_ = json.Unmarshal(m.Params, &p)
				if p.Type == 1 {
					got = append(got, p.Message)
				}
			}
			switch {
			case tt.want == "" && len(got) != 0:
				t.Errorf("error messages %q, want none", got)
			case tt.want != "" && (len(got) != 1 || got[0] != tt.want):
				t.Errorf("error messages %q, want [%q]", got, tt.want)
			}
		})
	}
}
