package capsule

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func golden(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(goldenPath(name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// replaceOnce replaces old by new in s and fails when old is not there once.
func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	if strings.Count(s, old) != 1 {
		t.Fatalf("%q occurs %d times in the golden file", old, strings.Count(s, old))
	}
	return strings.Replace(s, old, new, 1)
}

// TestHandEdit_RP2: a file edited by hand since export still loads, with a
// warning that says what changed.
func TestHandEdit_RP2(t *testing.T) {
	base := golden(t, "auto-threshold")
	tests := []struct {
		name  string
		edit  func(string) string
		warns []string // each must appear in some warning
		check func(*testing.T, State)
	}{
		{
			name: "bullet added",
			edit: func(s string) string {
				return replaceOnce(t, s, "- Trailing-timer debounce (50 ms)\n", "- Trailing-timer debounce (50 ms)\n- Hand-added bullet\n")
			},
			warns: []string{"capsule was edited since export: section Done changed"},
			check: func(t *testing.T, st State) {
				if got := st.Done[len(st.Done)-1]; got != "Hand-added bullet" {
					t.Errorf("last Done = %q", got)
				}
			},
		},
		{
			name: "two sections changed",
			edit: func(s string) string {
				s = replaceOnce(t, s, "without duplicate events.", "without duplicates.")
				return replaceOnce(t, s, "- `workspace/watch.go`\n\n## Verification", "- `workspace/watch.go`\n- `workspace/new.go`\n\n## Verification")
			},
			warns: []string{"capsule was edited since export: sections Goal, Files modified changed"},
			check: func(t *testing.T, st State) {
				if len(st.FilesModified) != 2 || st.FilesModified[1] != "workspace/new.go" {
					t.Errorf("files modified = %q", st.FilesModified)
				}
			},
		},
		{
			name: "section reordered",
			edit: func(s string) string {
				block := "## Blockers\n\n- TestWatchNewDir is flaky under -race\n\n"
				s = replaceOnce(t, s, block, "")
				return replaceOnce(t, s, "## Goal\n", block+"## Goal\n")
			},
			warns: []string{"sections are out of order"},
			check: func(t *testing.T, st State) {
				if len(st.Blockers) != 1 {
					t.Errorf("blockers = %q", st.Blockers)
				}
			},
		},
		{
			name:  "checksum line removed",
			edit:  func(s string) string { return dropLine(t, s, "checksum: ") },
			warns: []string{"capsule has no checksum"},
		},
		{
			name: "sections line removed and content edited",
			edit: func(s string) string {
				s = dropLine(t, s, "sections: ")
				return replaceOnce(t, s, "- Handle ErrEventOverflow as a full rescan", "- Handle overflow")
			},
			warns: []string{"capsule was edited since export: its content no longer matches the checksum"},
		},
		{
			name:  "checksum mangled",
			edit:  func(s string) string { return replaceOnce(t, s, "checksum: sha256:", "checksum: md5:") },
			warns: []string{"is not sha256:<64 hex digits>"},
		},
		{
			name: "unknown section kept under Notes",
			edit: func(s string) string {
				return replaceOnce(t, s, "## Files read", "## Open questions\n\nShould overflow\nlog a warning?\n\n## Files read")
			},
			warns: []string{`unknown section "Open questions" kept under Notes`, "section Notes changed"},
			check: func(t *testing.T, st State) {
				want := "Open questions: Should overflow\nlog a warning?"
				if got := st.Notes[len(st.Notes)-1]; got != want {
					t.Errorf("last note = %q, want %q", got, want)
				}
			},
		},
		{
			name: "section deleted",
			edit: func(s string) string {
				return replaceOnce(t, s, "## Pending\n", "## Pending\n\n_none_\n\n## Dropped\n")
			},
			warns: []string{"sections Pending, Notes changed", `unknown section "Dropped"`},
		},
		{
			name: "headings in another case and spacing",
			edit: func(s string) string {
				s = replaceOnce(t, s, "## Next steps\n", "##   NEXT   Steps:\n")
				return replaceOnce(t, s, "## In progress\n", "## in progress ##\n")
			},
			check: func(t *testing.T, st State) {
				if len(st.NextSteps) != 2 || len(st.InProgress) != 1 {
					t.Errorf("next steps %q, in progress %q", st.NextSteps, st.InProgress)
				}
			},
		},
		{
			name: "title edited: meta is not in the checksum",
			edit: func(s string) string {
				return replaceOnce(t, s, "title: Watcher debounce", "title: Watcher debounce (v2)")
			},
		},
		{
			name:  "unknown front matter key",
			edit:  func(s string) string { return replaceOnce(t, s, "quality: full\n", "quality: full\nauthor: someone\n") },
			warns: []string{`unknown key "author" ignored`},
		},
		{
			name: "windows line endings",
			edit: func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc, warnings, err := Parse([]byte(tc.edit(base)))
			if err != nil {
				t.Fatalf("hand-edited file did not load: %v", err)
			}
			for _, w := range tc.warns {
				if !containsWarning(warnings, w) {
					t.Errorf("no warning containing %q in %q", w, warnings)
				}
			}
			if len(tc.warns) == 0 && len(warnings) > 0 {
				t.Errorf("unexpected warnings %q", warnings)
			}
			if tc.check != nil {
				tc.check(t, doc.State)
			}
		})
	}
}

func containsWarning(ws []string, sub string) bool {
	for _, w := range ws {
		if strings.Contains(w, sub) {
			return true
		}
	}
	return false
}

func dropLine(t *testing.T, s, prefix string) string {
	t.Helper()
	var out []string
	found := false
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			found = true
			continue
		}
		out = append(out, l)
	}
	if !found {
		t.Fatalf("no line starting %q", prefix)
	}
	return strings.Join(out, "\n")
}

// TestHandWritten_RP2: a capsule written by hand, without checksum and in
// looser Markdown, loads.
func TestHandWritten_RP2(t *testing.T) {
	src := "---\nformat: soba-capsule/1\ntitle: By hand\n---\n\n## Goal\n\nFirst paragraph.\n\nSecond paragraph.\n\n" +
		"## Done\n\n* star bullet\n+ plus bullet\n\n1. ordered\n2. list\n\n" +
		"## Decisions\n\n- Keep it — simple\n- No rationale\n\n" +
		"## Files read\n\n- plain/path.go\n- `quoted/path.go`\n\n" +
		"## Verification\n\n- `go test ./...` - failed (exit 1)\n- `make` -- passed (exit 0)\n\n" +
		"## User messages\n\n- ```\n  fenced in a bullet\n  ```\n"
	doc, warnings, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := State{
		Goal:         "First paragraph.\n\nSecond paragraph.",
		Done:         []string{"star bullet", "plus bullet", "ordered", "list"},
		Decisions:    []Decision{{Decision: "Keep it", Rationale: "simple"}, {Decision: "No rationale"}},
		FilesRead:    []string{"plain/path.go", "quoted/path.go"},
		Verification: []Verification{{Command: "go test ./...", Outcome: "failed", ExitCode: 1}, {Command: "make", Outcome: "passed", ExitCode: 0}},
		UserMessages: []string{"fenced in a bullet"},
	}
	if !reflect.DeepEqual(doc.State, want) {
		t.Errorf("state = %#v\nwant    %#v", doc.State, want)
	}
	if doc.Meta.Title != "By hand" {
		t.Errorf("title = %q", doc.Meta.Title)
	}
	for _, w := range []string{"capsule has no checksum", "sections missing, loaded as empty: Constraints"} {
		if !containsWarning(warnings, w) {
			t.Errorf("no warning %q in %q", w, warnings)
		}
	}
}

// TestMalformed_RP2: a malformed file gives a clear error and no document.
func TestMalformed_RP2(t *testing.T) {
	good := golden(t, "auto-threshold")
	tests := []struct {
		name, src, want string
	}{
		{"empty file", "", "no front matter"},
		{"no front matter", "## Goal\n\nx\n", "line 1: no front matter"},
		{"front matter not closed", "---\nformat: soba-capsule/1\n## Goal\n", "front matter: expected \"key: value\""},
		{"front matter never closed", "---\nformat: soba-capsule/1\n", "no closing \"---\" line"},
		{"front matter junk line", strings.Replace(good, "quality: full\n", "quality full\n", 1), "line 9: front matter: expected \"key: value\""},
		{"duplicate key", strings.Replace(good, "quality: full\n", "quality: full\nquality: degraded\n", 1), "key \"quality\" appears twice"},
		{"no format", strings.Replace(good, "format: soba-capsule/1\n", "", 1), "no \"format\" key"},
		{"format version 2", strings.Replace(good, "soba-capsule/1", "soba-capsule/2", 1), "unknown format version \"soba-capsule/2\""},
		{"other format", strings.Replace(good, "soba-capsule/1", "yaml", 1), "not a SOBA capsule"},
		{"bad created", strings.Replace(good, "2026-07-01T09:30:00Z", "yesterday", 1), "created \"yesterday\" is not an RFC 3339 time"},
		{"bad checkpoint", strings.Replace(good, "checkpoint: ck_8f2a1c", "checkpoint: ../../etc", 1), "is not a checkpoint id"},
		{"bad quality", strings.Replace(good, "quality: full", "quality: great", 1), "quality \"great\" is neither"},
		{"files section not a list", strings.Replace(good, "- `workspace/watch.go`\n- `workspace/watch_test.go`", "workspace/watch.go and friends", 1),
			`section "Files read": expected a list`},
		{"verification bullet unreadable", strings.Replace(good, "- `go vet ./workspace/` — passed (exit 0)", "- go vet passed", 1),
			`section "Verification": bullet 2: expected "` + "`command`" + ` — outcome (exit N)"`},
		{"verification exit not a number", strings.Replace(good, "passed (exit 0)", "passed (exit zero)", 1), "exit code is not an integer"},
		{"verification outcome two words", strings.Replace(good, "passed (exit 0)", "mostly passed (exit 0)", 1), "is not one word"},
		{"exit block not a number", strings.Replace(good, "- `go vet ./workspace/` — passed (exit 0)", "```command\ngo vet\n```\n```exit\nzero\n```", 1),
			`bullet 2: exit block "zero" is not an integer`},
		{"unknown fence label", strings.Replace(good, "- TestWatchNewDir is flaky under -race", "```go\nx\n```", 1), `fenced block labelled "go", expected "text"`},
		{"nested list", strings.Replace(good, "- Recursive add of existing directories\n", "- Recursive add of existing directories\n  - nested\n", 1),
			`section "Done": bullet 1: expected one line of text or fenced blocks, found a list`},
		{"quote in a list section", strings.Replace(good, "- TestWatchNewDir is flaky under -race", "> quoted", 1), "found a block quote"},
		{"empty bullet", strings.Replace(good, "- TestWatchNewDir is flaky under -race", "-", 1), "bullet 1: empty bullet"},
		{"section twice", good + "\n## Goal\n\nagain\n", `section "Goal" appears twice`},
		{"goal is a list", strings.Replace(good, "Make the workspace watcher", "- Make the workspace watcher", 1), `section "Goal": expected a paragraph, found a list`},
		{"heading inside a section", strings.Replace(good, "## Notes\n\n", "## Notes\n\n### Sub\n\n", 1), "found a heading"},
		{"NUL byte", strings.Replace(good, "Done", "Do\x00ne", 1), "binary data: NUL byte"},
		{"invalid UTF-8", strings.Replace(good, "Done", "Do\xffne", 1), "binary data: invalid UTF-8"},
		{"oversized", good + "\n" + strings.Repeat("x", MaxSize), "over the 1048576-byte limit"},
		{"deep quote nesting", good + "\n" + strings.Repeat("> ", 5000) + "x\n", "nested more than 16 deep"},
		{"deep nesting after top-level HTML", good + "\n<div>\n```\n\n" + strings.Repeat("> ", 40) + "\n", "nested more than 16 deep"},
		{"deep nesting after an indented fence", good + "\n  ```\n" + strings.Repeat("> ", 40) + "\n", "nested more than 16 deep"},
		{"deep list indentation", good + "\n" + deepIndentList(200), "indented more than 64 columns"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc, warnings, err := Parse([]byte(tc.src))
			if err == nil {
				t.Fatalf("no error; warnings %q", warnings)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			if !reflect.DeepEqual(doc, Document{}) || warnings != nil {
				t.Errorf("error came with a document or warnings: %#v %q", doc, warnings)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Errorf("error %T is not a *ParseError", err)
			}
		})
	}
}

func deepIndentList(depth int) string {
	var b strings.Builder
	for i := range depth {
		b.WriteString(strings.Repeat("  ", i))
		b.WriteString("- x\n")
	}
	return b.String()
}

// TestErrorLine_RP2: errors name the file and the line.
func TestErrorLine_RP2(t *testing.T) {
	src := golden(t, "auto-threshold")
	src = strings.Replace(src, "- `go vet ./workspace/` — passed (exit 0)", "- go vet", 1)
	line := 1 + strings.Count(src[:strings.Index(src, "- go vet")], "\n")
	_, _, err := ParseFile("capsule.md", []byte(src))
	want := "capsule.md:" + strconv.Itoa(line) + `: section "Verification": bullet 2: `
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %v, want prefix %q", err, want)
	}
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != line || pe.Section != "Verification" || pe.Bullet != 2 {
		t.Errorf("ParseError = %+v", pe)
	}
}

// TestHostileInput_RP2: huge lines, deep nesting and thousands of sections
// end in an error or a sane document, never a hang or a panic.
func TestHostileInput_RP2(t *testing.T) {
	head := "---\nformat: soba-capsule/1\n---\n"
	tests := map[string]string{
		"one huge line":        head + "## Notes\n\n- " + strings.Repeat("a", MaxSize-4096) + "\n",
		"huge backtick run":    head + "## Notes\n\n" + strings.Repeat("`", MaxSize-64) + "\n",
		"nested brackets":      head + "## Notes\n\n- " + strings.Repeat("[", 200000) + strings.Repeat("]", 200000) + "\n",
		"nested lists by line": head + "## Notes\n\n" + deepIndentList(32),
		"quotes at the limit":  head + "## Notes\n\n" + strings.Repeat(strings.Repeat("> ", 16)+"x\n", 10000),
		"thousands of sections": head + strings.Repeat("## Unknown\n\ntext\n\n", 40000) +
			strings.Repeat("## Notes\n\n- n\n\n", 1),
		"thousands of bullets": head + "## Notes\n\n" + strings.Repeat("- n\n", 200000),
		"many fences":          head + "## Notes\n\n" + strings.Repeat("```\nx\n```\n", 80000),
		"unclosed fence":       head + "## Notes\n\n````text\n" + strings.Repeat("## Goal\n", 100000),
	}
	for name, src := range tests {
		t.Run(name, func(t *testing.T) {
			if len(src) > MaxSize {
				t.Fatalf("test input is %d bytes, over MaxSize", len(src))
			}
			doc, warnings, err := Parse([]byte(src))
			if err != nil {
				if !reflect.DeepEqual(doc, Document{}) {
					t.Error("error came with a document")
				}
				return
			}
			if len(warnings) > maxWarnings+1 {
				t.Errorf("%d warnings, want at most %d", len(warnings), maxWarnings+1)
			}
			if _, _, err := Parse(Render(doc)); err != nil {
				t.Errorf("Render(Parse(x)) does not parse: %v", err)
			}
		})
	}
}

// FuzzParse: Parse never panics, never returns a document with an error,
// and whatever parses renders to a file that parses to the same document
// and renders to the same bytes.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.capsule.md"))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("---\nformat: soba-capsule/1\n---\n## Done\n- a\n  - b\n"))
	f.Add([]byte("---\nformat: soba-capsule/1\n---\n## Decisions\n```rationale\nr\n```\n```decision\nd\n```\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, _, err := Parse(data)
		if err != nil {
			if !reflect.DeepEqual(doc, Document{}) {
				t.Fatal("error came with a document")
			}
			return
		}
		out := Render(doc)
		doc2, warnings, err := Parse(out)
		if err != nil {
			t.Fatalf("Render(Parse(x)) does not parse: %v\n%s", err, out)
		}
		want := doc
		want.Meta.Checksum = Checksum(doc.State)
		if !reflect.DeepEqual(doc2, want) {
			t.Fatalf("Parse(Render(Parse(x))) differs\ngot:  %#v\nwant: %#v\nfile:\n%s", doc2, want, out)
		}
		if len(warnings) > 0 {
			t.Fatalf("warnings on a rendered file: %q\n%s", warnings, out)
		}
		if out2 := Render(doc2); !bytes.Equal(out, out2) {
			t.Fatalf("Render not stable:\n%s\n----\n%s", out, out2)
		}
	})
}

// FuzzRoundTrip_RP2: any state renders to a file that parses back to its
// normal form.
func FuzzRoundTrip_RP2(f *testing.F) {
	f.Add("goal", "item", "decision", "why", "go test ./...", "passed", 0, "a/b.go", "msg\nline")
	f.Add("", " ", "a — b", "", "`x`", "", -1, "", "```\n---\n## Goal")
	f.Add("x\n===", "1. x", "d —", "r", "cmd\n", "two words", 3, " p ", "\t\n  \n")
	f.Fuzz(func(t *testing.T, goal, item, dec, why, cmd, outcome string, exit int, path, msg string) {
		doc := Document{Meta: Meta{Title: item, Trigger: outcome}, State: State{
			Goal: goal, Constraints: []string{item}, Done: []string{item, msg}, Pending: []string{dec},
			Decisions: []Decision{{Decision: dec, Rationale: why}, {Decision: why}},
			Notes:     []string{why, cmd}, FilesRead: []string{path}, FilesModified: []string{item},
			Verification: []Verification{{Command: cmd, Outcome: outcome, ExitCode: exit}},
			ActiveSkills: []string{path}, UserMessages: []string{msg, goal},
		}}
		data := Render(doc)
		got, warnings, err := Parse(data)
		if err != nil {
			t.Fatalf("Parse(Render) failed: %v\n%s", err, data)
		}
		if len(warnings) > 0 {
			t.Fatalf("warnings %q\n%s", warnings, data)
		}
		if want := Normalize(doc); !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip differs\ngot:  %#v\nwant: %#v\nfile:\n%s", got, want, data)
		}
		if RenderModelText(doc.State) != RenderModelText(got.State) {
			t.Fatal("model text differs after the round trip")
		}
	})
}
