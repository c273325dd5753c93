package compaction

import (
	"slices"
	"strings"
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
	// Claude Code's wrapping — the continuation line, the analysis before
	// "Summary:", the instruction after it — is not a note.
	wrapped := "This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\n" +
		claude + "\nIf you need specific details from before compaction (like exact code snippets, error messages, or content you generated), read the full transcript at: /Users/x/.claude/projects/p/s.jsonl\n" +
		"Please continue the conversation from where we left it off without asking the user any further questions."
	if st, err := ParseSummary(wrapped); err != nil || st.Goal != "Fix the humanModified calculation in attribution." ||
		slices.ContainsFunc(st.Notes, func(n string) bool {
			return strings.Contains(n, "continued") || strings.Contains(n, "Analysis") || strings.Contains(n, "chronologically") || strings.Contains(n, "Please continue") || strings.Contains(n, "read the full transcript")
		}) || slices.ContainsFunc(st.NextSteps, func(n string) bool { return strings.Contains(n, "read the full transcript") }) {
		t.Errorf("wrapped Claude Code summary: notes %q, goal %q, %v", st.Notes, st.Goal, err)
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

// TestCodexHandoffSections_RM4: Codex's handoff summary — its prompt asks
// for current progress and key decisions, context and user preferences,
// what remains (next steps) and critical references — maps onto the
// capsule's sections whether its parts are headed in bold, with a plain
// "Title:" line or as Markdown headings; the prefix Codex puts before it is
// not a note.
func TestCodexHandoffSections_RM4(t *testing.T) {
	prefix := CodexSummaryPrefix + " You also have access to the state of the tools that were used by that language model. Use this to build on the work that has already been done and avoid duplicating work. Here is the summary produced by the other language model, use the information in this summary to assist with your own analysis:\n"
	for _, tc := range []struct {
		name, md                       string
		done, next, constraints, notes []string
	}{
		{
			name: "bold parts, with the prefix",
			md: prefix + "**Current progress and key decisions made**\n- Added the enum check in `config-validator.ts`\n\n" +
				"**Important context, constraints, or user preferences**\n- Never force-push results branches\n\n" +
				"**What remains to be done (clear next steps)**\n1. Run `bun run typecheck`\n2. Open the draft PR\n\n" +
				"**Critical data, examples, or references**\n- worktree: ../agentv__worktrees/av-raf-5\n",
			done: []string{"Added the enum check in `config-validator.ts`"}, next: []string{"Run `bun run typecheck`", "Open the draft PR"},
			constraints: []string{"Never force-push results branches"}, notes: []string{"worktree: ../agentv__worktrees/av-raf-5"},
		},
		{
			name:  "plain title lines",
			md:    "Current progress and key decisions:\n- Added the check\n\nWhat remains to be done:\n- Open the PR\n\nReferences:\n- PR 12\n",
			done:  []string{"Added the check"},
			next:  []string{"Open the PR"},
			notes: []string{"PR 12"},
		},
		{
			name:        "Markdown headings",
			md:          "## Current progress\n- wrote the loader\n## Next steps\n- wire it in\n## Constraints / user preferences\n- never push\n## References\n- PR 12\n",
			next:        []string{"wire it in"},
			constraints: []string{"never push"},
			notes:       []string{"PR 12"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := ParseSummary(tc.md)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(st.Done, tc.done) || !slices.Equal(st.NextSteps, tc.next) || !slices.Equal(st.Constraints, tc.constraints) || !slices.Equal(st.Notes, tc.notes) {
				t.Errorf("done %q next %q constraints %q notes %q", st.Done, st.NextSteps, st.Constraints, st.Notes)
			}
		})
	}
}
