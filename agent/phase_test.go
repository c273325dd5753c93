package agent

import (
	"errors"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/compaction"
)

// wantTransitions is the phase diagram of docs/architecture.md, written out
// independently of the table in phase.go: a row per from-phase, a column
// per to-phase in the order of the constants, "y" allowed, "." rejected.
var wantTransitions = map[phase]string{
	//                    idle gen tool tcmp cmp cap closed
	phaseIdle:           ". y . . y y y",
	phaseGenerating:     "y . y y . . .",
	phaseTool:           "y y . . . . .",
	phaseTurnCompacting: "y y . . . . .",
	phaseCompacting:     "y . . . . . .",
	phaseCapsule:        "y . . . . . .",
	phaseClosed:         ". . . . . . .",
}

// Every (from, to) pair: an allowed move changes the phase; a rejected one
// returns an error naming both phases, leaves the phase and its data as
// they were, and counts as illegal.
func TestPhaseTransitionTable(t *testing.T) {
	counted := illegalTransitions.Load()
	defer illegalTransitions.Store(counted) // the rejections below are the test's own
	if len(wantTransitions) != int(numPhases) {
		t.Fatalf("the expected table has %d rows for %d phases", len(wantTransitions), numPhases)
	}
	for from := range numPhases {
		row := strings.Fields(wantTransitions[from])
		if len(row) != int(numPhases) {
			t.Fatalf("row %s has %d columns", from, len(row))
		}
		for to := range numPhases {
			allowed := row[to] == "y"
			t.Run(from.String()+"→"+to.String(), func(t *testing.T) {
				// closed only follows Close, which sets closing; closing
				// refuses new work, so the moves that start work are tried
				// without it.
				st := &state{phase: from, closing: to == phaseClosed,
					turn: &turnState{id: "turn_x"}, compaction: &runningCompaction{operationID: "op_x"}}
				before := illegalTransitions.Load()
				err := st.transition(to)
				if allowed {
					if err != nil || st.phase != to {
						t.Fatalf("rejected (%v), phase %s; want allowed", err, st.phase)
					}
					if (st.turn != nil) != to.inTurn() || (st.compaction != nil) != to.compacting() {
						t.Fatalf("in %s: turn %v, compaction %v; the data of the phases left must go", to, st.turn, st.compaction)
					}
					return
				}
				if err == nil || st.phase != from {
					t.Fatalf("allowed, phase %s; want rejected", st.phase)
				}
				if !strings.Contains(err.Error(), from.String()+" → "+to.String()) {
					t.Fatalf("error %q does not name the move", err)
				}
				if st.turn == nil || st.compaction == nil {
					t.Fatal("a rejected move dropped the phase's data")
				}
				if illegalTransitions.Load() == before {
					t.Fatal("a rejected move was not counted")
				}
			})
		}
	}
}

// Once Close began, the moves that start new work (a turn, a compaction, a
// capsule's summary) are refused as closing, not as bugs; the running work
// still moves through its phases back to idle, and closed needs closing.
func TestPhaseClosingRefusesNewWork(t *testing.T) {
	before := illegalTransitions.Load()
	defer illegalTransitions.Store(before)
	for _, m := range []struct{ from, to phase }{
		{phaseIdle, phaseGenerating}, {phaseIdle, phaseCompacting}, {phaseIdle, phaseCapsule}, {phaseGenerating, phaseTurnCompacting},
	} {
		st := &state{phase: m.from, closing: true}
		if err := st.transition(m.to); !errors.Is(err, errClosing) || st.phase != m.from {
			t.Errorf("%s → %s while closing: %v, phase %s; want errClosing", m.from, m.to, err, st.phase)
		}
	}
	for _, m := range []struct{ from, to phase }{
		{phaseGenerating, phaseTool}, {phaseTool, phaseGenerating}, {phaseTurnCompacting, phaseGenerating},
		{phaseGenerating, phaseIdle}, {phaseCompacting, phaseIdle}, {phaseCapsule, phaseIdle}, {phaseIdle, phaseClosed},
	} {
		st := &state{phase: m.from, closing: true}
		if err := st.transition(m.to); err != nil {
			t.Errorf("%s → %s while closing: %v; the running work must drain", m.from, m.to, err)
		}
	}
	if illegalTransitions.Load() != before {
		t.Fatal("a closing refusal was counted as illegal")
	}
	st := &state{phase: phaseIdle}
	if err := st.transition(phaseClosed); err == nil {
		t.Fatal("idle → closed without Close was allowed")
	}
}

// The Budget's state is one of PROTOCOL.md's four for every phase.
func TestPhaseWireState(t *testing.T) {
	want := map[phase]string{phaseIdle: compaction.StateIdle, phaseGenerating: compaction.StateGenerating, phaseTool: compaction.StateTool,
		phaseTurnCompacting: compaction.StateCompacting, phaseCompacting: compaction.StateCompacting, phaseCapsule: compaction.StateCompacting,
		phaseClosed: compaction.StateIdle}
	for p := range numPhases {
		if got := p.wire(); got != want[p] {
			t.Errorf("%s: state %q, want %q", p, got, want[p])
		}
	}
}

// TestPhaseDiagramMatchesTable: the Mermaid diagram in docs/architecture.md
// draws exactly the moves of wantTransitions, so the picture cannot drift
// from the code.
func TestPhaseDiagramMatchesTable(t *testing.T) {
	doc, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i := strings.Index(text, "stateDiagram-v2")
	if i < 0 {
		t.Fatal("docs/architecture.md has no stateDiagram-v2 block")
	}
	block := text[i:]
	block = block[:strings.Index(block, "```")]
	drawn := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*(\w+) --> (\w+)`).FindAllStringSubmatch(block, -1) {
		drawn[m[1]+"→"+m[2]] = true
	}
	want := map[string]bool{}
	for from := range numPhases {
		for to, cell := range strings.Fields(wantTransitions[from]) {
			if cell == "y" {
				want[from.String()+"→"+phase(to).String()] = true
			}
		}
	}
	if !maps.Equal(drawn, want) {
		t.Errorf("the diagram draws %v,\nthe table allows %v", slices.Sorted(maps.Keys(drawn)), slices.Sorted(maps.Keys(want)))
	}
}
