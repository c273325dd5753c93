package importer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/compaction/tokens"
	"github.com/soba-agent/soba-lsp/session"
)

// The two real pi sessions of /work/shared/transcripts (see its README),
// referenced from the repository as ../shared/transcripts.
var piSessions = []struct {
	file                    string
	users, calls, compacted int // per the README
}{
	{"pi-mono__large-session.jsonl", 88, 391, 0},
	{"pi-mono__before-compaction.jsonl", 55, 454, 2},
}

func transcript(t testing.TB, name string) []byte {
	t.Helper()
	// The package is importer: the repository root is one up.
	p := filepath.Join("..", "..", "shared", "transcripts", name)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Skipf("real transcript %s is not available (%v): these tests need /work/shared/transcripts next to the repository", p, err)
	}
	return data
}

// piSource is the source counted independently of the converter.
type piSource struct {
	users, commands, calls int
	compactions            []int // line index of each compaction entry
	firstKept              []int // its firstKeptEntryIndex
	lines                  []map[string]any
	call                   map[string]piSourceCall
	cwd                    string
}

type piSourceCall struct {
	name    string
	args    map[string]any
	ok      bool
	output  string
	hasRes  bool
	ordinal int
}

func readPiSource(t *testing.T, data []byte) piSource {
	t.Helper()
	src := piSource{call: map[string]piSourceCall{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for i := 0; sc.Scan(); i++ {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("source line %d: %v", i+1, err)
		}
		src.lines = append(src.lines, l)
		switch l["type"] {
		case "session":
			src.cwd, _ = l["cwd"].(string)
		case "compaction":
			src.compactions = append(src.compactions, i)
			src.firstKept = append(src.firstKept, int(l["firstKeptEntryIndex"].(float64)))
		case "message":
			m := l["message"].(map[string]any)
			switch m["role"] {
			case "user":
				src.users++
			case "bashExecution":
				src.commands++
			case "assistant":
				for _, b := range m["content"].([]any) {
					bl := b.(map[string]any)
					if bl["type"] == "toolCall" {
						src.calls++
						src.call[bl["id"].(string)] = piSourceCall{name: bl["name"].(string), args: bl["arguments"].(map[string]any), ordinal: i}
					}
				}
			case "toolResult":
				id := m["toolCallId"].(string)
				c := src.call[id]
				c.ok, c.hasRes = !m["isError"].(bool), true
				for _, b := range m["content"].([]any) {
					if bl := b.(map[string]any); bl["type"] == "text" {
						c.output += bl["text"].(string)
					}
				}
				src.call[id] = c
			}
		}
	}
	return src
}

func TestImportPiRealSessions_CountsMatchSource_RT1(t *testing.T) {
	for _, tc := range piSessions {
		t.Run(tc.file, func(t *testing.T) {
			data := transcript(t, tc.file)
			src := readPiSource(t, data)
			if src.users != tc.users || src.calls != tc.calls || len(src.compactions) != tc.compacted {
				t.Fatalf("source counts %d users / %d calls / %d compactions, README says %d / %d / %d",
					src.users, src.calls, len(src.compactions), tc.users, tc.calls, tc.compacted)
			}
			res, err := Convert(data, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Format != FormatPi {
				t.Fatalf("detected %q, want pi", res.Format)
			}
			if len(res.Problems) != 0 {
				t.Errorf("problems on a clean file: %v", res.Problems)
			}
			users, calls, capsules := 0, 0, 0
			for _, e := range res.Entries {
				switch e.Type {
				case session.TypeUser:
					if !strings.HasPrefix(e.User.Text, "Ran `") {
						users++
					}
				case session.TypeAssistant:
					calls += len(e.Assistant.ToolCalls)
				case session.TypeCapsule:
					capsules++
				}
				if e.Tokens == 0 && modelEntry(e.Type) && !(e.Type == session.TypeAssistant && e.Assistant.Error != "") {
					t.Errorf("entry %s (%s) has no token estimate", e.ID, e.Type)
				}
			}
			if users != src.users || res.Stats.UserMessages != src.users || res.Stats.UserCommands != src.commands {
				t.Errorf("user messages: %d entries, stats %d (+%d commands); source %d (+%d)", users, res.Stats.UserMessages, res.Stats.UserCommands, src.users, src.commands)
			}
			if calls != src.calls || res.Stats.ToolCalls != src.calls {
				t.Errorf("tool calls: %d in entries, stats %d; source %d", calls, res.Stats.ToolCalls, src.calls)
			}
			if res.Stats.MappedCalls != src.calls-1 && res.Stats.MappedCalls != src.calls {
				// Every call of these sessions uses read/write/edit/bash; one edit
				// of the large session lacks newText and stays verbatim.
				t.Errorf("mapped %d of %d calls", res.Stats.MappedCalls, src.calls)
			}
			if capsules != len(src.compactions) {
				t.Errorf("%d capsules, source has %d compaction entries", capsules, len(src.compactions))
			}
		})
	}
}

// TestImportPiToolMapping_RC2 checks the renamed calls and the artifacts on
// their results: read → read_file {path}, edit → edit_file {path, old_text,
// new_text}, bash → bash {command} with the exit code pi reported.
func TestImportPiToolMapping_RC2(t *testing.T) {
	data := transcript(t, "pi-mono__before-compaction.jsonl")
	src := readPiSource(t, data)
	res, err := Convert(data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]session.ToolCall{}
	seen := map[string]bool{}
	for _, e := range res.Entries {
		if e.Assistant != nil {
			for _, c := range e.Assistant.ToolCalls {
				calls[c.ID] = c
			}
		}
		if e.ToolResult == nil {
			continue
		}
		r := e.ToolResult
		s := src.call[r.ToolCallID]
		c := calls[r.ToolCallID]
		want := map[string]string{"read": "read_file", "write": "write_file", "edit": "edit_file", "bash": "bash"}[s.name]
		if c.Name != want || r.ToolName != want {
			t.Fatalf("call %s: %s mapped to %s (result %s), want %s", r.ToolCallID, s.name, c.Name, r.ToolName, want)
		}
		var args map[string]any
		if err := json.Unmarshal(c.Arguments, &args); err != nil {
			t.Fatal(err)
		}
		rel := func(p string) string { return strings.TrimPrefix(p, src.cwd+"/") }
		switch s.name {
		case "edit":
			if args["path"] != rel(s.args["path"].(string)) || args["old_text"] != s.args["oldText"] || args["new_text"] != s.args["newText"] {
				t.Fatalf("edit %s: arguments %v from %v", c.ID, args, s.args)
			}
			if s.ok != (r.Artifacts != nil && slices.Equal(r.Artifacts.FilesModified, []string{rel(s.args["path"].(string))})) {
				t.Fatalf("edit %s ok=%v: artifacts %+v", c.ID, s.ok, r.Artifacts)
			}
		case "read":
			if args["path"] != rel(s.args["path"].(string)) {
				t.Fatalf("read %s: arguments %v", c.ID, args)
			}
		case "bash":
			if args["command"] != s.args["command"] {
				t.Fatalf("bash %s: arguments %v", c.ID, args)
			}
			if to, ok := s.args["timeout"].(float64); ok && args["timeoutMs"] != to*1000 {
				t.Fatalf("bash %s: timeout %v s became %v", c.ID, to, args["timeoutMs"])
			}
			a := r.Artifacts
			if a == nil || a.Command != commandInCwd(src.cwd, "", s.args["command"].(string)) {
				t.Fatalf("bash %s: artifacts %+v", c.ID, a)
			}
			code, interrupted := sourceExit(s)
			switch {
			case interrupted && a.ExitCode != nil:
				t.Fatalf("bash %s interrupted (%q) but exit code %d", c.ID, tail(s.output), *a.ExitCode)
			case !interrupted && (a.ExitCode == nil || *a.ExitCode != code):
				t.Fatalf("bash %s: exit code %v, source says %d (%q)", c.ID, a.ExitCode, code, tail(s.output))
			}
		}
		seen[s.name] = true
	}
	if len(seen) != 4 {
		t.Fatalf("only saw %v", seen)
	}
}

var sourceExitPattern = regexp.MustCompile(`Command exited with code (\d+)\s*$`)

// sourceExit reads a pi bash result as the test's own oracle.
func sourceExit(c piSourceCall) (code int, interrupted bool) {
	if c.ok {
		return 0, false
	}
	if m := sourceExitPattern.FindStringSubmatch(strings.TrimSpace(c.output)); m != nil {
		n := 0
		for _, d := range m[1] {
			n = n*10 + int(d-'0')
		}
		return n, false
	}
	if strings.Contains(c.output, "aborted") || strings.Contains(c.output, "timed out") {
		return 0, true
	}
	return 1, false
}

func tail(s string) string {
	if len(s) > 80 {
		return s[len(s)-80:]
	}
	return s
}

// TestImportPiCompactionBecomesCapsule_RC3 checks that each of pi's own
// compaction entries becomes a capsule whose firstKeptEntryId is the new id
// of the entry pi kept, whose narrative comes from pi's summary and whose
// artifacts are the exact ones of the history it replaced.
func TestImportPiCompactionBecomesCapsule_RC3(t *testing.T) {
	data := transcript(t, "pi-mono__before-compaction.jsonl")
	src := readPiSource(t, data)
	res, err := Convert(data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var caps []session.Entry
	byID := map[string]session.Entry{}
	for _, e := range res.Entries {
		byID[e.ID] = e
		if e.Capsule != nil {
			caps = append(caps, e)
		}
	}
	if len(caps) != 2 {
		t.Fatalf("%d capsules, want 2", len(caps))
	}
	for i, c := range caps {
		kept, ok := byID[c.Capsule.FirstKeptEntryID]
		if !ok {
			t.Fatalf("capsule %d: firstKeptEntryId %q is no entry", i, c.Capsule.FirstKeptEntryID)
		}
		srcKept := src.lines[src.firstKept[i]]["message"].(map[string]any)
		wantText := srcKept["content"].([]any)[0].(map[string]any)["text"]
		if kept.User == nil || kept.User.Text != wantText {
			t.Fatalf("capsule %d keeps from %+v, pi kept %q", i, kept, wantText)
		}
		st := c.Capsule.State
		if !strings.Contains(st.Goal, "Refactor `coding-agent`") {
			t.Errorf("capsule %d goal %q is not pi's summary goal", i, st.Goal)
		}
		if c.Capsule.TokensBefore != int(src.lines[src.compactions[i]]["tokensBefore"].(float64)) {
			t.Errorf("capsule %d tokensBefore %d", i, c.Capsule.TokensBefore)
		}
		if len(st.FilesModified) == 0 || len(st.Verification) == 0 {
			t.Errorf("capsule %d carries no artifacts: %d files modified, %d verification runs", i, len(st.FilesModified), len(st.Verification))
		}
		if c.Capsule.Quality != capsule.QualityFull || c.Capsule.Trigger != compaction.TriggerAutoThreshold {
			t.Errorf("capsule %d: quality %q trigger %q", i, c.Capsule.Quality, c.Capsule.Trigger)
		}
	}
	// The second capsule rolls the first (R-M4): nothing it held is lost.
	for _, f := range caps[0].Capsule.State.FilesModified {
		if !slices.Contains(caps[1].Capsule.State.FilesModified, f) {
			t.Errorf("second capsule dropped %s", f)
		}
	}
}

// TestImportPiDeterministicCapsule_RC1_RC2 imports each real session and
// compacts it with the deterministic capsule, as `compact --dry-run` does:
// the capsule lists every file the session modified before the cut and
// every verification command it ran there with its last outcome.
func TestImportPiDeterministicCapsule_RC1_RC2(t *testing.T) {
	for _, tc := range piSessions {
		t.Run(tc.file, func(t *testing.T) {
			data := transcript(t, tc.file)
			src := readPiSource(t, data)
			res, err := Convert(data, Options{})
			if err != nil {
				t.Fatal(err)
			}
			b := &builder{res: res, index: map[string]int{}}
			for i, e := range res.Entries {
				b.index[e.ID] = i
			}
			path := b.pathTo(res.Leaf)
			counter := tokens.Default()
			p, err := compaction.MakePlan(path, counter, compaction.PlanRequest{OperationID: "op", CheckpointID: "ck_test",
				Trigger: compaction.TriggerUser, Config: compaction.DefaultConfig(), ExpectedLeaf: res.Leaf})
			if err != nil {
				t.Fatal(err)
			}
			cp, err := compaction.BuildCapsule(path, counter, p, nil, false)
			if err != nil {
				t.Fatal(err)
			}
			st := cp.Entry.State
			before := map[string]bool{} // call ids before the cut
			for _, e := range path[:p.Cut.FirstKept] {
				if e.Assistant != nil {
					for _, c := range e.Assistant.ToolCalls {
						before[c.ID] = true
					}
				}
			}
			wantFiles := map[string]bool{}
			for id, c := range src.call {
				if !before[id] || !c.hasRes {
					continue
				}
				switch c.name {
				case "edit", "write":
					if c.ok {
						wantFiles[strings.TrimPrefix(c.args["path"].(string), src.cwd+"/")] = true
					}
				}
			}
			// Each check's runs in source order (R-C5): the capsule says
			// passed or failed only as the latest run whose exit status
			// is the check's own says, and never passed when that run is
			// followed by runs whose status was hidden and nothing else.
			ids := make([]string, 0, len(before))
			for id := range before {
				ids = append(ids, id)
			}
			slices.SortFunc(ids, func(a, b string) int { return src.call[a].ordinal - src.call[b].ordinal })
			type checkRuns struct{ own, last string }
			runs := map[string]*checkRuns{}
			var order []string
			for _, id := range ids {
				c := src.call[id]
				if c.name != "bash" || !c.hasRes {
					continue
				}
				cmd := commandInCwd(src.cwd, "", c.args["command"].(string))
				if !compaction.IsVerificationCommand(cmd) {
					continue
				}
				code, interrupted := sourceExit(c)
				outcome := "failed"
				switch {
				case interrupted:
					outcome = "interrupted"
				case code == 0:
					outcome = "passed"
				}
				check, filtered := compaction.CheckOf(cmd)
				r := runs[check]
				if r == nil {
					r = &checkRuns{}
					runs[check] = r
					order = append(order, check)
				}
				if filtered {
					outcome = "hidden"
				} else if outcome != "interrupted" {
					r.own = outcome
				}
				r.last = outcome
			}
			if len(wantFiles) == 0 || len(runs) == 0 {
				t.Fatalf("the oracle found %d files and %d checks before the cut: the test would prove nothing", len(wantFiles), len(runs))
			}
			for f := range wantFiles {
				if !slices.Contains(st.FilesModified, f) && !slices.Contains(st.FilesModified, f+compaction.DeletedSuffix) {
					t.Errorf("capsule does not list modified file %s", f)
				}
			}
			for _, check := range order {
				r := runs[check]
				i := slices.IndexFunc(st.Verification, func(v capsule.Verification) bool { return v.Command == check })
				if i < 0 {
					t.Errorf("capsule does not list check %q", check)
					continue
				}
				got := st.Verification[i].Outcome
				switch {
				case r.last == r.own && got != r.own:
					t.Errorf("check %q: %s, its latest run %s", check, got, r.own)
				case got == "passed" && r.own != "passed":
					t.Errorf("check %q: passed, but no run with its own status passed last (%+v)", check, *r)
				case got == "failed" && r.own == "passed" && r.last != "hidden":
					t.Errorf("check %q: failed, but its latest own run passed (%+v)", check, *r)
				}
			}
			if len(st.Verification) != len(runs) {
				t.Errorf("capsule lists %d verification lines, the source ran %d checks", len(st.Verification), len(runs))
			}
			t.Logf("%d files modified, %d verification commands, tokens %d → %d", len(st.FilesModified), len(st.Verification), cp.Entry.TokensBefore, cp.TokensAfter)
		})
	}
}

// TestImportPiWriteAndResume_RT4 writes an import through the store and
// resumes it: a clean file whose leaf is the last source entry.
func TestImportPiWriteAndResume_RT4(t *testing.T) {
	data := transcript(t, "pi-mono__large-session.jsonl")
	res, err := Convert(data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "sessions", "s_import.jsonl")
	if err := Write(res, out, session.SessionHeader{ImportedFrom: "pi-mono__large-session.jsonl"}, session.Options{}); err != nil {
		t.Fatal(err)
	}
	s, rep, err := session.Open(out, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !rep.Clean() || rep.Entries != len(res.Entries)+1 {
		t.Fatalf("resume: %v (want %d entries)", rep, len(res.Entries)+1)
	}
	if s.Leaf() != res.Leaf {
		t.Fatalf("leaf %s, want %s", s.Leaf(), res.Leaf)
	}
	if h, _ := s.Header(); h.ImportedFrom == "" || h.SessionID != "s_import" {
		t.Fatalf("header %+v", h)
	}
	if err := Write(res, out, session.SessionHeader{}, session.Options{}); err == nil {
		t.Fatal("a second import over the same file succeeded")
	}
}
