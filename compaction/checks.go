package compaction

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/internal/lazyregexp"
	"github.com/soba-agent/soba-lsp/internal/text"
)

// Verification is truthful (R-C5). A check is a command that verifies the
// work (checkkinds.go), identified by what it runs and where: `cd pkg &&
// npm run check 2>&1 | tail -5`, `npm --prefix pkg run check` and `cd pkg;
// npm run check` are runs of one check, `cd pkg && npm run check`. A run
// says whether the check passed only when the command line's exit status is
// the check's own (shell.go); otherwise it is inconclusive, unless its
// output carries the tool's own failure text, which makes it failed. The
// capsule keeps one line per check with the outcome of its latest
// conclusive run.

// Outcome names for verification commands.
const (
	OutcomePassed       = "passed"
	OutcomeFailedCmd    = "failed"
	OutcomeInterrupted  = "interrupted"
	OutcomeInconclusive = "inconclusive"
)

// IsVerificationCommand reports whether a shell command line runs a check
// (tests, build, type check, lint), so its last outcome belongs in the
// capsule (R-C1, R-C5). Words inside quotes, heredocs and commit messages
// are never commands.
func IsVerificationCommand(cmd string) bool {
	return len(parsedLine(cmd).ofKind(kindCheck)) > 0
}

// lineMemo memoises parsed command lines: sessions run the same few commands
// over and over.
var (
	lineMemo      sync.Map // command → shellLine
	lineMemoCount atomic.Int32
)

const maxLineMemo = 4096

func parsedLine(cmd string) shellLine {
	if v, ok := lineMemo.Load(cmd); ok {
		return v.(shellLine)
	}
	l := parseShell(cmd)
	if len(cmd) <= 1024 && lineMemoCount.Load() < maxLineMemo {
		lineMemoCount.Add(1)
		lineMemo.Store(cmd, l)
	}
	return l
}

// CheckOf returns the check a shell command line runs — its checks whose
// exit status is the line's, with their directory, without wrappers, output
// filters and redirections — and whether the line's status is not the
// check's own (filtered). A line with no check is returned with its blanks
// collapsed.
func CheckOf(cmd string) (check string, filtered bool) {
	g := checkGroups(parsedLine(cmd), false)
	if len(g) == 0 {
		return strings.Join(strings.Fields(cmd), " "), false
	}
	return g[0].display, g[0].status != statusOwn
}

// checkGroup is one check of a line with whose status the line reports.
// Checks whose status is the line's together (`go build ./... && go test
// ./...`) name that list as their chain: a 0 says each passed, a failure
// says only that one of them failed.
type checkGroup struct {
	display string
	status  statusKind
	filter  string
	chain   string
}

// checkGroups returns the line's checks: first those whose status is the
// line's (under pipefail, a piped one counts as pipefail), then the others.
func checkGroups(l shellLine, pipefail bool) []checkGroup {
	var own, others []checkGroup
	for _, c := range l.ofKind(kindCheck) {
		st := c.status
		if st == statusPiped && pipefail {
			st = statusPipefail
		}
		g := checkGroup{display: c.display(), status: st, filter: c.filter}
		if st == statusOwn {
			own = append(own, g)
			continue
		}
		others = append(others, g)
	}
	if len(own) > 1 {
		ds := make([]string, len(own))
		for i, g := range own {
			ds[i] = g.display
		}
		chain := joinChecks(ds)
		for i := range own {
			own[i].chain = chain
		}
	}
	return append(own, others...)
}

// joinChecks joins the displays of one line's checks, sharing a leading
// `cd DIR && `.
func joinChecks(ds []string) string {
	if len(ds) == 1 {
		return ds[0]
	}
	out := ds[0]
	for _, d := range ds[1:] {
		prefix := ""
		if i := strings.Index(out, " && "); strings.HasPrefix(out, "cd ") && i > 0 {
			prefix = out[:i+4]
		}
		out += " && " + strings.TrimPrefix(d, prefix)
	}
	return out
}

// quietFilters never fail on their own: under pipefail a non-zero status
// of `check | tail` is the check's.
var quietFilters = map[string]bool{
	"tail": true, "tee": true, "cat": true, "sort": true, "wc": true, "cut": true, "sed": true, "awk": true,
	"tr": true, "uniq": true, "nl": true, "column": true, "fold": true, "less": true, "more": true,
}

// failureText matches lines that only a failing tool prints: npm's and
// pnpm's errors, TypeScript's diagnostics, Go's and Jest's/Vitest's FAIL, a
// panic, rustc's errors, pytest's and bun's failure counts, make's error.
var failureText = lazyregexp.New(`(?m)^.*(?:\bnpm (?:error|ERR!)|\bERR_PNPM_\w+|\berror TS\d+:|^--- FAIL:|^FAIL\b|^ FAIL |^panic: |^error\[E\d+\]|^error: could not compile|^make(?:\[\d+\])?: \*\*\*|\bELIFECYCLE\b|(?:^|\s)[1-9]\d* (?:failed|fail|errors?)\b(?:[,;.]|\s|$)|^error: script ".*" exited with code [1-9]|Found [1-9]\d* errors?\b).*$`)

// failureLine returns the first line of out that shows a failure of the
// tool, trimmed.
func failureLine(out string) string {
	if out == "" {
		return ""
	}
	m := failureText.FindString(out)
	return strings.TrimSpace(m)
}

// runOutcome is what one run of a check says.
type runOutcome struct {
	group checkGroup
	// exit is the check's own exit status, -1 when the run reported none
	// of its own (capsule.Verification.ExitCode).
	exit    int
	outcome string
	// detail goes on the Verification line (capsule.Verification.Detail).
	detail string
	note   string
	// suspect: the run's chain failed, so this check may have.
	suspect bool
}

// outcomesOf judges each check of a command line from its exit status (nil
// when the run was interrupted or the source does not say) and output.
func outcomesOf(cmd string, exit *int, pipefail bool, output string) []runOutcome {
	var out []runOutcome
	for _, g := range checkGroups(parsedLine(cmd), pipefail) {
		r := runOutcome{group: g, exit: -1}
		if exit != nil {
			r.exit = *exit
		}
		own := false // the exit status is the check's own
		switch {
		case exit == nil:
			r.outcome = OutcomeInterrupted
		case g.status == statusOwn && g.chain != "" && *exit != 0:
			// One of the chain failed; which one, the status does not say.
			r.outcome = OutcomeInconclusive
			r.suspect = true
			r.detail = "ran in `" + g.chain + "`, which failed (exit " + strconv.Itoa(*exit) + ")"
		case g.status == statusOwn:
			own = true
			r.outcome = OutcomePassed
			if *exit != 0 {
				r.outcome = OutcomeFailedCmd
				if step := failedStep(output); step != "" && step != g.display && !strings.HasSuffix(g.display, " "+step) {
					r.detail = "in its `" + step + "` step"
				}
			}
		case g.status == statusPipefail && *exit == 0:
			own = true
			r.outcome = OutcomePassed
		case g.status == statusPipefail && quietFilters[strings.TrimPrefix(g.filter, "| ")]:
			own = true
			r.outcome = OutcomeFailedCmd
		default:
			r.outcome = OutcomeInconclusive
			r.detail = whoseStatus(g.filter)
		}
		if !own {
			r.exit = -1
		}
		if (r.outcome == OutcomeInconclusive || r.outcome == OutcomeInterrupted) && !r.suspect {
			if line := failureLine(output); line != "" {
				r.outcome = OutcomeFailedCmd
				r.note = "failed: `" + text.Clip(line, 160) + "`"
				r.detail = "its output shows a failure"
				if w := whoseStatus(g.filter); w != "" && exit != nil {
					r.detail += "; " + w
				}
			}
		}
		out = append(out, r)
	}
	return out
}

// whoseStatus says whose exit status a filtered run reported, for its
// Verification line: "the exit status was `tail`'s" for a pipe, "the exit
// status was hidden by `|| true`" for anything else.
func whoseStatus(filter string) string {
	if filter == "" {
		return ""
	}
	if f, ok := strings.CutPrefix(filter, "| "); ok {
		if name := strings.Fields(f); len(name) > 0 {
			return "the exit status was `" + name[0] + "`'s"
		}
	}
	return "the exit status was hidden by `" + filter + "`"
}

// stepText matches the lines npm and pnpm print when a script they ran for
// a command failed: npm's `Lifecycle script `build` failed`, pnpm's
// `ERR_PNPM_RECURSIVE_RUN_FIRST_FAIL  pkg@1.0.0 build: `tsc“.
var stepText = lazyregexp.New("(?m)(?:\\bLifecycle script `([\\w:.-]+)` failed|\\bERR_PNPM_\\w+\\s+\\S+ ([\\w:.-]+): `)")

// failedStep is the script a failed command's output says failed, as the
// command that runs it ("npm run build"), or "".
func failedStep(out string) string {
	m := stepText.FindStringSubmatch(out)
	if m == nil {
		return ""
	}
	if m[1] != "" {
		return "npm run " + m[1]
	}
	return "pnpm run " + m[2]
}

// conclusive reports whether v says whether its check passes: passed or
// failed. A passed run of a command whose status is not its check's (as
// capsules before R-C5 recorded them) is not.
func conclusive(v capsule.Verification) bool {
	switch v.Outcome {
	case OutcomeFailedCmd:
		return true
	case OutcomePassed:
		_, filtered := CheckOf(v.Command)
		return !filtered
	}
	return false
}

// checkRuns keeps one run per check: the latest conclusive one, else the
// latest; in the order of the checks' latest runs.
type checkRuns struct {
	runs []checkRun
}

type checkRun struct {
	check string
	v     capsule.Verification
	// note explains an inconclusive run, or quotes the failure text that
	// made a filtered run failed.
	note string
	// edits is the number of successful file changes recorded before the
	// run (R-C5 stale): edits after a pass make it stale.
	edits int
	// filter is what hid the status of an inconclusive run.
	filter string
	// failedExit is the exit status of the check's last failure when only
	// inconclusive runs followed it; later counts those runs.
	failedExit *int
	later      int
	// suspect marks a run whose chain of checks failed; inChain carries
	// that to the inconclusive runs after it.
	suspect, inChain bool
}

// add records v as the latest run of its check.
func (c *checkRuns) add(v capsule.Verification) {
	c.addRun(checkRun{v: v})
}

// has reports whether check has a recorded run.
func (c *checkRuns) has(check string) bool {
	return slices.ContainsFunc(c.runs, func(x checkRun) bool { return x.check == check })
}

// replace records v as its check's run, whatever the earlier run said.
func (c *checkRuns) replace(v capsule.Verification) {
	check, _ := CheckOf(v.Command)
	c.runs = slices.DeleteFunc(c.runs, func(x checkRun) bool { return x.check == check })
	c.runs = append(c.runs, checkRun{check: check, v: v})
}

func (c *checkRuns) addRun(r checkRun) {
	if r.check == "" {
		r.check, _ = CheckOf(r.v.Command)
	}
	i := slices.IndexFunc(c.runs, func(x checkRun) bool { return x.check == r.check })
	if i >= 0 {
		old := c.runs[i]
		c.runs = slices.Delete(c.runs, i, i+1)
		switch {
		case r.suspect:
			// Evidence against an earlier pass: the check may have failed.
		case r.v.Outcome == OutcomeInterrupted && old.failedExit != nil:
			// An interrupted run says nothing: what was known stays.
			r.failedExit, r.later, r.note, r.inChain, r.filter = old.failedExit, old.later, old.note, old.inChain, old.filter
		case r.v.Outcome == OutcomeInconclusive && (old.v.Outcome == OutcomeFailedCmd || old.failedExit != nil):
			// Filtered runs after a failure showed no failure text: it
			// may have been fixed, and saying "failed" could be false.
			r.failedExit, r.later = old.failedExit, old.later+1
			if r.failedExit == nil {
				exit := old.v.ExitCode
				r.failedExit = &exit
			}
			failed := "failed"
			if *r.failedExit > 0 {
				failed += " (exit " + strconv.Itoa(*r.failedExit) + ")"
			}
			if old.suspect || old.inChain {
				failed = "ran in a chain of checks that failed"
				if *r.failedExit > 0 {
					failed += " (exit " + strconv.Itoa(*r.failedExit) + ")"
				}
				r.inChain = true
			}
			r.note = failed + ", then ran " + plural(r.later, "time") +
				" with its status hidden (`" + r.filter + "`) and no failure text: run it unfiltered to know"
		case conclusive(r.v) || !conclusive(old.v):
		default:
			// The latest conclusive run still decides; the check moves
			// to the end as the most recently run.
			c.runs = append(c.runs, old)
			return
		}
	}
	c.runs = append(c.runs, r)
}

// list is the capsule's Verification section.
func (c *checkRuns) list() []capsule.Verification {
	out := make([]capsule.Verification, 0, len(c.runs))
	for _, r := range c.runs {
		out = append(out, r.v)
	}
	return out
}

// notes are what the Verification lines cannot say: why a run is
// inconclusive, the failure text of a filtered failed run, and a pass made
// stale by later edits (total is the session's count of file changes).
func (c *checkRuns) notes(total int) []string {
	var out []string
	for _, r := range c.runs {
		cmd := "`" + r.v.Command + "`"
		switch {
		case r.note != "":
			out = append(out, verificationNote+cmd+" "+r.note)
		case r.v.Outcome == OutcomePassed && total > r.edits:
			n := total - r.edits
			out = append(out, verificationNote+cmd+" is stale: passed before "+plural(n, "later edit"))
		}
	}
	return out
}

// editsSince is the number of file changes recorded after check's run
// (total is the session's count).
func (c *checkRuns) editsSince(check string, total int) int {
	for _, r := range c.runs {
		if r.check == check {
			return max(0, total-r.edits)
		}
	}
	return 0
}

// latestIsChainFailure reports whether check's latest run is a failed
// chain it ran in (no run of it came after).
func (c *checkRuns) latestIsChainFailure(check string) bool {
	for _, r := range c.runs {
		if r.check == check {
			return r.suspect
		}
	}
	return false
}

// unsure lists the checks that failed and then ran only with their status
// hidden: the next step is to run them so their status shows.
func (c *checkRuns) unsure() []string {
	var out []string
	for _, r := range c.runs {
		if r.failedExit != nil {
			out = append(out, r.v.Command)
		}
	}
	return out
}

// verificationNote starts the notes about checks.
const verificationNote = "Verification: "

func plural(n int, what string) string {
	s := strconv.Itoa(n) + " " + what
	if n != 1 {
		s += "s"
	}
	return s
}

// recordedCommand is the command a run is recorded under: its check.
func recordedCommand(cmd string, exit int, pipefail bool) string {
	g := checkGroups(parsedLine(cmd), pipefail)
	if len(g) == 0 {
		return cmd
	}
	return g[0].display
}

// consequentialRun is the latest run of a consequential command (R-C5):
// publish, deploy, push, commit, merge, migrate.
type consequentialRun struct {
	key, display string
	exit         int
	failed       bool
	line         string // the first line of its output that says why
	step         string // the script of it that failed ("npm run build"), if its output says
}

// consequentialKey identifies a consequential command: git's by its
// subcommand (a commit's message is not part of what failed), others by
// their words.
func consequentialKey(c shellCmd) string {
	words := c.words
	if pos := positional(c.words[1:]); len(pos) > 0 && (words[0] == "git" || words[0] == "gh") {
		// git's subcommand (`git commit`), gh's two (`gh pr merge`).
		n := 1
		if words[0] == "gh" {
			n = min(2, len(pos))
		}
		words = append([]string{words[0]}, pos[:n]...)
	}
	return c.dir + "\x00" + strings.Join(words, " ")
}
