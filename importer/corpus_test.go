package importer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/compaction/tokens"
)

// The corpus sample (testdata/corpus, see its README): real Claude Code
// sessions from github.com/entireio/cli, each with what it really did as
// scripts/corpus/truth.py reads it from the transcript alone — code of its
// own, not this importer's. Each is imported and compacted with
// keepRecentTokens 0; the capsule and the tail the cut keeps (the last
// tool batch) must carry the files the session modified and read, and the
// capsule must say no check passed or failed against the check's last run.
// scripts/corpus/run.sh scores the whole corpus the same way through the
// CLI; docs/capsule-fidelity.md has the figures.

// corpusTruth is a *.truth.json file.
type corpusTruth struct {
	Cwd           string   `json:"cwd"`
	FilesModified []string `json:"filesModified"`
	FilesRead     []string `json:"filesRead"`
	Runs          []struct {
		Command string `json:"command"`
		Outcome string `json:"outcome"`
	} `json:"runs"`
	HasRequest bool `json:"hasRequest"`
}

// corpusCapsule is a transcript's capsule with keepRecentTokens 0 and the
// files of the tail the cut keeps; skipped when there is nothing to compact.
type corpusCapsule struct {
	res                 *Result
	state               capsule.State
	tailMod, tailRead   []string
	skipped             bool
	tokensBefore, after int
}

func compactCorpusFile(t *testing.T, path string) corpusCapsule {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Convert(data, Options{})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b := &builder{res: res, index: map[string]int{}}
	for i, e := range res.Entries {
		b.index[e.ID] = i
	}
	entries := b.pathTo(res.Leaf)
	cfg := compaction.DefaultConfig()
	cfg.KeepRecentTokens = 0
	counter := tokens.Default()
	p, err := compaction.MakePlan(entries, counter, compaction.PlanRequest{OperationID: "op", CheckpointID: "ck_corpus",
		Trigger: compaction.TriggerUser, Config: cfg, ExpectedLeaf: res.Leaf})
	if err != nil {
		return corpusCapsule{res: res, skipped: true}
	}
	cp, err := compaction.BuildCapsule(entries, counter, p, nil, false)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if ok, _ := p.Accept(cp); !ok {
		return corpusCapsule{res: res, skipped: true} // R-G8: a no-op
	}
	out := corpusCapsule{res: res, state: cp.Entry.State, tokensBefore: p.TokensBefore, after: cp.TokensAfter}
	for _, e := range entries[p.Cut.FirstKept:] {
		if r := e.ToolResult; r != nil && r.Artifacts != nil {
			out.tailMod = append(out.tailMod, r.Artifacts.FilesModified...)
			out.tailRead = append(out.tailRead, r.Artifacts.FilesRead...)
		}
	}
	return out
}

// corpusCovered: the items name path as itself, deleted later, one side of
// a rename, or inside a folded directory.
func corpusCovered(path string, items []string) bool {
	for _, it := range items {
		if it == path || it == path+compaction.DeletedSuffix || slices.Contains(strings.Split(it, compaction.RenameSep), path) {
			return true
		}
		if dir, _, ok := strings.Cut(it, "/ — "); ok && strings.HasPrefix(path, dir+"/") {
			return true
		}
	}
	return false
}

var leadingCd = regexp.MustCompile(`^cd [^&;|]+&&\s*`)

// corpusLastOutcome is the outcome of the last run of command: the command
// itself, or an `A && B` chain holding it (passed only if all passed); a
// run piped into another command says nothing sure.
func corpusLastOutcome(tr corpusTruth, command string) string {
	last := ""
	for _, r := range tr.Runs {
		c := leadingCd.ReplaceAllString(strings.TrimSpace(r.Command), "")
		switch {
		case c == command:
			last = r.Outcome
		case strings.HasPrefix(c, command+" ") && strings.Contains(c, "|") && !strings.Contains(strings.TrimPrefix(c, command), "&&"):
			last = "unknown"
		case !strings.ContainsAny(c, "|;\n") && slices.Contains(splitTrim(c, "&&"), command) && strings.Contains(c, "&&"):
			if r.Outcome == "passed" {
				last = "passed"
			} else {
				last = "unknown"
			}
		}
	}
	return last
}

func splitTrim(s, sep string) []string {
	parts := strings.Split(s, sep)
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

var (
	verificationLine = regexp.MustCompile("`([^`]+)` passed")
	wrapperStarts    = []string{"<ide_", "<system-reminder", "<command-name", "<command-message", "<local-command", "[Request interrupted", "Caveat: The messages below"}
)

// corpusScore counts one capsule's agreement with the truth.
type corpusScore struct {
	modTrue, modMissing, modListed, modFalse, readTrue, readMissing int
	problems                                                        []string
}

func scoreCorpusCapsule(tr corpusTruth, c corpusCapsule) corpusScore {
	var s corpusScore
	if c.skipped {
		return s
	}
	st := c.state
	mods := append(slices.Clone(st.FilesModified), c.tailMod...)
	for _, f := range tr.FilesModified {
		s.modTrue++
		if !corpusCovered(f, mods) {
			s.modMissing++
			s.problems = append(s.problems, "modified file missing: "+f)
		}
	}
	var shellWords strings.Builder
	for _, r := range tr.Runs {
		if r.Outcome == "passed" {
			shellWords.WriteString(r.Command + "\n")
		}
	}
	for _, it := range st.FilesModified {
		s.modListed++
		base := strings.TrimSuffix(it, compaction.DeletedSuffix)
		if slices.Contains(tr.FilesModified, it) || slices.Contains(tr.FilesModified, base) {
			continue
		}
		named := true // a shell command of the session names it
		for _, q := range strings.Split(base, compaction.RenameSep) {
			if !strings.Contains(shellWords.String(), q) && !strings.Contains(shellWords.String(), filepath.Base(q)) {
				named = false
			}
		}
		if !named {
			s.modFalse++
			s.problems = append(s.problems, "listed as modified, not modified: "+it)
		}
	}
	reads := append(slices.Clone(st.FilesRead), c.tailRead...)
	for _, f := range tr.FilesRead {
		s.readTrue++
		if !corpusCovered(f, reads) {
			s.readMissing++
			s.problems = append(s.problems, "read file missing: "+f)
		}
	}
	for _, v := range st.Verification {
		last := corpusLastOutcome(tr, v.Command)
		switch {
		case v.Outcome == compaction.OutcomePassed && last == "failed":
			s.problems = append(s.problems, "false passed: "+v.Command)
		case v.Outcome == compaction.OutcomeFailedCmd && last == "passed":
			s.problems = append(s.problems, "false failed: "+v.Command)
		}
	}
	for _, d := range st.Done {
		for _, m := range verificationLine.FindAllStringSubmatch(d, -1) {
			if corpusLastOutcome(tr, m[1]) == "failed" {
				s.problems = append(s.problems, "false passed in Done: "+d)
			}
		}
	}
	goal := strings.TrimSpace(st.Goal)
	if tr.HasRequest && (goal == "" || slices.ContainsFunc(wrapperStarts, func(w string) bool { return strings.HasPrefix(goal, w) })) {
		s.problems = append(s.problems, fmt.Sprintf("goal %q while the session has a request", goal))
	}
	return s
}

func readCorpusTruth(t *testing.T, transcript string) corpusTruth {
	t.Helper()
	raw, err := os.ReadFile(strings.TrimSuffix(transcript, ".jsonl") + ".truth.json")
	if err != nil {
		t.Fatal(err)
	}
	var tr corpusTruth
	if err := json.Unmarshal(raw, &tr); err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestCorpusSample_RC2_RC5_RC6_RC8 holds the committed sample to the
// acceptance bars: files-modified recall and precision ≥ 99.5%, files-read
// recall ≥ 99%, no false passed or failed, no empty or wrapper goal.
func TestCorpusSample_RC2_RC5_RC6_RC8(t *testing.T) {
	var files []string
	for _, dir := range []string{"entireio-cli", "rules"} {
		fs, err := filepath.Glob(filepath.Join("..", "testdata", "corpus", dir, "*.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, fs...)
	}
	if len(files) < 40 {
		t.Fatalf("the corpus sample has %d transcripts", len(files))
	}
	var total corpusScore
	skipped := 0
	for _, f := range files {
		c := compactCorpusFile(t, f)
		if c.skipped {
			skipped++
		}
		s := scoreCorpusCapsule(readCorpusTruth(t, f), c)
		for _, p := range s.problems {
			if strings.HasPrefix(p, "false") || strings.HasPrefix(p, "goal") {
				t.Errorf("%s: %s", filepath.Base(f), p)
			} else {
				t.Logf("%s: %s", filepath.Base(f), p)
			}
		}
		total.modTrue += s.modTrue
		total.modMissing += s.modMissing
		total.modListed += s.modListed
		total.modFalse += s.modFalse
		total.readTrue += s.readTrue
		total.readMissing += s.readMissing
	}
	t.Logf("%d transcripts (%d no-op compactions): files modified %d/%d recalled, %d/%d listed right; files read %d/%d recalled",
		len(files), skipped, total.modTrue-total.modMissing, total.modTrue, total.modListed-total.modFalse, total.modListed,
		total.readTrue-total.readMissing, total.readTrue)
	ratio := func(bad, all int) float64 {
		if all == 0 {
			return 1
		}
		return 1 - float64(bad)/float64(all)
	}
	if r := ratio(total.modMissing, total.modTrue); r < 0.995 {
		t.Errorf("files-modified recall %.4f < 0.995", r)
	}
	if r := ratio(total.modFalse, total.modListed); r < 0.995 {
		t.Errorf("files-modified precision %.4f < 0.995", r)
	}
	if r := ratio(total.readMissing, total.readTrue); r < 0.99 {
		t.Errorf("files-read recall %.4f < 0.99", r)
	}
}

// TestClaudeParallelCallsKeepEveryResult_RC2: one assistant message making
// two Edit calls is written as two lines sharing message.id, each result
// hanging from its own call's line and the conversation going on from the
// last; every result is kept and both edited files are in the capsule.
func TestClaudeParallelCallsKeepEveryResult_RC2(t *testing.T) {
	f := filepath.Join("..", "testdata", "corpus", "rules", "parallel-calls.jsonl")
	c := compactCorpusFile(t, f)
	if c.res.Stats.ToolResults != c.res.Stats.ToolCalls || c.res.Stats.Skipped["off the active branch"] > 0 {
		t.Errorf("%d calls, %d results, skipped %v", c.res.Stats.ToolCalls, c.res.Stats.ToolResults, c.res.Stats.Skipped)
	}
	tr := readCorpusTruth(t, f)
	if len(tr.FilesModified) < 2 {
		t.Fatalf("truth: %v", tr.FilesModified)
	}
	if s := scoreCorpusCapsule(tr, c); len(s.problems) > 0 {
		t.Errorf("%q\ncapsule files: %q", s.problems, c.state.FilesModified)
	}
}

// TestClaudeBoundaryWithAbsentParentKeepsHistory_RC2: a compact_boundary
// whose logicalParentUuid names a line not in the file, and lines whose
// parent (a progress or hook line) was pruned, continue the conversation:
// the files edited before the boundary stay in the capsule.
func TestClaudeBoundaryWithAbsentParentKeepsHistory_RC2(t *testing.T) {
	f := filepath.Join("..", "testdata", "corpus", "rules", "boundary-absent-parent.jsonl")
	c := compactCorpusFile(t, f)
	if c.res.Stats.Capsules != 1 {
		t.Errorf("capsules: %d", c.res.Stats.Capsules)
	}
	tr := readCorpusTruth(t, f)
	if len(tr.FilesModified) < 5 {
		t.Fatalf("truth: %v", tr.FilesModified)
	}
	if s := scoreCorpusCapsule(tr, c); s.modMissing > 0 || s.modFalse > 0 {
		t.Errorf("%q", s.problems)
	}
}

// TestSlashCommandIsTheRequest_RC8: a session whose first prompt is a slash
// command (its expansion a harness note) has the command as its goal.
func TestSlashCommandIsTheRequest_RC8(t *testing.T) {
	c := compactCorpusFile(t, filepath.Join("..", "testdata", "corpus", "rules", "slash-command.jsonl"))
	if c.skipped || c.state.Goal != "/github-pr-review" {
		t.Errorf("goal %q (skipped %v)", c.state.Goal, c.skipped)
	}
}

// TestUnexpandedVariablePathIsNotAFile_RC6: an edit tool's path holding an
// unexpanded variable names no file we know of.
func TestUnexpandedVariablePathIsNotAFile_RC6(t *testing.T) {
	b := newBuilder(FormatClaude, Options{})
	b.res.Cwd = "/work/repo"
	for _, p := range []string{`$tmpdir/.entire/settings.json`, `${HOME}/x.go`} {
		c := b.mapCall(claudeTools, "Write", json.RawMessage(`{"file_path":`+strconvQuote(p)+`,"content":"x"}`))
		if a := c.artifacts(true, nil); a != nil && len(a.FilesModified) > 0 {
			t.Errorf("%s: %v", p, a.FilesModified)
		}
	}
	c := b.mapCall(claudeTools, "Write", json.RawMessage(`{"file_path":"/work/repo/a.go","content":"x"}`))
	if a := c.artifacts(true, nil); a == nil || !slices.Equal(a.FilesModified, []string{"a.go"}) {
		t.Errorf("a plain path: %+v", a)
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }
