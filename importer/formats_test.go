package importer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/session"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "imports", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// converted is a fixture's conversion with lookups for the tests.
type converted struct {
	*Result
	byID   map[string]*session.Entry
	calls  map[string]session.ToolCall
	result map[string]*session.ToolResult
}

func convertFixture(t *testing.T, name string) converted {
	t.Helper()
	res, err := Convert(fixture(t, name), Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := converted{Result: res, byID: map[string]*session.Entry{}, calls: map[string]session.ToolCall{}, result: map[string]*session.ToolResult{}}
	for i := range res.Entries {
		e := &res.Entries[i]
		c.byID[e.ID] = e
		if e.Assistant != nil {
			for _, tc := range e.Assistant.ToolCalls {
				c.calls[tc.ID] = tc
			}
		}
		if e.ToolResult != nil {
			c.result[e.ToolResult.ToolCallID] = e.ToolResult
		}
	}
	return c
}

func (c converted) args(t *testing.T, id string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(c.calls[id].Arguments, &m); err != nil {
		t.Fatalf("call %s: %v", id, err)
	}
	return m
}

func (c converted) count(typ string) int {
	n := 0
	for _, e := range c.Entries {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func TestDetectFormat(t *testing.T) {
	for _, tc := range []struct {
		file string
		want Format
	}{
		{"pi-v3.jsonl", FormatPi},
		{"claude-code.jsonl", FormatClaude},
		{"codex-rollout.jsonl", FormatCodex},
		{"opencode-export.json", FormatOpencode},
	} {
		got, err := Detect(fixture(t, tc.file))
		if err != nil || got != tc.want {
			t.Errorf("%s: detected %q, %v; want %q", tc.file, got, err, tc.want)
		}
	}
	if _, err := Detect([]byte("{\"hello\":1}\nnot json\n")); err == nil || !strings.Contains(err.Error(), "none of pi") {
		t.Errorf("unknown content: %v", err)
	}
}

// TestImportPiV3Tree_RT1 imports a pi v3 tree: ids and parents follow the
// source's tree (an abandoned branch stays a branch), pi's compaction becomes
// a capsule whose firstKeptEntryId is the new id of pi's first kept entry.
func TestImportPiV3Tree_RT1(t *testing.T) {
	c := convertFixture(t, "pi-v3.jsonl")
	if len(c.Problems) != 0 {
		t.Fatalf("problems: %v", c.Problems)
	}
	if c.Stats.UserMessages != 3 || c.Stats.ToolCalls != 4 || c.Stats.Capsules != 1 || c.Stats.Skipped["thinking_level_change"] != 1 {
		t.Fatalf("stats %+v", c.Stats)
	}
	userWith := func(text string) *session.Entry {
		for i := range c.Entries {
			if e := &c.Entries[i]; e.User != nil && e.User.Text == text {
				return e
			}
		}
		t.Fatalf("no user entry %q", text)
		return nil
	}
	branch := userWith("Use an environment variable instead.")
	kept := userWith("Import the flag package and try again.")
	// Both hang (through the branch summary for the second) from the failed
	// test's result: two children of one entry.
	res := c.result["call_test"]
	var resID string
	for _, e := range c.Entries {
		if e.ToolResult == res {
			resID = e.ID
		}
	}
	if branch.Parent() != resID {
		t.Errorf("the abandoned branch hangs from %s, want the test result %s", branch.Parent(), resID)
	}
	pivot := c.byID[kept.Parent()]
	if pivot == nil || pivot.Checkpoint == nil || pivot.Checkpoint.Kind != compaction.TriggerPlanPivot || pivot.Parent() != resID {
		t.Fatalf("the kept branch should hang from the branch summary (a plan_pivot checkpoint) under the result: %+v", pivot)
	}
	var cap *session.Entry
	for i := range c.Entries {
		if c.Entries[i].Capsule != nil {
			cap = &c.Entries[i]
		}
	}
	if cap.Capsule.FirstKeptEntryID != kept.ID || cap.Parent() != kept.ID {
		t.Errorf("capsule keeps from %s and hangs from %s, want %s", cap.Capsule.FirstKeptEntryID, cap.Parent(), kept.ID)
	}
	st := cap.Capsule.State
	if !strings.HasPrefix(st.Goal, "Add a --verbose flag") || !slices.Contains(st.NextSteps, "Import the flag package") {
		t.Errorf("capsule narrative not from pi's summary: %+v", st)
	}
	if !slices.Equal(st.FilesModified, []string{"main.go"}) || !slices.Equal(st.FilesRead, []string{"main.go"}) {
		t.Errorf("capsule artifacts: read %v modified %v", st.FilesRead, st.FilesModified)
	}
	if len(st.Verification) != 1 || st.Verification[0].Outcome != compaction.OutcomeFailedCmd || st.Verification[0].ExitCode != 1 {
		t.Errorf("capsule verification %+v", st.Verification)
	}
	if c.Leaf != c.Entries[len(c.Entries)-1].ID {
		t.Errorf("leaf %s is not the last entry", c.Leaf)
	}
	if a := c.args(t, "call_test"); a["timeoutMs"] != float64(60000) || a["command"] != "go test ./..." {
		t.Errorf("bash arguments %v", a)
	}
	if u := c.byID[c.Entries[1].ID].Assistant.Usage; u == nil || u.InputTokens != 1000 || u.CachedTokens != 100 {
		t.Errorf("usage %+v", u)
	}
}

// TestImportClaudeCode_RC2 imports Claude Code's project JSONL.
func TestImportClaudeCode_RC2(t *testing.T) {
	c := convertFixture(t, "claude-code.jsonl")
	if len(c.Problems) != 1 || c.Problems[0].Line != 12 || !strings.Contains(c.Problems[0].Message, "not a JSON entry") {
		t.Fatalf("problems %v, want the damaged line 12", c.Problems)
	}
	if c.SourceID != "5d1e0c2a-claude" || c.Cwd != "/home/dev/proj" || c.Title != "Fix the failing parser test" {
		t.Errorf("source %q cwd %q title %q", c.SourceID, c.Cwd, c.Title)
	}
	// u1 and u2 are the user's; x1 is on an abandoned branch, m1 is meta,
	// c1 is the compaction summary, s1 a sidechain.
	if c.Stats.UserMessages != 2 || c.count(session.TypeUser) != 2 {
		t.Errorf("%d user messages (%d entries), want 2", c.Stats.UserMessages, c.count(session.TypeUser))
	}
	if c.Stats.ToolCalls != 5 || c.Stats.ToolResults != 5 || c.Stats.MappedCalls != 5 {
		t.Errorf("stats %+v", c.Stats)
	}
	for kind, n := range map[string]int{"sidechain": 2, "off the active branch": 1, "meta": 1, "file-history-snapshot": 1, "summary (title)": 1} {
		if c.Stats.Skipped[kind] != n {
			t.Errorf("skipped %q: %d, want %d (all: %v)", kind, c.Stats.Skipped[kind], n, c.Stats.Skipped)
		}
	}
	// One response split over three entries (message.id msg_01) is one
	// assistant entry with both calls, then both results: the pairing of
	// R-M3 holds in the SOBA file.
	first := c.Entries[1]
	if first.Assistant == nil || len(first.Assistant.ToolCalls) != 2 || first.Assistant.Text != "Let me look at the parser and run the tests." {
		t.Fatalf("merged response: %+v", first.Assistant)
	}
	if first.Assistant.Usage == nil || first.Assistant.Usage.OutputTokens != 60 || first.Assistant.Usage.InputTokens != 2010 {
		t.Errorf("usage of the merged response: %+v", first.Assistant.Usage)
	}
	if c.Entries[2].ToolResult == nil || c.Entries[3].ToolResult == nil {
		t.Fatalf("the results do not follow the merged response: %v, %v", c.Entries[2].Type, c.Entries[3].Type)
	}
	for id, want := range map[string]string{"toolu_read": "read_file", "toolu_test": "bash", "toolu_edit": "edit_file", "toolu_write": "write_file"} {
		if c.calls[id].Name != want || c.result[id].ToolName != want {
			t.Errorf("%s: call %s result %s, want %s", id, c.calls[id].Name, c.result[id].ToolName, want)
		}
	}
	if a := c.args(t, "toolu_edit"); a["path"] != "parser.go" || a["old_text"] != "return len(s) - 1" || a["new_text"] != "return len(s)" {
		t.Errorf("edit_file arguments %v", a)
	}
	if a := c.args(t, "toolu_test"); len(a) != 1 || a["command"] != "go test ./..." {
		t.Errorf("bash arguments %v (the description is a label only)", a)
	}
	if r := c.result["toolu_test"]; r.OK || r.Artifacts == nil || r.Artifacts.ExitCode == nil || *r.Artifacts.ExitCode != 1 {
		t.Errorf("failed test result %+v", r)
	}
	if r := c.result["toolu_test2"]; !r.OK || r.Artifacts == nil || *r.Artifacts.ExitCode != 0 {
		t.Errorf("passing test result %+v", r)
	}
	if r := c.result["toolu_read"]; r.Artifacts == nil || !slices.Equal(r.Artifacts.FilesRead, []string{"parser.go"}) {
		t.Errorf("read artifacts %+v", r.Artifacts)
	}
	// The compaction: a capsule from the summary, trigger from
	// compactMetadata, the artifacts of everything before it, nothing kept.
	var cap *session.Capsule
	for _, e := range c.Entries {
		if e.Capsule != nil {
			cap = e.Capsule
		}
	}
	if cap == nil || cap.Trigger != compaction.TriggerUser || cap.TokensBefore != 12345 || cap.FirstKeptEntryID != "" {
		t.Fatalf("capsule %+v", cap)
	}
	if !strings.HasPrefix(cap.State.Goal, "Fix the failing parser test") || !slices.Equal(cap.State.FilesModified, []string{"parser.go"}) {
		t.Errorf("capsule state %+v", cap.State)
	}
	if len(cap.State.Verification) != 1 || cap.State.Verification[0].Outcome != compaction.OutcomePassed {
		t.Errorf("capsule verification %+v (the last run passed)", cap.State.Verification)
	}
	if last := c.Entries[len(c.Entries)-1]; c.Leaf != last.ID || last.Assistant == nil || last.Assistant.Text != "Added TestParseEmpty." {
		t.Errorf("leaf %s, last entry %+v", c.Leaf, last)
	}
}

// TestImportCodexRollout_RC2 imports a Codex rollout file.
func TestImportCodexRollout_RC2(t *testing.T) {
	c := convertFixture(t, "codex-rollout.jsonl")
	lines := []int{}
	for _, p := range c.Problems {
		lines = append(lines, p.Line)
	}
	if !slices.Equal(lines, []int{17, 18}) {
		t.Fatalf("problems %v, want the damaged line 17 and the orphan output on line 18", c.Problems)
	}
	if c.SourceID != "0199a2d7-codex" || c.Cwd != "/home/dev/proj" {
		t.Errorf("source %q cwd %q", c.SourceID, c.Cwd)
	}
	if c.Stats.UserMessages != 2 || c.Stats.ToolCalls != 4 || c.Stats.ToolResults != 4 || c.Stats.Capsules != 1 {
		t.Errorf("stats %+v", c.Stats)
	}
	// The response's text and both parallel calls are one assistant entry.
	first := c.Entries[1]
	if first.Assistant == nil || len(first.Assistant.ToolCalls) != 2 || first.Assistant.Model != "gpt-5-codex" {
		t.Fatalf("first response %+v", first.Assistant)
	}
	if u := first.Assistant.Usage; u == nil || u.InputTokens != 5000 || u.OutputTokens != 200 {
		t.Errorf("usage from token_count: %+v", u)
	}
	if a := c.args(t, "call_build"); a["command"] != "go build ./..." || a["timeoutMs"] != float64(120000) || len(a) != 2 {
		t.Errorf("shell → bash arguments %v", a)
	}
	if a := c.args(t, "call_cat"); a["command"] != "cat go.mod" {
		t.Errorf("argv → command line: %v", a)
	}
	if a := c.args(t, "call_build2"); c.calls["call_build2"].Name != "bash" || a["command"] != "go build ./..." {
		t.Errorf("exec_command → bash: %s %v", c.calls["call_build2"].Name, a)
	}
	if r := c.result["call_build"]; r.OK || *r.Artifacts.ExitCode != 1 || r.Content != "./main.go:3:2: undefined: x\n" {
		t.Errorf("failed build %+v", r)
	}
	if r := c.result["call_build2"]; !r.OK || *r.Artifacts.ExitCode != 0 {
		t.Errorf("passing build %+v", r)
	}
	if p := c.calls["call_patch"]; p.Name != "apply_patch" || !strings.Contains(string(p.Arguments), "*** Update File") {
		t.Errorf("apply_patch kept verbatim: %s %s", p.Name, p.Arguments)
	}
	if r := c.result["call_patch"]; r.Artifacts == nil || !slices.Equal(r.Artifacts.FilesModified, []string{"main.go"}) {
		t.Errorf("apply_patch artifacts %+v", r.Artifacts)
	}
	var cap *session.Capsule
	for _, e := range c.Entries {
		if e.Capsule != nil {
			cap = e.Capsule
		}
	}
	if cap == nil || !strings.HasPrefix(cap.State.Goal, "Make the build pass") || !slices.Equal(cap.State.FilesModified, []string{"main.go"}) ||
		len(cap.State.Verification) != 1 || cap.State.Verification[0].Outcome != compaction.OutcomePassed {
		t.Fatalf("capsule %+v", cap)
	}
}

// TestImportWritesVerifiableSessions_RT3 writes every fixture and resumes
// it: no bad lines, no missing parents.
func TestImportWritesVerifiableSessions_RT3(t *testing.T) {
	for _, name := range []string{"pi-v3.jsonl", "claude-code.jsonl", "codex-rollout.jsonl", "opencode-export.json"} {
		res, err := Convert(fixture(t, name), Options{})
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "s_"+strings.TrimSuffix(name, ".jsonl")+".jsonl")
		if err := Write(res, out, session.SessionHeader{ImportedFrom: name}, session.Options{}); err != nil {
			t.Fatal(err)
		}
		s, rep, err := session.Open(out, session.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Clean() || s.Leaf() != res.Leaf {
			t.Errorf("%s: %v, leaf %s want %s", name, rep, s.Leaf(), res.Leaf)
		}
		s.Close()
	}
}

// TestOneOddBlockLosesNothingElse_RT3: a content block with a field of an
// unexpected type is skipped alone; the blocks around it are imported.
func TestOneOddBlockLosesNothingElse_RT3(t *testing.T) {
	raw := json.RawMessage(`[{"type":"text","text":"hello"},{"type":"text","id":5,"text":"odd"},{"type":"text","text":"world"}]`)
	if text, blocks := piText(raw); text != "hello\nworld" || len(blocks) != 2 {
		t.Errorf("piText = %q with %d blocks, want the two good blocks", text, len(blocks))
	}
	if got, ok := decodeEach[piBlock](json.RawMessage(`{"type":"text"}`)); ok || got != nil {
		t.Errorf("an object decoded as an array: %v %v", got, ok)
	}
	if got := codexText(json.RawMessage(`[{"type":"output_text","text":"a"},{"type":7},{"type":"output_text","text":"b"}]`)); !strings.Contains(got, "a") || !strings.Contains(got, "b") {
		t.Errorf("codexText = %q, want both good parts", got)
	}
}
