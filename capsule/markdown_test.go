package capsule

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// goldenDocs are realistic capsules, written to testdata/<name>.capsule.md.
func goldenDocs() map[string]Document {
	created := time.Date(2026, 7, 1, 9, 30, 0, 0, time.UTC)
	return map[string]Document{
		"auto-threshold": {
			Meta: Meta{CheckpointID: "ck_8f2a1c", Title: "Watcher debounce", Created: created,
				Session: "s_01J2ZK8Q", Project: "soba-lsp", Trigger: "auto_threshold", Quality: QualityFull},
			State: State{
				Goal:        "Make the workspace watcher report files modified on disk within 100 ms, without duplicate events.",
				Constraints: []string{"fsnotify is not recursive on Linux: walk and add each directory", "No naked `go` statements; use conc"},
				Done:        []string{"Recursive add of existing directories", "Trailing-timer debounce (50 ms)"},
				InProgress:  []string{"Handle ErrEventOverflow as a full rescan"},
				Pending:     []string{"Watch new directories as they appear", "Document the inotify limits"},
				Decisions: []Decision{
					{Decision: "Debounce with a trailing timer", Rationale: "editors write files in several syscalls"},
					{Decision: "Treat overflow as a rescan", Rationale: "events are lost; only a walk is exact"},
					{Decision: "Keep paths relative to the root"},
				},
				Blockers:      []string{"TestWatchNewDir is flaky under -race"},
				NextSteps:     []string{"Reproduce the flake with -count=200", "Add a rescan counter to the flight record"},
				Notes:         []string{"inotify limits here: 192,530 watches, 128 instances"},
				FilesRead:     []string{"workspace/watch.go", "workspace/watch_test.go", "docs/dependencies.md"},
				FilesModified: []string{"workspace/watch.go"},
				Verification: []Verification{
					{Command: "go test -race ./workspace/...", ExitCode: 1, Outcome: "failed"},
					{Command: "go vet ./workspace/", ExitCode: 0, Outcome: "passed"},
				},
				ActiveSkills: []string{"go-testing"},
				UserMessages: []string{"The watcher misses files that vim writes. Fix it, and keep the tests honest."},
			},
		},
		"handoff-tricky": {
			Meta: Meta{CheckpointID: "ck_b71e09", Title: "Handoff: capsule format — edge cases", Created: created.Add(90*time.Minute + 123456789),
				Session: "s_01J30AX", Project: "soba-lsp", Trigger: "create", Quality: QualityFull},
			State: State{
				Goal: "Ship the .capsule.md format.\n\nRound trip must be exact for:\n- bullets\n## headings\n---",
				Constraints: []string{
					"- starts like a bullet",
					"# not a heading in this file",
					"1. not an ordered list",
					"> not a quote",
					"```not a fence",
					"<div>not html</div>",
					"---",
					"  leading and trailing spaces  ",
					"",
					"_none_",
					"[ref]: https://example.com not a link definition",
				},
				Done: []string{"multi\nline\n\nitem with a blank line", "ends with a newline\n", "\n"},
				Decisions: []Decision{
					{Decision: "Use — em dashes — inside", Rationale: "the first separator must not move"},
					{Decision: "Rationale with a newline", Rationale: "first line\nsecond line"},
					{Decision: "", Rationale: "only a rationale"},
					{Decision: "ends with a dash —", Rationale: "still unambiguous"},
				},
				FilesRead:     []string{"dir with spaces/file name.go", "weird`name`.txt", "`starts-with-backtick", " padded ", "a``b"},
				FilesModified: []string{"", "docs/capsule-format.md"},
				Verification: []Verification{
					{Command: "echo `date` && go test ./...", ExitCode: 0, Outcome: "passed"},
					{Command: "cat <<'EOF'\nhello\nEOF", ExitCode: 2, Outcome: "failed"},
					{Command: "go test -run 'X (y)'", ExitCode: -1, Outcome: "interrupted by user"},
					{Command: "make", ExitCode: 0, Outcome: ""},
				},
				ActiveSkills: []string{"capsule-format"},
				UserMessages: []string{
					"Please handle this:\n```go\nfunc main() {}\n```\nand ```` four backticks ````",
					"---\ntitle: not front matter\n---\n## Goal\n- not a section",
					"\tindented with a tab\n    and four spaces",
					"trailing spaces   \nand a line with only spaces\n   \nend",
				},
			},
		},
		"degraded-minimal": {
			Meta: Meta{CheckpointID: "ck_0042aa", Created: created.Add(24 * time.Hour),
				Session: "s_01J31", Project: "scratch", Trigger: "hard_limit", Quality: QualityDegraded},
			State: State{
				FilesRead:     []string{"main.go"},
				FilesModified: []string{"main.go", "main_test.go"},
				Verification:  []Verification{{Command: "go build ./...", ExitCode: 0, Outcome: "passed"}},
				UserMessages:  []string{"continue"},
			},
		},
	}
}

func goldenPath(name string) string { return filepath.Join("testdata", name+".capsule.md") }

// TestGolden_RP1 checks Render against the golden files (regenerate with
// go test ./capsule/ -run TestGolden -update).
func TestGolden_RP1(t *testing.T) {
	for name, doc := range goldenDocs() {
		t.Run(name, func(t *testing.T) {
			got := Render(doc)
			if *update {
				if err := os.WriteFile(goldenPath(name), got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(goldenPath(name))
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Render differs from %s (run with -update after checking the change)\ngot:\n%s", goldenPath(name), got)
			}
		})
	}
}

// TestRoundTrip_RP2: export then load gives the identical document, with
// no warnings, for every golden capsule.
func TestRoundTrip_RP2(t *testing.T) {
	for name, doc := range goldenDocs() {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(goldenPath(name))
			if err != nil {
				t.Fatal(err)
			}
			got, warnings, err := ParseFile(name+".capsule.md", data)
			if err != nil {
				t.Fatal(err)
			}
			if len(warnings) > 0 {
				t.Errorf("warnings on an unedited file: %q", warnings)
			}
			want := Normalize(doc)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Parse(golden) != Normalize(doc)\ngot:  %#v\nwant: %#v", got, want)
			}
			if !reflect.DeepEqual(got.State, doc.State) {
				t.Errorf("state changed by the round trip (the golden states are already normal)\ngot:  %#v\nwant: %#v", got.State, doc.State)
			}
			if again := Render(got); !bytes.Equal(again, data) {
				t.Errorf("Render(Parse(golden)) differs from the golden file")
			}
		})
	}
}

// TestRoundTripText_RP2 puts awkward text into every field.
func TestRoundTripText_RP2(t *testing.T) {
	texts := []string{
		"plain", "", " ", "\n", "\n\n", "a\n", "\na", "a  ", "\tx", "x\t", "`", "``", "```", "````x````",
		"~~~", "# h", "#hashtag", "###### six", "####### seven", "- x", "-x", "--", "+ y", "+y", "* z", "*emph*",
		"**", "***", "_ _ _", "__init__", "1. one", "1.5 ratio", "123) x", "1234567890. big", "> q", "<br>",
		"===", "= x", "[x]: y", "\\", "a\\", "&amp;", "| a | b |", "— dash", "a — b", "a —", "— ",
		"line\n===", "line\n---", "line\n    code", "  - nested\n    - deeper", "```\ncode\n```",
		"\u00a0nbsp", "nbsp\u00a0", "日本語", "emoji 🎉", "_none_", "*none*", "(exit 1)", "`x` — failed (exit 1)",
		"    four", "\t\ttabs\n\t\tmore", "a\n\n\nb", "trailing   \n   \n", "\\`",
		strings.Repeat(">", 40) + " deep quote", strings.Repeat("> ", 40), strings.Repeat(" ", 300) + "- far\n" + strings.Repeat("\t", 80) + "> far",
		"```\n" + strings.Repeat("- ", 50) + "\n```",
	}
	for _, s := range texts {
		doc := Document{Meta: Meta{Title: s}, State: State{
			Goal: s, Constraints: []string{s}, Done: []string{s, s}, InProgress: []string{s}, Pending: []string{s},
			Decisions: []Decision{{Decision: s, Rationale: s}, {Decision: s}, {Decision: "d", Rationale: s}, {Decision: s, Rationale: "r"}},
			Blockers:  []string{s}, NextSteps: []string{s}, Notes: []string{s},
			FilesRead: []string{s}, FilesModified: []string{s},
			Verification: []Verification{{Command: s, Outcome: s, ExitCode: -7}, {Command: s, Outcome: "passed"}, {Command: "x", Outcome: s}},
			ActiveSkills: []string{s}, UserMessages: []string{s},
		}}
		data := Render(doc)
		got, warnings, err := Parse(data)
		if err != nil {
			t.Errorf("text %q: Parse(Render) failed: %v\n%s", s, err, data)
			continue
		}
		if len(warnings) > 0 {
			t.Errorf("text %q: warnings %q", s, warnings)
		}
		if want := Normalize(doc); !reflect.DeepEqual(got, want) {
			t.Errorf("text %q: round trip differs\ngot:  %#v\nwant: %#v\nfile:\n%s", s, got.State, want.State, data)
		}
	}
}

// TestNormalize_RP2: what Render cannot carry is cleaned, the same way on
// both sides, and the checksum is of the cleaned state.
func TestNormalize_RP2(t *testing.T) {
	doc := Document{
		Meta: Meta{Title: "  a\ttitle\nwith lines \x1b ", Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600))},
		State: State{
			Goal:         "crlf\r\nline\rcr \x1b[31mred\x1b[0m \x7f\u0085",
			FilesRead:    []string{"a\tb\nc\x00d"},
			Constraints:  []string{},
			UserMessages: []string{"bad \xff utf8"},
		},
	}
	got, _, err := Parse(Render(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := State{Goal: "crlf\nline\ncr [31mred[0m ", FilesRead: []string{"abcd"}, UserMessages: []string{"bad \uFFFD utf8"}}
	if !reflect.DeepEqual(got.State, want) {
		t.Errorf("state = %#v, want %#v", got.State, want)
	}
	if got.Meta.Title != "a title with lines" {
		t.Errorf("title = %q", got.Meta.Title)
	}
	if !got.Meta.Created.Equal(doc.Meta.Created) || got.Meta.Created.Location() != time.UTC {
		t.Errorf("created = %v, want %v in UTC", got.Meta.Created, doc.Meta.Created)
	}
	if Checksum(doc.State) != Checksum(want) {
		t.Error("checksum of a state differs from the checksum of its normal form")
	}
}

// TestChecksum_RP2: the checksum covers every section and ignores the
// difference between nil and empty lists.
func TestChecksum_RP2(t *testing.T) {
	base := goldenDocs()["auto-threshold"].State
	sum := Checksum(base)
	if !checksumForm.MatchString(sum) {
		t.Fatalf("checksum %q is not sha256:<64 hex>", sum)
	}
	if Checksum(base) != sum {
		t.Fatal("checksum is not deterministic")
	}
	if Checksum(State{}) != Checksum(State{Done: []string{}, Decisions: []Decision{}}) {
		t.Error("nil and empty lists give different checksums")
	}
	edits := map[string]func(*State){
		"goal":          func(s *State) { s.Goal += "!" },
		"moved item":    func(s *State) { s.Done = []string{s.Done[1], s.Done[0]} },
		"item to other": func(s *State) { s.Pending, s.NextSteps = s.NextSteps, s.Pending },
		"rationale":     func(s *State) { s.Decisions = append([]Decision{{Decision: "x", Rationale: "y"}}, s.Decisions[1:]...) },
		"exit code": func(s *State) {
			s.Verification = []Verification{{Command: "go vet ./workspace/", ExitCode: 1, Outcome: "passed"}}
		},
		"split text": func(s *State) { s.Notes = []string{"inotify limits here:", "192,530 watches, 128 instances"} },
	}
	for name, edit := range edits {
		s := base
		s.Done = append([]string(nil), base.Done...)
		edit(&s)
		if Checksum(s) == sum {
			t.Errorf("%s: checksum unchanged", name)
		}
	}
}

// TestRenderModelText_RM1: the model's view has the same headings in order,
// no front matter and no empty sections, and is deterministic.
func TestRenderModelText_RM1(t *testing.T) {
	st := goldenDocs()["degraded-minimal"].State
	got := RenderModelText(st)
	want := "## Files read\n- `main.go`\n\n## Files modified\n- `main.go`\n- `main_test.go`\n\n" +
		"## Verification\n- `go build ./...` — passed (exit 0)\n\n## User messages\n- continue\n"
	if got != want {
		t.Errorf("RenderModelText =\n%s\nwant\n%s", got, want)
	}
	if RenderModelText(State{}) != "" {
		t.Error("empty state renders text")
	}
	full := goldenDocs()["auto-threshold"].State
	text := RenderModelText(full)
	if strings.Contains(text, "checksum") || strings.HasPrefix(text, "---") {
		t.Error("model text carries front matter")
	}
	last := -1
	for _, s := range sections {
		i := strings.Index(text, "## "+s.heading+"\n")
		if i < 0 || i < last {
			t.Errorf("heading %q missing or out of order", s.heading)
		}
		last = i
	}
	if RenderModelText(full) != text {
		t.Error("not deterministic")
	}
}

// TestVerificationLineShowsOnlyTheChecksOwnExit_RC5: a Verification line
// shows the exit status only when it is the check's own and agrees with the
// outcome; a detail says whose status it was or the step that failed; each
// line reads back as written.
func TestVerificationLineShowsOnlyTheChecksOwnExit_RC5(t *testing.T) {
	cases := []struct {
		v    Verification
		line string
	}{
		{Verification{Command: "go test ./...", ExitCode: 0, Outcome: "passed"}, "- `go test ./...` — passed (exit 0)"},
		{Verification{Command: "go test ./...", ExitCode: 2, Outcome: "failed"}, "- `go test ./...` — failed (exit 2)"},
		{Verification{Command: "npm run check", ExitCode: -1, Outcome: "inconclusive", Detail: "the exit status was `tail`'s"},
			"- `npm run check` — inconclusive: the exit status was `tail`'s"},
		{Verification{Command: "npm run build", ExitCode: -1, Outcome: "failed", Detail: "its output shows a failure; the exit status was `tail`'s"},
			"- `npm run build` — failed: its output shows a failure; the exit status was `tail`'s"},
		{Verification{Command: "npm run publish", ExitCode: 1, Outcome: "failed", Detail: "in its `npm run build` step"},
			"- `npm run publish` — failed (exit 1) in its `npm run build` step"},
		{Verification{Command: "npm test", ExitCode: -1, Outcome: "interrupted"}, "- `npm test` — interrupted"},
		// Capsules written before: an exit code the check did not return
		// is not shown.
		{Verification{Command: "npm run check", ExitCode: 0, Outcome: "inconclusive"}, "- `npm run check` — inconclusive"},
		{Verification{Command: "npm run build", ExitCode: 0, Outcome: "failed"}, "- `npm run build` — failed"},
		{Verification{Command: "npm test", ExitCode: -1, Outcome: "interrupted"}, "- `npm test` — interrupted"},
	}
	for _, c := range cases {
		doc := Document{Meta: Meta{CheckpointID: "ck_1", Title: "t"}, State: State{Verification: []Verification{c.v}}}
		md := string(Render(doc))
		if !strings.Contains(md, "\n"+c.line+"\n") {
			t.Errorf("%+v renders\n%s\nwant the line %q", c.v, md, c.line)
			continue
		}
		got, _, err := Parse([]byte(md))
		if err != nil {
			t.Fatalf("%q: %v", c.line, err)
		}
		if want := Normalize(doc).State.Verification; !reflect.DeepEqual(got.State.Verification, want) {
			t.Errorf("%q reads back as %+v, want %+v", c.line, got.State.Verification, want)
		}
	}
}
