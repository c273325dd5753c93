package importer

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/compaction/tokens"
	"github.com/soba-agent/soba-lsp/session"
)

// The opencode fixtures hold one session twice: as `opencode export` prints
// it and as opencode's storage tree (testdata/imports/README.md), damaged
// alike: one part and the last message cannot be read.
const (
	ocExportFixture  = "opencode-export.json"
	ocStorageFixture = "opencode-storage/session/9f3c1e0a7b2d4c6e8f0a1b3c5d7e9f2a4b6c8d0e/ses_5d0cdf57fffe5FKDYRGn3Yv39L.json"
	ocDamagedPart    = "prt_a2f33e4c3001fzdT2cbRIWbWmG"
	ocDamagedMessage = "msg_a2f342d60001vTFHyECCM0oGFO"
)

func fixturePath(name string) string { return filepath.Join("..", "testdata", "imports", name) }

// ocSourceCounts is the export read independently of the converter.
type ocSourceCounts struct {
	users, calls int
	doc          map[string]any
	// tools are the readable tool parts in order: name, input, state.
	tools []map[string]any
}

func readOcExport(t *testing.T, data []byte) ocSourceCounts {
	t.Helper()
	var src ocSourceCounts
	if err := json.Unmarshal(data, &src.doc); err != nil {
		t.Fatal(err)
	}
	for _, m := range src.doc["messages"].([]any) {
		m := m.(map[string]any)
		info := m["info"].(map[string]any)
		parts := m["parts"].([]any)
		switch info["role"] {
		case "user":
			compaction := slices.ContainsFunc(parts, func(p any) bool { return p.(map[string]any)["type"] == "compaction" })
			if !compaction {
				src.users++
			}
		case "assistant":
			for _, p := range parts {
				if p := p.(map[string]any); p["type"] == "tool" {
					src.calls++
					src.tools = append(src.tools, p)
				}
			}
		}
	}
	return src
}

func TestDetectOpencode(t *testing.T) {
	for _, name := range []string{ocExportFixture, ocStorageFixture} {
		if f, err := Detect(fixture(t, name)); err != nil || f != FormatOpencode {
			t.Errorf("%s: detected %q, %v", name, f, err)
		}
	}
	// A storage session file alone holds no messages: Convert says where
	// they are; ConvertFile reads them.
	if _, err := Convert(fixture(t, ocStorageFixture), Options{}); err == nil || !strings.Contains(err.Error(), "import it by its path") {
		t.Errorf("Convert of a storage session file: %v", err)
	}
	for _, other := range []string{"pi-v3.jsonl", "claude-code.jsonl", "codex-rollout.jsonl"} {
		if k := opencodeKind(fixture(t, other)); k != ocNone {
			t.Errorf("%s looks like opencode (%d)", other, k)
		}
	}
	if _, err := Detect([]byte(`{"info":{"title":"x"},"other":[]}`)); err == nil || !strings.Contains(err.Error(), "opencode") {
		t.Errorf("an object that is no export: %v", err)
	}
}

// TestImportOpencodeExport_RC2 imports the export: one entry per model
// response (a message's steps), each followed by the results its tool parts
// hold; counts as in the source; tools renamed to SOBA's; the damaged part
// and message reported with their lines and skipped.
func TestImportOpencodeExport_RC2(t *testing.T) {
	data := fixture(t, ocExportFixture)
	src := readOcExport(t, data)
	c := convertFixture(t, ocExportFixture)
	if c.Format != FormatOpencode || c.SourceID != "ses_5d0cdf57fffe5FKDYRGn3Yv39L" || c.Cwd != "/home/dev/proj" || c.Title != "Fix the failing config tests" {
		t.Errorf("format %q source %q cwd %q title %q", c.Format, c.SourceID, c.Cwd, c.Title)
	}
	lines := strings.Split(string(data), "\n")
	if len(c.Problems) != 2 {
		t.Fatalf("problems %v, want the damaged part and message", c.Problems)
	}
	for i, want := range []struct{ id, msg string }{{ocDamagedPart, "not a part"}, {ocDamagedMessage, "has no role"}} {
		p := c.Problems[i]
		// The line is where the damaged object starts: its "{", its id next.
		if p.File != "" || p.Line < 1 || strings.TrimSpace(lines[p.Line-1]) != "{" || !strings.Contains(lines[p.Line]+lines[p.Line+1], want.id) || !strings.Contains(p.Message, want.msg) {
			t.Errorf("problem %d: %v, want %q at the line where %s starts", i, p, want.msg, want.id)
		}
	}
	if c.Stats.UserMessages != src.users || c.count(session.TypeUser) != src.users || src.users != 3 {
		t.Errorf("user messages: stats %d, entries %d, source %d", c.Stats.UserMessages, c.count(session.TypeUser), src.users)
	}
	if c.Stats.ToolCalls != src.calls || c.Stats.ToolResults != src.calls || len(c.calls) != src.calls || src.calls != 11 {
		t.Errorf("tool calls: stats %d / %d results, entries %d, source %d", c.Stats.ToolCalls, c.Stats.ToolResults, len(c.calls), src.calls)
	}
	// todowrite, patch and grep with `include` stay as they were.
	if c.Stats.MappedCalls != 8 || c.Stats.Capsules != 1 || c.Stats.Skipped["compaction request"] != 1 || c.Stats.Skipped["part of a skipped message"] != 1 {
		t.Errorf("stats %+v", c.Stats)
	}
	for _, e := range c.Entries {
		if e.Tokens == 0 && modelEntry(e.Type) {
			t.Errorf("entry %s (%s) has no token estimate", e.ID, e.Type)
		}
	}
	// Every call's result follows its response; each response is one step.
	for i, e := range c.Entries {
		if e.ToolResult != nil {
			j := i - 1
			for c.Entries[j].Type == session.TypeToolResult {
				j--
			}
			a := c.Entries[j].Assistant
			if a == nil || !slices.ContainsFunc(a.ToolCalls, func(tc session.ToolCall) bool { return tc.ID == e.ToolResult.ToolCallID }) {
				t.Errorf("result %s does not follow the response that called it", e.ToolResult.ToolCallID)
			}
		}
	}
	first := c.Entries[1].Assistant
	if first == nil || first.Text != "I'll run the tests and read the failing test." || len(first.ToolCalls) != 2 ||
		first.Provider != "anthropic" || first.Model != "claude-sonnet-4-5" || first.StopReason != "tool-calls" {
		t.Fatalf("first step %+v", first)
	}
	if u := first.Usage; u == nil || u.InputTokens != 1200+9000+2100 || u.OutputTokens != 95 || u.CachedTokens != 9000 {
		t.Errorf("the first step's usage (its step-finish tokens): %+v", u)
	}
	if u := c.Entries[0].User; u == nil || !strings.HasPrefix(u.Text, "The config tests fail.") || !strings.Contains(u.Text, "00001| package config") {
		t.Errorf("first prompt with the mentioned file's synthetic text: %+v", u)
	}
	// That text is context, not the user's words (R-C8): the capsule's goal
	// and constraints come from the typed request only.
	if st, err := compaction.BuildDeterministic(compaction.Entries(c.Entries), 0, len(c.Entries), nil, compaction.Extras{}); err != nil ||
		strings.Contains(st.Goal, "package config") || !strings.HasPrefix(st.Goal, "The config tests fail.") {
		t.Errorf("goal %q (%v)", st.Goal, err)
	}
	for id, want := range map[string]string{"toolu_01Bash1": "bash", "toolu_02Read1": "read_file", "toolu_03Edit1": "edit_file", "toolu_04Edit2": "edit_file",
		"toolu_06Glob1": "list_files", "toolu_07Todo1": "todowrite", "toolu_08Write1": "write_file", "toolu_09Patch1": "patch", "toolu_10Grep1": "grep"} {
		if c.calls[id].Name != want || c.result[id].ToolName != want {
			t.Errorf("%s: call %s result %s, want %s", id, c.calls[id].Name, c.result[id].ToolName, want)
		}
	}
	if a := c.args(t, "toolu_01Bash1"); len(a) != 1 || a["command"] != "go test ./..." {
		t.Errorf("bash arguments %v (the description is a label only)", a)
	}
	if a := c.args(t, "toolu_03Edit1"); a["path"] != "config.go" || a["old_text"] != "\tport := raw.Port" || !strings.HasPrefix(a["new_text"].(string), "\tport := raw.Port\n\tif port == 0") {
		t.Errorf("edit_file arguments %v", a)
	}
	if a := c.args(t, "toolu_06Glob1"); a["pattern"] != "**/*_test.go" || a["path"] != "." {
		t.Errorf("glob → list_files arguments %v", a)
	}
	if a := c.args(t, "toolu_10Grep1"); a["include"] != "*.go" || a["path"] != "/home/dev/proj" {
		t.Errorf("grep with include kept verbatim: %v", a)
	}
	if r := c.result["toolu_01Bash1"]; r.OK || r.Artifacts == nil || r.Artifacts.Command != "go test ./..." || *r.Artifacts.ExitCode != 1 {
		t.Errorf("failing bash (metadata.exit 1): %+v", r)
	}
	if r := c.result["toolu_05Bash2"]; !r.OK || *r.Artifacts.ExitCode != 0 {
		t.Errorf("passing bash: %+v", r)
	}
	if r := c.result["toolu_04Edit2"]; r.OK || r.Artifacts != nil || r.Content != "Error: oldString not found in content" {
		t.Errorf("edit in the error state: %+v", r)
	}
	if r := c.result["toolu_02Read1"]; r.Artifacts == nil || !slices.Equal(r.Artifacts.FilesRead, []string{"config_test.go"}) {
		t.Errorf("read artifacts %+v", r.Artifacts)
	}
	if r := c.result["toolu_09Patch1"]; r.Artifacts == nil || !slices.Equal(r.Artifacts.FilesModified, []string{"config_test.go"}) {
		t.Errorf("patch artifacts %+v", r.Artifacts)
	}
	// The compaction: asked for by the user (auto: false), the summary's
	// headings read as the capsule's, everything before it replaced.
	var cap *session.Capsule
	for _, e := range c.Entries {
		if e.Capsule != nil {
			cap = e.Capsule
		}
	}
	if cap == nil || cap.Trigger != compaction.TriggerUser || cap.FirstKeptEntryID != "" || cap.TokensBefore != 210+13100+25 {
		t.Fatalf("capsule %+v", cap)
	}
	st := cap.State
	if !strings.HasPrefix(st.Goal, "Fix the failing config tests without changing the public API") || !slices.Contains(st.NextSteps, "Run the whole suite once more.") {
		t.Errorf("capsule narrative not from opencode's summary: %+v", st)
	}
	if !slices.Equal(st.FilesModified, []string{"config.go", "config_empty_test.go", "config_test.go"}) || !slices.Equal(st.FilesRead, []string{"config_test.go"}) {
		t.Errorf("capsule artifacts: read %v modified %v", st.FilesRead, st.FilesModified)
	}
	if len(st.Verification) != 1 || st.Verification[0].Command != "go test ./..." || st.Verification[0].Outcome != compaction.OutcomePassed {
		t.Errorf("capsule verification %+v (the last run passed)", st.Verification)
	}
	last := c.Entries[len(c.Entries)-1]
	if c.Leaf != last.ID || last.Assistant == nil || last.Assistant.Text != "All tests pass." {
		t.Errorf("leaf %s, last entry %+v", c.Leaf, last)
	}
	// The damaged step-finish took that step's usage with it; the message's
	// own tokens are those of its last step, which keeps them.
	if u := c.Entries[len(c.Entries)-3].Assistant.Usage; u != nil {
		t.Errorf("the step whose step-finish is damaged has usage %+v", u)
	}
	if u := last.Assistant.Usage; u == nil || u.InputTokens != 2490 {
		t.Errorf("last step usage %+v", u)
	}
}

// TestImportOpencodeStorage_RT1 reads the same session from opencode's
// storage tree: the same entries as from its export, the damaged files
// named by their paths.
func TestImportOpencodeStorage_RT1(t *testing.T) {
	exp := convertFixture(t, ocExportFixture)
	res, err := ConvertFile(fixturePath(ocStorageFixture), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Format != FormatOpencode || res.SourceID != exp.SourceID || res.Cwd != exp.Cwd || res.Title != exp.Title {
		t.Errorf("format %q source %q cwd %q title %q", res.Format, res.SourceID, res.Cwd, res.Title)
	}
	wantFiles := []string{
		filepath.Join("part", "msg_a2f33e328001ucnJUyYt6UCcCy", ocDamagedPart+".json"),
		filepath.Join("message", "ses_5d0cdf57fffe5FKDYRGn3Yv39L", ocDamagedMessage+".json"),
	}
	if len(res.Problems) != len(wantFiles) {
		t.Fatalf("problems %v", res.Problems)
	}
	for i, p := range res.Problems {
		if !strings.HasSuffix(p.File, wantFiles[i]) || p.Line != 0 || !strings.HasPrefix(p.String(), p.File+": not a ") {
			t.Errorf("problem %d: %v, want one naming %s", i, p, wantFiles[i])
		}
	}
	// 1 session, 9 messages and 46 parts.
	if res.Stats.Files != 56 || res.Stats.Lines != 0 {
		t.Errorf("files %d lines %d", res.Stats.Files, res.Stats.Lines)
	}
	es, rs := exp.Stats, res.Stats
	es.Lines, es.Files, rs.Lines, rs.Files = 0, 0, 0, 0
	if !equalStats(es, rs) {
		t.Errorf("stats from storage %+v, from the export %+v", rs, es)
	}
	if a, b := normalized(t, exp.Entries), normalized(t, res.Entries); a != b {
		t.Errorf("the storage tree and the export convert differently:\n%s\n---\n%s", b, a)
	}
	// Written through the store, it opens clean.
	out := filepath.Join(t.TempDir(), "s_opencode.jsonl")
	if err := Write(res, out, session.SessionHeader{ImportedFrom: "opencode"}, session.Options{}); err != nil {
		t.Fatal(err)
	}
	s, rep, err := session.Open(out, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !rep.Clean() || s.Leaf() != res.Leaf {
		t.Errorf("%v, leaf %s want %s", rep, s.Leaf(), res.Leaf)
	}
	if _, err := ConvertOpencodeStorage(filepath.Join(t.TempDir(), "ses_x.json"), Options{}); err == nil {
		t.Error("a missing session file converted")
	}
	elsewhere := filepath.Join(t.TempDir(), "ses_5d0cdf57fffe5FKDYRGn3Yv39L.json")
	os.WriteFile(elsewhere, fixture(t, ocStorageFixture), 0o644)
	if _, err := ConvertFile(elsewhere, Options{}); err == nil || !strings.Contains(err.Error(), "storage/session/<projectID>/<sessionID>.json") {
		t.Errorf("a session file outside a storage tree: %v", err)
	}
}

func equalStats(a, b Stats) bool { return reflect.DeepEqual(a, b) }

// normalized renders entries without their fresh ids and checkpoint ids.
func normalized(t *testing.T, es []session.Entry) string {
	t.Helper()
	var sb strings.Builder
	pos := map[string]int{}
	for i, e := range es {
		pos[e.ID] = i
		parent := -1
		if p := e.Parent(); p != "" {
			parent = pos[p]
		}
		e.ID, e.ParentID = "", nil
		if e.Capsule != nil {
			c := *e.Capsule
			c.CheckpointID, c.SourceFrom, c.SourceTo, c.FirstKeptEntryID = "", "", "", ""
			e.Capsule = &c
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		sb.WriteString(strconv.Itoa(parent) + " " + string(b) + "\n")
	}
	return sb.String()
}

// ocEdit decodes the export fixture, lets edit change it, and returns it
// encoded again (compact: one line, as an export piped through jq -c).
func ocEdit(t *testing.T, edit func(doc map[string]any, msgs []map[string]any)) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(fixture(t, ocExportFixture), &doc); err != nil {
		t.Fatal(err)
	}
	var msgs []map[string]any
	for _, m := range doc["messages"].([]any) {
		msgs = append(msgs, m.(map[string]any))
	}
	edit(doc, msgs)
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func ocID(m map[string]any) string { return m["info"].(map[string]any)["id"].(string) }

func ocParts(m map[string]any) []any { return m["parts"].([]any) }

// TestImportOpencodeCompactionKeepsTail_RC3: a compaction that kept a tail
// (tail_start_id) keeps it in the capsule; an automatic one after a context
// overflow is a context_overflow capsule.
func TestImportOpencodeCompactionKeepsTail_RC3(t *testing.T) {
	data := ocEdit(t, func(_ map[string]any, msgs []map[string]any) {
		req := ocParts(msgs[4])[0].(map[string]any)
		req["auto"], req["overflow"], req["tail_start_id"] = true, true, ocID(msgs[2])
	})
	res, err := Convert(data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var kept string
	var cap *session.Capsule
	for _, e := range res.Entries {
		if e.User != nil && e.User.Text == "Also add a test for an empty config file." {
			kept = e.ID
		}
		if e.Capsule != nil {
			cap = e.Capsule
		}
	}
	if cap == nil || cap.FirstKeptEntryID != kept || kept == "" || cap.Trigger != compaction.TriggerContextOverflow {
		t.Fatalf("capsule %+v, want it to keep from %s", cap, kept)
	}
	// What it replaced is the first turn only: its file, not the second's.
	if !slices.Equal(cap.State.FilesModified, []string{"config.go"}) {
		t.Errorf("files modified before the kept tail: %v", cap.State.FilesModified)
	}
}

// TestImportOpencodeRevert: what a revert hid (the session's revert
// {messageID, partID}) is left out, as opencode deletes it when the session
// continues.
func TestImportOpencodeRevert(t *testing.T) {
	for _, tc := range []struct {
		name          string
		part          bool
		wantLast      string
		messages      int
		revertedParts int
	}{
		// msg7 and after (msg8, msg9) are hidden
		{"from a message", false, "Imported opencode compaction", 3, 0},
		// msg8's second step and msg9
		{"from a part", true, "toolu_11Bash3", 1, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := ocEdit(t, func(doc map[string]any, msgs []map[string]any) {
				rev := map[string]any{"messageID": ocID(msgs[6]), "snapshot": "abc"}
				if tc.part {
					// msg8 from its second step-start on
					rev["messageID"] = ocID(msgs[7])
					rev["partID"] = ocParts(msgs[7])[3].(map[string]any)["id"]
				}
				doc["info"].(map[string]any)["revert"] = rev
			})
			res, err := Convert(data, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Stats.Skipped["reverted message"] != tc.messages {
				t.Errorf("skipped %v", res.Stats.Skipped)
			}
			last := res.Entries[len(res.Entries)-1]
			switch {
			case last.Capsule != nil:
				if last.Capsule.Title != tc.wantLast {
					t.Errorf("last entry %+v", last.Capsule)
				}
			case last.ToolResult != nil:
				if last.ToolResult.ToolCallID != tc.wantLast || res.Stats.Skipped["reverted part"] != tc.revertedParts {
					t.Errorf("last entry %+v, skipped %v", last.ToolResult, res.Stats.Skipped)
				}
			default:
				t.Errorf("last entry %+v", last)
			}
		})
	}
}

// TestImportOpencodeTruncatedExport: an export cut short (an interrupted
// redirect) keeps the messages before the cut and names the line where the
// damaged one starts; the "Exporting session:" line of a 2>&1 redirect is
// skipped with a note.
func TestImportOpencodeTruncatedExport(t *testing.T) {
	data := fixture(t, ocExportFixture)
	at := bytes.Index(data, []byte("Run the whole suite once more.\"")) // inside msg7
	cut := append([]byte("Exporting session: ses_5d0cdf57fffe5FKDYRGn3Yv39L\n"), data[:at]...)
	res, err := Convert(cut, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 2 || res.Problems[0].Line != 1 || !strings.Contains(res.Problems[0].Message, "text before the JSON document") {
		t.Fatalf("problems %v", res.Problems)
	}
	p := res.Problems[1]
	lines := strings.Split(string(cut), "\n")
	if !strings.Contains(p.Message, "message 7 is not JSON") || p.Line < 2 || strings.TrimSpace(lines[p.Line-1]) != "{" || !strings.Contains(lines[p.Line], `"info"`) {
		t.Errorf("truncation problem %v (line %q)", p, lines[p.Line-1])
	}
	if res.Stats.UserMessages != 2 || res.Stats.Capsules != 1 || res.Entries[len(res.Entries)-1].Capsule == nil {
		t.Errorf("kept %+v", res.Stats)
	}
}

// TestOpencodeToolOutcomes: what a tool state says about the call, and the
// exit code of a bash command as the engine records it.
func TestOpencodeToolOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		state   string
		shell   bool
		ok      bool
		exit    *int
		content string
	}{
		{"bash exit 2", `{"status":"completed","output":"x","metadata":{"exit":2}}`, true, false, intPtr(2), "x"},
		{"bash killed (exit null)", `{"status":"completed","output":"x\n\n<bash_metadata>\nbash tool terminated command after exceeding timeout 120000 ms\n</bash_metadata>","metadata":{"exit":null}}`, true, false, nil, ""},
		{"bash before exit was recorded", `{"status":"completed","output":"ok","metadata":{"stdout":"ok"}}`, true, true, intPtr(0), "ok"},
		{"bash aborted", `{"status":"error","error":"Tool execution aborted","metadata":{"interrupted":true,"output":"partial\n"}}`, true, false, nil, "partial\n\nTool execution aborted"},
		{"bash rejected", `{"status":"error","error":"The user rejected permission to use this specific tool call."}`, true, false, nil, ""},
		{"still running", `{"status":"running","input":{"command":"sleep 100"}}`, true, false, nil, ocInterrupted},
		{"pending read", `{"status":"pending","input":{}}`, false, false, nil, ocInterrupted},
		{"webfetch", `{"status":"completed","output":"page","metadata":{"exit":3}}`, false, true, nil, "page"},
	} {
		var st ocToolState
		if err := json.Unmarshal([]byte(tc.state), &st); err != nil {
			t.Fatal(err)
		}
		ok, content, exit := ocOutcome(&st, tc.shell)
		if ok != tc.ok || (exit == nil) != (tc.exit == nil) || (exit != nil && *exit != *tc.exit) || (tc.content != "" && content != tc.content) {
			t.Errorf("%s: ok %v exit %v content %q", tc.name, ok, exit, content)
		}
	}
}

// TestImportOpencodeDeterministicCapsule_RC1_RC2 compacts the imported
// session with the deterministic capsule, as `compact --dry-run` does: it
// lists every file the session modified and every verification command
// with its last outcome, counted from the source.
func TestImportOpencodeDeterministicCapsule_RC1_RC2(t *testing.T) {
	src := readOcExport(t, fixture(t, ocExportFixture))
	res, err := Convert(fixture(t, ocExportFixture), Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := map[string]bool{}
	lastExit := map[string]float64{}
	for _, p := range src.tools {
		st, _ := p["state"].(map[string]any)
		if st == nil || st["status"] != "completed" {
			continue
		}
		in := st["input"].(map[string]any)
		switch p["tool"] {
		case "edit", "write":
			wantFiles[strings.TrimPrefix(in["filePath"].(string), "/home/dev/proj/")] = true
		case "patch":
			for _, f := range patchFiles(in["patchText"].(string)) {
				wantFiles[strings.TrimPrefix(f, "/home/dev/proj/")] = true
			}
		case "bash":
			lastExit[in["command"].(string)] = st["metadata"].(map[string]any)["exit"].(float64)
		}
	}
	b := &builder{res: res, index: map[string]int{}}
	for i, e := range res.Entries {
		b.index[e.ID] = i
	}
	path := b.pathTo(res.Leaf)
	cfg := compaction.DefaultConfig()
	cfg.KeepRecentTokens, cfg.MinReclaimableTokens, cfg.MinSavingsRatio = 10, 1, 0
	counter := tokens.Default()
	p, err := compaction.MakePlan(path, counter, compaction.PlanRequest{OperationID: "op", CheckpointID: "ck_test",
		Trigger: compaction.TriggerUser, Config: cfg, ExpectedLeaf: res.Leaf})
	if err != nil {
		t.Fatal(err)
	}
	cp, err := compaction.BuildCapsule(path, counter, p, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	st := cp.Entry.State
	if len(wantFiles) != 3 || len(lastExit) != 1 {
		t.Fatalf("the oracle found %v and %v: the fixture changed", wantFiles, lastExit)
	}
	for f := range wantFiles {
		if !slices.Contains(st.FilesModified, f) {
			t.Errorf("capsule does not list modified file %s: %v", f, st.FilesModified)
		}
	}
	for cmd, exit := range lastExit {
		want := compaction.OutcomePassed
		if exit != 0 {
			want = compaction.OutcomeFailedCmd
		}
		i := slices.IndexFunc(st.Verification, func(v capsule.Verification) bool { return v.Command == cmd })
		if i < 0 || st.Verification[i].Outcome != want {
			t.Errorf("verification of %q: %+v, want %s", cmd, st.Verification, want)
		}
	}
}
