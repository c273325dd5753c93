package compaction

import (
	"slices"
	"testing"

	"github.com/soba-agent/soba-lsp/capsule"
)

// TestForeignSummarySections_RM4: other agents' summaries map onto the
// capsule's sections on import: Claude Code's nine numbered sections, pi's
// headings with a fenced tree kept whole, and a bold line that is a note,
// not a heading.
func TestForeignSummarySections_RM4(t *testing.T) {
	claude := `Analysis:
Looking at the conversation chronologically.

Summary:
1. Primary Request and Intent:
   - Fix the humanModified calculation in attribution.
2. Key Technical Concepts:
   - LIFO heuristic
3. Files and Code Sections:
   - ` + "`manual_commit_attribution.go`" + `
4. Errors and fixes:
   - errcheck on binary.IsBinary: fixed by checking the error
5. Problem Solving:
   - per-file pools
6. All user messages:
   - "Lets do the implementation too"
7. Pending Tasks:
   - Investigate the failing test
8. Current Work:
   - Changing lines 235-237 to the precise calculation
9. Optional Next Step:
   - Add UserAddedPerFile to the test fixture
`
	st, err := ParseSummary(claude)
	if err != nil {
		t.Fatal(err)
	}
	if st.Goal != "Fix the humanModified calculation in attribution." {
		t.Errorf("goal %q", st.Goal)
	}
	if !slices.Equal(st.Pending, []string{"Investigate the failing test"}) || !slices.Equal(st.InProgress, []string{"Changing lines 235-237 to the precise calculation"}) ||
		!slices.Equal(st.NextSteps, []string{"Add UserAddedPerFile to the test fixture"}) {
		t.Errorf("pending %q, in progress %q, next %q", st.Pending, st.InProgress, st.NextSteps)
	}
	if len(st.Blockers) != 0 || !slices.Contains(st.Notes, "LIFO heuristic") || !slices.Contains(st.Notes, "per-file pools") {
		t.Errorf("blockers %q, notes %q", st.Blockers, st.Notes)
	}

	pi := "## Goal\nRefactor coding-agent\n\n## Constraints & Preferences\n- Keep old code working\n\n## Progress\n### Done\n- [x] AgentSession\n\n### In Progress\n- [ ] modes\n\n### Blocked\n- tsgo fails\n\n## Key Decisions\n- **Layout**: the tree below\n```\nsrc/\n├── core/\n└── modes/\n```\n\n## Next Steps\n1. Move files\n\n## Critical Context\n**lib/api.ts**: posts to NEXT_PUBLIC_API_URL\n"
	st, err = ParseSummary(pi)
	if err != nil {
		t.Fatal(err)
	}
	if st.Goal != "Refactor coding-agent" || !slices.Equal(st.Blockers, []string{"tsgo fails"}) || !slices.Equal(st.NextSteps, []string{"Move files"}) {
		t.Errorf("goal %q, blockers %q, next %q", st.Goal, st.Blockers, st.NextSteps)
	}
	if !slices.ContainsFunc(st.Decisions, func(d capsule.Decision) bool { return d.Decision == "src/\n├── core/\n└── modes/" }) {
		t.Errorf("the tree was not kept whole: decisions %+v", st.Decisions)
	}
	if !slices.Contains(st.Notes, "**lib/api.ts**: posts to NEXT_PUBLIC_API_URL") {
		t.Errorf("a bold note was taken as a heading: notes %q, next %q", st.Notes, st.NextSteps)
	}
	oc := "## Goal\nAdd moon support\n## Instructions\n- use bun\n## Discoveries\n- moon needs a workspace.yml\n## Accomplished\n- core starts\n## Relevant files / directories\n- core/moon.yml\n"
	st, err = ParseSummary(oc)
	if err != nil || st.Goal != "Add moon support" || !slices.Equal(st.Constraints, []string{"use bun"}) || !slices.Equal(st.Done, []string{"core starts"}) ||
		!slices.Equal(st.Notes, []string{"moon needs a workspace.yml", "core/moon.yml"}) {
		t.Errorf("opencode's sections: %+v %v", st, err)
	}
	for _, bold := range []string{"**Next steps**", "**Next steps:**", "**Blockers**:"} {
		if st, err := ParseSummary(bold + "\n- x\n"); err != nil || len(st.NextSteps)+len(st.Blockers) != 1 {
			t.Errorf("%q alone is a heading: %+v %v", bold, st, err)
		}
	}
}
