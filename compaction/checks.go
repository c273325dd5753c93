package compaction

import (
	"regexp"
	"slices"
	"strings"

	"github.com/soba-agent/soba-lsp/capsule"
)

// A verification command is often run with its output trimmed for reading:
// `npm run check 2>&1 | tail -5`, `go test ./... | grep FAIL`, `make; echo
// $?`. Those are runs of one check (`npm run check`), and their exit status
// is the filter's, not the check's (a shell without pipefail reports the
// last stage; grep exits 1 when nothing failed). So the capsule keeps one
// line per check, and only a run without an output filter says whether the
// check passes.

// outputFilters are the commands that, as the last stages of a pipeline,
// only select or reformat what the check printed.
var outputFilters = map[string]bool{
	"tail": true, "head": true, "grep": true, "egrep": true, "fgrep": true, "rg": true, "wc": true,
	"sort": true, "uniq": true, "cat": true, "less": true, "more": true, "tee": true, "cut": true,
	"awk": true, "sed": true, "tr": true, "column": true, "jq": true, "nl": true, "fold": true,
}

var (
	// echoStatus is a trailing `; echo …$?…`, which prints the status and
	// exits 0 itself.
	echoStatus = regexp.MustCompile(`\s*(;|&&)\s*echo\b[^;&|]*\$\?[^;&|]*$`)
	// redirections are trailing stream redirections: they change where the
	// output goes, not what is checked.
	redirections = regexp.MustCompile(`(\s+(\d?>&\d|&>>?\s*\S+|\d?>>?\s*\S+|<\s*\S+))+\s*$`)
	blanks       = regexp.MustCompile(`\s+`)
)

// CheckOf returns the check a shell command runs — the command without its
// trailing output filters, status echo and redirections, blanks collapsed —
// and whether anything that hides the check's exit status was removed. The
// capsule's Verification section has one line per check: its latest run
// whose exit status is the check's own, else its latest run.
func CheckOf(cmd string) (check string, filtered bool) {
	check, piped, masked := checkParts(cmd)
	return check, piped || masked
}

// checkParts is CheckOf with what was found: output-filter stages removed
// from the last pipeline (piped), or a status that is not the check's at
// all (masked: a trailing `; echo $?`, `|| true`, `; exit 0`, a background
// `&` — the list's exit status is then whatever follows the check).
func checkParts(cmd string) (check string, piped, masked bool) {
	s := strings.TrimSpace(cmd)
	if loc := echoStatus.FindStringIndex(s); loc != nil {
		s, masked = s[:loc[0]], true
	}
	head, op, last := lastListSegment(s)
	if op == ";" && strings.TrimSpace(last) == "" {
		head, op, last = lastListSegment(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(head), ";")))
	}
	runsCheck := verificationPattern.MatchString(strings.TrimSpace(last))
	if op != "" && !runsCheck {
		// The check is before the operator: judge it there. After `;`,
		// `||` or `&` the list's status is not the check's; `check && echo
		// ok` fails when the check does.
		check, piped, m := checkParts(strings.TrimSuffix(strings.TrimSpace(head), op))
		return check, piped, masked || m || op != "&&"
	}
	stages := pipeStages(last)
	for len(stages) > 1 {
		words := strings.Fields(stages[len(stages)-1])
		if len(words) == 0 || !outputFilters[words[0]] {
			break
		}
		stages, piped = stages[:len(stages)-1], true
	}
	s = head + strings.Join(stages, "|")
	s = redirections.ReplaceAllString(s, "")
	return blanks.ReplaceAllString(strings.TrimSpace(s), " "), piped, masked
}

// lastListSegment splits a shell line at its last top-level list operator
// (`;`, `&&`, `||` or a background `&`, outside quotes; `2>&1`, `&>` and
// `|&` are not operators): head is everything up to and including the
// operator, last what follows it. Without an operator, head and op are "".
func lastListSegment(s string) (head, op, last string) {
	at, width := -1, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && quote != '\'':
			i++
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == ';':
			at, width = i, 1
		case c == '|' && i+1 < len(s) && s[i+1] == '|':
			at, width = i, 2
			i++
		case c == '&' && i+1 < len(s) && s[i+1] == '&':
			at, width = i, 2
			i++
		case c == '&':
			prev := byte(0)
			if i > 0 {
				prev = s[i-1]
			}
			if prev != '>' && prev != '<' && prev != '|' && (i+1 >= len(s) || s[i+1] != '>') {
				at, width = i, 1
			}
		}
	}
	if at < 0 {
		return "", "", s
	}
	return s[:at+width], s[at : at+width], s[at+width:]
}

// recordedCommand is the command a verification run is recorded under. A
// run under pipefail whose pipeline exited 0 passed every stage, the check
// included, so it is recorded as the check itself (`go test ./... | tail -5`
// → `go test ./...`) and counts as conclusive; the transcript keeps the
// command as typed. Any other run keeps its command as it ran.
func recordedCommand(cmd string, exit int, pipefail bool) string {
	if check, piped, masked := checkParts(cmd); piped && !masked && pipefail && exit == 0 {
		return check
	}
	return cmd
}

// pipeStages splits a shell line at its top-level pipes (`|` and `|&`, not
// `||`), outside quotes.
func pipeStages(s string) []string {
	var stages []string
	start := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && quote != '\'':
			i++ // the next byte is escaped
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '|':
			if i+1 < len(s) && s[i+1] == '|' {
				i++ // ||: a list, not a pipe
				continue
			}
			stages = append(stages, s[start:i])
			if i+1 < len(s) && s[i+1] == '&' {
				i++
			}
			start = i + 1
		}
	}
	return append(stages, s[start:])
}

// checkRuns keeps the latest run of each check, in the order of the checks'
// latest runs; a run with an output filter stands for its check only until
// a run without one is recorded, whose exit status is the check's own.
type checkRuns struct {
	runs []checkRun
}

type checkRun struct {
	check    string
	filtered bool
	v        capsule.Verification
}

// add records v as the latest run of its check.
func (c *checkRuns) add(v capsule.Verification) {
	check, filtered := CheckOf(v.Command)
	i := slices.IndexFunc(c.runs, func(r checkRun) bool { return r.check == check })
	if i >= 0 {
		old := c.runs[i]
		c.runs = slices.Delete(c.runs, i, i+1)
		if filtered && !old.filtered {
			// Still the better evidence; the check moves to the end as
			// the most recently run.
			c.runs = append(c.runs, old)
			return
		}
	}
	c.runs = append(c.runs, checkRun{check: check, filtered: filtered, v: v})
}

// list is the capsule's Verification section.
func (c *checkRuns) list() []capsule.Verification {
	out := make([]capsule.Verification, 0, len(c.runs))
	for _, r := range c.runs {
		out = append(out, r.v)
	}
	return out
}

// conclusive reports whether v's exit status is its check's own (no output
// filter hides it), so the capsule may say the check passes or fails.
func conclusive(v capsule.Verification) bool {
	_, filtered := CheckOf(v.Command)
	return !filtered
}
