package importer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/compaction/tokens"
	"github.com/soba-agent/soba-lsp/session"
)

// The fidelity harness (R-C5, R-C6, R-C8): each real transcript in
// ../shared/transcripts has a fact file in testdata/fidelity, written by
// reading the transcript — the files it modified, each check with its true
// last outcome, the final blocker, the goal's key words, commands that are
// not checks. The transcript is imported and compacted with the
// deterministic builder, once with keepRecentTokens 0 (the capsule alone
// must carry the truth) and once with the default, and the capsule is
// scored against the facts. docs/capsule-fidelity.md shows the scores.

// facts is a testdata/fidelity/*.facts.json file.
type facts struct {
	Transcript    string   `json:"transcript"`
	About         string   `json:"about"`
	FilesModified []string `json:"filesModified"`
	// FilesModifiedByShell are files shell commands changed (renames as
	// "old → new", deletions as "path (deleted)"), R-C6.
	FilesModifiedByShell []string `json:"filesModifiedByShell"`
	ShellNote            string   `json:"shellNote"`
	Checks               []struct {
		Command string `json:"command"`
		// Last is "passed", "failed" or "unknown" (the transcript does
		// not show it).
		Last string `json:"last"`
		Why  string `json:"why"`
	} `json:"checks"`
	// FinalBlocker is a text a Blockers item must hold ("" when the
	// session ended unblocked).
	FinalBlocker string   `json:"finalBlocker"`
	GoalWords    []string `json:"goalWords"`
	// NotChecks are commands the transcript runs that are not checks: no
	// Verification line may start with them.
	NotChecks []string `json:"notChecks"`
	// FilesRead are files the session read by name (read tools, cat,
	// sed -n, head, tail, rg -n of a file): their recall is scored.
	FilesRead     []string `json:"filesRead"`
	FilesReadNote string   `json:"filesReadNote"`
	// The narrative facts, judged with keepRecentTokens 0 (the capsule
	// alone): Constraints the capsule must list exactly as written;
	// ConstraintsAbsent, BlockersAbsent, OpenAbsent substrings no item of
	// those lists may hold (OpenAbsent: In progress, Pending, Next steps
	// and Blockers); Decisions, Blockers and Open substrings some item must
	// hold; Kept and Absent substrings of the whole capsule text.
	Constraints       []string `json:"constraints"`
	ConstraintsAbsent []string `json:"constraintsAbsent"`
	Decisions         []string `json:"decisions"`
	Blockers          []string `json:"blockers"`
	BlockersAbsent    []string `json:"blockersAbsent"`
	Open              []string `json:"open"`
	OpenAbsent        []string `json:"openAbsent"`
	OpenAbsentNote    string   `json:"openAbsentNote"`
	Kept              []string `json:"kept"`
	Absent            []string `json:"absent"`
}

// narrativeFacts counts the facts fx states about the narrative.
func (fx facts) narrativeFacts() int {
	return len(fx.Constraints) + len(fx.ConstraintsAbsent) + len(fx.Decisions) + len(fx.Blockers) + len(fx.BlockersAbsent) +
		len(fx.Open) + len(fx.OpenAbsent) + len(fx.Kept) + len(fx.Absent)
}

// fidelityTranscript is a fact file's transcript: a synthetic one from
// testdata/fidelity, a real one from ../shared/transcripts.
func fidelityTranscript(t *testing.T, name string) []byte {
	if strings.HasPrefix(name, "synthetic-") {
		data, err := os.ReadFile(filepath.Join("..", "testdata", "fidelity", name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	return transcript(t, name)
}

// contextMarkers are the wrappers of R-C8: never in the goal or a work item.
var contextMarkers = []string{"<ide_", "<system-reminder", "<environment_context", "# Context from my IDE setup",
	"[Request interrupted", "<turn_aborted", "<command-name", "<local-command", "Called the Read tool with the following input",
	compaction.CodexSummaryPrefix}

// fidelityScore is one capsule's score.
type fidelityScore struct {
	name, mode                  string
	filesRecall                 string
	falsePositives              []string
	checksListed, checksTotal   int
	checksRight                 int // the capsule's outcome is the true one
	falsePassed, falseFailed    []string
	notChecksCounted            []string
	finalBlocker                string // "yes", "no" or "—"
	wrappers                    []string
	goalWords, goalWordsTotal   int
	capsuleTokens, sourceTokens int
	missingFiles                []string
	keptTailChecks              map[string]bool
	readRecall                  string
	missingRead                 []string
	narrativeRight, narrative   int
	narrativeWrong              []string
}

func TestCapsuleFidelity_RC5_RC6_RC8(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "fidelity", "*.facts.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fact files in testdata/fidelity (%v)", err)
	}
	var rows []fidelityScore
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var fx facts
		if err := json.Unmarshal(raw, &fx); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".facts.json")
		t.Run(name, func(t *testing.T) {
			data := fidelityTranscript(t, fx.Transcript)
			res, err := Convert(data, Options{})
			if err != nil {
				t.Fatal(err)
			}
			b := &builder{res: res, index: map[string]int{}}
			for i, e := range res.Entries {
				b.index[e.ID] = i
			}
			path := b.pathTo(res.Leaf)
			for _, mode := range []string{"keepRecentTokens 0", "default"} {
				cfg := compaction.DefaultConfig()
				if mode != "default" {
					cfg.KeepRecentTokens = 0
				}
				counter := tokens.Default()
				p, err := compaction.MakePlan(path, counter, compaction.PlanRequest{OperationID: "op", CheckpointID: "ck_fidelity",
					Trigger: compaction.TriggerUser, Config: cfg, ExpectedLeaf: res.Leaf})
				if err != nil && mode == "default" {
					// The whole session fits the keep window: nothing to score.
					rows = append(rows, fidelityScore{name: name, mode: mode + " (nothing to compact)", finalBlocker: "—"})
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				cp, err := compaction.BuildCapsule(path, counter, p, nil, false)
				if err != nil {
					t.Fatal(err)
				}
				// Checks run in the kept tail are judged there, not in the
				// capsule: their outcome at the cut may differ from the end.
				tail := map[string]bool{}
				for _, e := range path[p.Cut.FirstKept:] {
					if r := e.ToolResult; r != nil && r.Artifacts != nil && r.Artifacts.Command != "" {
						for _, c := range fx.Checks {
							if sameCheck(c.Command, r.Artifacts.Command, res.Cwd) {
								tail[c.Command] = true
							}
						}
					}
				}
				// Receipt lines that cannot be misread (R-C5): a line shows
				// an exit status only when a run of that command returned
				// it, and Done holds no request merely answered.
				for _, v := range cp.Entry.State.Verification {
					if v.ShowsExit() && !returned(path[:p.Cut.FirstKept], v) {
						t.Errorf("%s: Verification line %q shows exit %d, which no run of it returned as its own", mode, v.Command, v.ExitCode)
					}
				}
				for _, d := range cp.Entry.State.Done {
					if strings.HasPrefix(d, "Answered") {
						t.Errorf("%s: Done item %q records a reply, not work done", mode, d)
					}
				}
				s := scoreCapsule(fx, cp.Entry.State, res.Cwd, mode, tail)
				s.name = name
				s.capsuleTokens, s.sourceTokens = cp.TokensAfter, cp.Entry.TokensBefore
				rows = append(rows, s)
				if len(s.falsePassed) > 0 {
					t.Errorf("%s: false passed: %q", mode, s.falsePassed)
				}
				if len(s.falseFailed) > 0 {
					t.Errorf("%s: false failed: %q", mode, s.falseFailed)
				}
				if s.finalBlocker == "no" {
					t.Errorf("%s: the final blocker %q is missing: %q", mode, fx.FinalBlocker, cp.Entry.State.Blockers)
				}
				if len(s.wrappers) > 0 {
					t.Errorf("%s: context taken as a request: %q", mode, s.wrappers)
				}
				if len(s.missingFiles) > 0 {
					t.Errorf("%s: files modified missing: %q", mode, s.missingFiles)
				}
				if len(s.falsePositives) > 0 {
					t.Errorf("%s: files listed as modified that were not: %q", mode, s.falsePositives)
				}
				if len(s.notChecksCounted) > 0 {
					t.Errorf("%s: commands counted as checks that are not: %q", mode, s.notChecksCounted)
				}
				if len(s.missingRead) > 0 {
					t.Errorf("%s: files read missing: %q", mode, s.missingRead)
				}
				if len(s.narrativeWrong) > 0 {
					t.Errorf("%s: narrative facts that do not hold:\n%s\n%s", mode, strings.Join(s.narrativeWrong, "\n"), compaction.ModelText(cp.Entry.State))
				}
			}
		})
	}
	t.Log("\n" + fidelityTable(rows))
}

// scoreCapsule scores one capsule against the facts. With the default keep
// window the capsule covers only the history before the cut: recall of
// files and of the final blocker are judged with keepRecentTokens 0 only,
// false claims always, and checks run again in the kept tail not at all.
func scoreCapsule(fx facts, st capsule.State, cwd, mode string, tail map[string]bool) fidelityScore {
	s := fidelityScore{mode: mode, keptTailChecks: tail, finalBlocker: "—"}
	full := mode != "default"
	all := append(slices.Clone(fx.FilesModified), fx.FilesModifiedByShell...)
	truth := map[string]bool{}
	for _, f := range all {
		truth[f] = true
	}
	got := map[string]bool{}
	for _, f := range st.FilesModified {
		got[f] = true
		// With a keep window, a file deleted in the kept tail was still
		// there at the cut, and one written again there was deleted.
		base, deleted := strings.CutSuffix(f, compaction.DeletedSuffix)
		atCut := mode == "default" && (truth[f+compaction.DeletedSuffix] || deleted && truth[base])
		if !truth[f] && !atCut {
			s.falsePositives = append(s.falsePositives, f)
		}
	}
	found := 0
	for _, f := range all {
		if got[f] {
			found++
		} else if full {
			s.missingFiles = append(s.missingFiles, f)
		}
	}
	s.filesRecall = fmt.Sprintf("%d/%d", found, len(all))
	for _, c := range fx.Checks {
		if tail[c.Command] {
			continue
		}
		s.checksTotal++
		i := slices.IndexFunc(st.Verification, func(v capsule.Verification) bool { return sameCheck(c.Command, v.Command, cwd) })
		if i < 0 {
			continue
		}
		s.checksListed++
		if st.Verification[i].Outcome == c.Last {
			s.checksRight++
		}
		switch o := st.Verification[i].Outcome; {
		case o == compaction.OutcomePassed && c.Last != "passed":
			s.falsePassed = append(s.falsePassed, c.Command)
		case o == compaction.OutcomeFailedCmd && c.Last != "failed":
			s.falseFailed = append(s.falseFailed, c.Command)
		}
	}
	// Done must not say a check passes when its outcome is another, when
	// the check's true last outcome is not a pass, or when a note calls the
	// pass stale.
	for _, d := range st.Done {
		cmd, ok := strings.CutSuffix(strings.TrimPrefix(d, "`"), "` passes")
		if !ok || !strings.HasPrefix(d, "`") {
			continue
		}
		i := slices.IndexFunc(st.Verification, func(v capsule.Verification) bool { return v.Command == cmd })
		staleNote := slices.ContainsFunc(st.Notes, func(n string) bool { return strings.Contains(n, "`"+cmd+"` is stale") })
		untrue := slices.ContainsFunc(fx.Checks, func(c struct {
			Command string `json:"command"`
			Last    string `json:"last"`
			Why     string `json:"why"`
		}) bool {
			return sameCheck(c.Command, cmd, cwd) && c.Last != "passed" && !tail[c.Command]
		})
		if i < 0 || st.Verification[i].Outcome != compaction.OutcomePassed || staleNote || untrue {
			s.falsePassed = append(s.falsePassed, "Done: "+d)
		}
	}
	// Blockers and Next steps must not say a check fails when it passed.
	for _, item := range slices.Concat(st.Blockers, st.NextSteps) {
		var cmd string
		switch {
		case strings.HasPrefix(item, "`") && strings.HasSuffix(item, "` fails"):
			cmd = strings.TrimSuffix(strings.TrimPrefix(item, "`"), "` fails")
		case strings.HasPrefix(item, "Make `") && strings.HasSuffix(item, "` pass"):
			cmd = strings.TrimSuffix(strings.TrimPrefix(item, "Make `"), "` pass")
		default:
			continue
		}
		for _, c := range fx.Checks {
			if sameCheck(c.Command, cmd, cwd) && c.Last == "passed" && !tail[c.Command] {
				s.falseFailed = append(s.falseFailed, item)
			}
		}
	}
	for _, v := range st.Verification {
		for _, n := range fx.NotChecks {
			if strings.HasPrefix(strings.TrimSpace(stripCd(v.Command)), n) {
				s.notChecksCounted = append(s.notChecksCounted, v.Command)
			}
		}
	}
	if fx.FinalBlocker != "" && full {
		s.finalBlocker = "no"
		if slices.ContainsFunc(st.Blockers, func(b string) bool { return strings.Contains(b, fx.FinalBlocker) }) {
			s.finalBlocker = "yes"
		}
	}
	items := append([]string{st.Goal}, st.InProgress...)
	items = append(items, st.Done...)
	items = append(items, st.NextSteps...)
	for _, it := range items {
		for _, m := range contextMarkers {
			if strings.Contains(it, m) {
				s.wrappers = append(s.wrappers, it)
			}
		}
	}
	if full && len(fx.FilesRead) > 0 {
		read := setOf(st.FilesRead)
		for _, f := range fx.FilesRead {
			if !read[f] {
				s.missingRead = append(s.missingRead, f)
			}
		}
		s.readRecall = fmt.Sprintf("%d/%d", len(fx.FilesRead)-len(s.missingRead), len(fx.FilesRead))
	}
	if full {
		s.narrative = fx.narrativeFacts()
		s.narrativeWrong = narrativeWrong(fx, st)
		s.narrativeRight = s.narrative - len(s.narrativeWrong)
	}
	s.goalWordsTotal = len(fx.GoalWords)
	for _, w := range fx.GoalWords {
		if strings.Contains(strings.ToLower(st.Goal), strings.ToLower(w)) {
			s.goalWords++
		}
	}
	return s
}

func setOf(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// narrativeWrong lists the narrative facts of fx that st does not meet.
func narrativeWrong(fx facts, st capsule.State) []string {
	var wrong []string
	has := func(xs []string, sub string) bool {
		return slices.ContainsFunc(xs, func(x string) bool { return strings.Contains(x, sub) })
	}
	open := slices.Concat(st.InProgress, st.Pending, st.NextSteps, st.Blockers)
	var decisions []string
	for _, d := range st.Decisions {
		decisions = append(decisions, d.Decision+" — "+d.Rationale)
	}
	text := compaction.ModelText(st)
	for _, c := range fx.Constraints {
		if !slices.Contains(st.Constraints, c) {
			wrong = append(wrong, "constraint missing or cut: "+c)
		}
	}
	for _, c := range fx.ConstraintsAbsent {
		if has(st.Constraints, c) {
			wrong = append(wrong, "not a constraint: "+c)
		}
	}
	for _, d := range fx.Decisions {
		if !has(decisions, d) {
			wrong = append(wrong, "decision missing: "+d)
		}
	}
	for _, b := range fx.Blockers {
		if !has(st.Blockers, b) {
			wrong = append(wrong, "blocker missing: "+b)
		}
	}
	for _, b := range fx.BlockersAbsent {
		if has(st.Blockers, b) {
			wrong = append(wrong, "not a blocker: "+b)
		}
	}
	for _, o := range fx.Open {
		if !has(open, o) {
			wrong = append(wrong, "open item dropped: "+o)
		}
	}
	for _, o := range fx.OpenAbsent {
		if has(open, o) {
			wrong = append(wrong, "resolved item kept open: "+o)
		}
	}
	for _, k := range fx.Kept {
		if !strings.Contains(text, k) {
			wrong = append(wrong, "not kept: "+k)
		}
	}
	for _, a := range fx.Absent {
		if strings.Contains(text, a) {
			wrong = append(wrong, "in the capsule although it must not be: "+a)
		}
	}
	return wrong
}

// sameCheck reports whether a recorded command runs the fact's check: the
// same check once output filters, redirections and a `cd` to the session's
// own directory are set aside.
func sameCheck(fact, cmd, cwd string) bool {
	check, _ := compaction.CheckOf(cmd)
	if cwd != "" {
		check = strings.TrimPrefix(check, "cd "+cwd+" && ")
	}
	return strings.Join(strings.Fields(check), " ") == strings.Join(strings.Fields(fact), " ")
}

// stripCd is a command without a leading `cd DIR && `.
func stripCd(cmd string) string {
	if strings.HasPrefix(cmd, "cd ") {
		if _, rest, ok := strings.Cut(cmd, " && "); ok {
			return rest
		}
	}
	return cmd
}

// fidelityTable renders the scores as the Markdown table of
// docs/capsule-fidelity.md.
func fidelityTable(rows []fidelityScore) string {
	var b strings.Builder
	b.WriteString("| transcript | capsule | files modified (recall) | false positives | files read (recall) | checks listed | outcome right | false passed | false failed | non-checks counted | final blocker | wrappers as requests | goal words | narrative facts | tokens |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rows {
		read, narrative := orDash(r.readRecall), "—"
		if r.narrative > 0 {
			narrative = fmt.Sprintf("%d/%d", r.narrativeRight, r.narrative)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %d/%d | %d | %d | %d | %d | %s | %d | %d/%d | %s | %d → %d |\n",
			r.name, r.mode, r.filesRecall, len(r.falsePositives), read, r.checksListed, r.checksTotal, r.checksRight, len(r.falsePassed),
			len(r.falseFailed), len(r.notChecksCounted), r.finalBlocker, len(r.wrappers), r.goalWords, r.goalWordsTotal,
			narrative, r.sourceTokens, r.capsuleTokens)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// returned reports whether a command run on path returned v's exit status
// as its own: a run of v's check whose status is the check's, or (a step
// attributed to the command that ran) a run of that command.
func returned(path []session.Entry, v capsule.Verification) bool {
	for _, e := range path {
		r := e.ToolResult
		if r == nil || r.Artifacts == nil || r.Artifacts.Command == "" || r.Artifacts.ExitCode == nil || *r.Artifacts.ExitCode != v.ExitCode {
			continue
		}
		check, filtered := compaction.CheckOf(r.Artifacts.Command)
		if check == v.Command && (!filtered || r.Artifacts.Pipefail) || strings.Contains(strings.Join(strings.Fields(r.Artifacts.Command), " "), v.Command) {
			return true
		}
	}
	return false
}
