package compaction

import (
	"slices"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/session"
)

// R-M4 with R-C8: a roll keeps the In progress, Pending and Next steps items
// that are still open and drops those the entries since resolved — a plan
// item marked completed, a check that passed, a file that was changed, a
// turn that was answered. It never drops an open item because the newer
// range has items of its own.
func TestRollKeepsOpenItemsDropsResolved_RM4_RC8(t *testing.T) {
	todo := func(b *builder, items string) { b.batch("TodoWrite", 10, `{"todos":[`+items+`]}`) }
	cases := []struct {
		name       string
		before     func(b *builder)
		after      func(b *builder)
		open, gone []string // items (substrings) expected in the open lists, and absent from them
		done       []string // substrings expected in Done
		noted      []string // substrings expected in Notes
		prevExtra  capsule.State
	}{
		{
			name: "plan items completed since are dropped, the pending one stays",
			before: func(b *builder) {
				b.user("port the selectors", 10)
				todo(b, `{"content":"Port the model selector","status":"in_progress"},{"content":"Port the theme selector","status":"pending"},{"content":"Update the changelog","status":"pending"}`)
			},
			after: func(b *builder) {
				todo(b, `{"content":"Port the model selector","status":"completed"},{"content":"Port the theme selector","status":"completed"},{"content":"Update the changelog","status":"pending"}`)
			},
			open: []string{"Update the changelog"},
			gone: []string{"Port the model selector", "Port the theme selector"},
			done: []string{"Port the theme selector"},
		},
		{
			name: "a failing check's next step survives a new request",
			before: func(b *builder) {
				b.user("fix the parser", 10)
				b.bash("go test ./...", 1, 10)
			},
			after: func(b *builder) {
				b.user("also update the docs", 10)
				b.edit("docs/parser.md", 10)
			},
			open: []string{"Make `go test ./...` pass", "Continue with: also update the docs"},
		},
		{
			name: "a failing check's next step goes when it passes",
			before: func(b *builder) {
				b.user("fix the parser", 10)
				b.bash("go test ./...", 1, 10)
			},
			after: func(b *builder) {
				b.edit("parser.go", 10)
				b.bash("go test ./...", 0, 10)
			},
			gone: []string{"Make `go test ./...` pass", "`go test ./...` fails"},
		},
		{
			name: "the turn under way at the cut was answered since",
			before: func(b *builder) {
				b.user("rename the config loader", 10)
				b.edit("config/load.go", 10)
			},
			after: func(b *builder) {
				b.edit("config/loader.go", 10)
				b.reply("Renamed: the loader is config/loader.go now.", 10)
			},
			gone: []string{"Continue with: rename the config loader"},
			done: []string{"Worked on: rename the config loader"},
		},
		{
			name: "an answer in the kept tail before the capsule is older than the capsule",
			before: func(b *builder) {
				b.user("rename the config loader", 10)
				b.edit("config/load.go", 10)
			},
			after: func(b *builder) {
				b.reply("Next I rename the file.", 10)
				b.add(session.Entry{Type: session.TypeCapsule, Capsule: &session.Capsule{CheckpointID: "ck_1"}}, 0)
				b.edit("config/loader.go", 10)
			},
			open: []string{"Continue with: rename the config loader"},
		},
		{
			name: "the turn under way at the cut is still under way",
			before: func(b *builder) {
				b.user("rename the config loader", 10)
				b.edit("config/load.go", 10)
			},
			after: func(b *builder) {
				b.edit("config/loader.go", 10)
			},
			open: []string{"Continue with: rename the config loader"},
		},
		{
			name: "the steps of the turn under way at the cut are history once it is answered",
			before: func(b *builder) {
				b.user("split the package", 10)
				b.bash("go test ./...", 1, 10)
			},
			after: func(b *builder) {
				b.edit("core/session.go", 10)
				b.reply("Split done.", 10)
			},
			open: []string{"Make `go test ./...` pass", "`go test ./...` fails"},
			gone: []string{"Continue with: split the package"},
		},
		{
			name: "a step naming directories in plain words is done once files under them changed",
			before: func(b *builder) {
				b.user("split the package", 10)
			},
			after: func(b *builder) {
				b.add(session.Entry{Type: session.TypeUser, User: &session.UserMessage{Text: "go on"}}, 10)
				b.edit("src/core/session.ts", 10)
				b.edit("src/modes/interactive.ts", 10)
			},
			prevExtra: capsule.State{NextSteps: []string{"Create directories src/core and src/modes", "Move the docs to docs/guide"}},
			open:      []string{"Move the docs to docs/guide"},
			gone:      []string{"Create directories src/core and src/modes"},
		},
		{
			name: "steps naming files under a directory anywhere, deleted or renamed, are done",
			before: func(b *builder) {
				b.user("restructure", 10)
			},
			after: func(b *builder) {
				b.user("go on", 10)
				b.edit("packages/agent/src/utils/config.ts", 10)
				b.edit("packages/agent/src/main.ts (deleted)", 10)
				b.edit("packages/agent/src/tui.ts → packages/agent/src/modes/tui.ts", 10)
			},
			prevExtra: capsule.State{NextSteps: []string{"Create directories: `src/utils/`", "Remove `main.ts` and move `tui.ts`", "Write the changelog"}},
			open:      []string{"Write the changelog"},
			gone:      []string{"Create directories", "Remove `main.ts`"},
		},
		{
			name: "after several requests the earlier steps are a note, a check's step stays",
			before: func(b *builder) {
				b.user("refactor the modes", 10)
				b.bash("npm run check", 2, 10)
			},
			after: func(b *builder) {
				for _, q := range []string{"what does the queue do", "rename the flag", "explain the footer"} {
					b.user(q, 10)
					b.reply("Done: "+q, 10)
				}
			},
			prevExtra: capsule.State{NextSteps: []string{"Move files as per structure above"}},
			open:      []string{"Make `npm run check` pass"},
			gone:      []string{"Move files as per structure above"},
			noted:     []string{"not confirmed (3 later requests since): Move files as per structure above"},
		},
		{
			name: "a pending step whose file was changed since is done",
			before: func(b *builder) {
				b.user("update the API docs", 10)
				todo(b, `{"content":"Update `+"`docs/api.md`"+`","status":"pending"},{"content":"Bump the version","status":"pending"}`)
			},
			after: func(b *builder) {
				b.edit("docs/api.md", 10)
			},
			open: []string{"Bump the version"},
			gone: []string{"Update `docs/api.md`"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newBuilder()
			c.before(b)
			cut := len(b.es)
			c.after(b)
			prev, err := BuildDeterministic(b.es, 0, cut, nil, Extras{})
			if err != nil {
				t.Fatal(err)
			}
			// Items of a model's or another agent's summary.
			prev.NextSteps = append(prev.NextSteps, c.prevExtra.NextSteps...)
			rolled, err := BuildDeterministic(b.es, cut, len(b.es), &prev, Extras{})
			if err != nil {
				t.Fatal(err)
			}
			open := slices.Concat(rolled.InProgress, rolled.Pending, rolled.NextSteps, rolled.Blockers)
			has := func(xs []string, s string) bool {
				return slices.ContainsFunc(xs, func(x string) bool { return strings.Contains(x, s) })
			}
			for _, s := range c.open {
				if !has(open, s) {
					t.Errorf("open item %q was dropped: %s", s, openLists(rolled))
				}
			}
			for _, s := range c.gone {
				if has(open, s) {
					t.Errorf("resolved item %q was kept: %s", s, openLists(rolled))
				}
			}
			for _, s := range c.done {
				if !has(rolled.Done, s) {
					t.Errorf("Done lacks %q: %q", s, rolled.Done)
				}
			}
			for _, s := range c.noted {
				if !has(rolled.Notes, s) {
					t.Errorf("Notes lack %q: %q", s, rolled.Notes)
				}
			}
		})
	}
}

func openLists(st capsule.State) string {
	return "in progress " + strings.Join(st.InProgress, " | ") + "; pending " + strings.Join(st.Pending, " | ") +
		"; next steps " + strings.Join(st.NextSteps, " | ") + "; blockers " + strings.Join(st.Blockers, " | ")
}

// TestOpinionsAndTerminalCopiesAreNotConstraints_RC8: the user's opinion
// ("i think …") and a copy of a terminal's screen (lines padded to its
// width, a diff's gutter) state no rule, whatever words they hold; a rule
// next to them still does.
func TestOpinionsAndTerminalCopiesAreNotConstraints_RC8(t *testing.T) {
	pad := func(s string) string { return s + strings.Repeat(" ", max(3, 50-len(s))) }
	for _, tc := range []struct {
		name, msg string
		want      []string
	}{
		{"opinion", "alright, i think there's only one file left to fix up. Never touch the theme files.", []string{"Never touch the theme files"}},
		{"doubt", "i don't tink the component invalidate works correctly", nil},
		{"opinion after an aside", "ok, i think the queued messages component doesn't adhere to the width invariant", nil},
		{"terminal copy", pad("+ 15 - TruncatedText now stops at the first") + "\n" + pad(" newline and only displays the first line.") + "\n" +
			pad("+ 16 - Invalid themes must no longer crash") + "\n" + pad(" the app."), nil},
		{"question", "could we create a summary of the options but keep it in the repo", nil},
		{"complaint", "you forgot the tests again, never skip them", nil},
		{"review bot comment", "Missing UserAddedPerFile field causes lost per-file tracking\n\nMedium Severity\n\nWhen session state is saved, the map is lost. Without this field, the per-file data must be recomputed.", nil},
		{"pasted after a short introduction", "I think this was just fixed, right: The UserAddedPerFile field is not being converted between the two structs. Without this conversion, the per-file tracking data will be lost when session state is saved and loaded, causing incorrect attribution in multi-checkpoint scenarios.", nil},
		{"a rule after a colon is not a paste", "One rule: never push to main.", []string{"One rule: never push to main"}},
		{"a long message under a heading word is the user's", "Note: never change the public API of the tokenizer package, keep every exported name as it is, and run the whole test suite before you tell me it is done, including the slow integration tests under ./integration.",
			[]string{"Note: never change the public API of the tokenizer package, keep every exported name as it is, and run the whole test suite before you tell me it is done, including the slow integration tests under ./integration"}},
		{"a rule with thinking in it", "Always think about the width before rendering.", []string{"Always think about the width before rendering"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			b.user(tc.msg, 10)
			if got := b.capsule(t).Constraints; !slices.Equal(got, tc.want) {
				t.Errorf("constraints %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRollNeverSaysStalePasses_RC5: a pass carried from the previous
// capsule while files changed since is stale — its note says so, and Done no
// longer says it passes but that it passed before later changes.
func TestRollNeverSaysStalePasses_RC5(t *testing.T) {
	b := newBuilder()
	b.user("fix the parser", 10)
	b.edit("parser.go", 10)
	b.bash("go test ./...", 0, 10)
	cut := len(b.es)
	b.edit("lexer.go", 10)
	prev, err := BuildDeterministic(b.es, 0, cut, nil, Extras{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(prev.Done, "`go test ./...` passes") {
		t.Fatalf("before the roll: done %q", prev.Done)
	}
	rolled, err := BuildDeterministic(b.es, cut, len(b.es), &prev, Extras{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(rolled.Done, "`go test ./...` passes") || !slices.Contains(rolled.Done, "`go test ./...` passed before later changes") {
		t.Errorf("done %q", rolled.Done)
	}
	if !slices.ContainsFunc(rolled.Notes, func(n string) bool { return strings.Contains(n, "`go test ./...` is stale") }) {
		t.Errorf("notes %q", rolled.Notes)
	}
}

// TestReplyBeforeAnyRequest_RM4: a reply at the session's start, before any
// request, answers nothing: Done does not claim an earlier request was
// answered.
func TestReplyBeforeAnyRequest_RM4(t *testing.T) {
	b := newBuilder()
	b.reply("Hello, what shall we work on?", 10)
	b.user("add a flag", 10)
	if d := b.capsule(t).Done; slices.ContainsFunc(d, func(s string) bool { return strings.HasPrefix(s, answered) }) {
		t.Errorf("done %q", d)
	}
}
