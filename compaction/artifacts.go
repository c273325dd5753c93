package compaction

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/tool"
)

// artifactSet accumulates the exact artifacts of R-C2 in first-seen order.
type artifactSet struct {
	read, modified, skills []string
	seenRead, seenMod      map[string]bool
	seenSkill              map[string]bool
	checks                 checkRuns // the latest run of each check
	// edits counts successful file changes, for stale passes (R-C5).
	edits int
	// consequential holds the latest run of each consequential command
	// (R-C5), in the order of their latest runs.
	consequential []consequentialRun
	// chains holds the latest run of each chain of checks (`a && b`),
	// whose failure does not say which check failed.
	chains []consequentialRun
}

func newArtifactSet() *artifactSet {
	return &artifactSet{seenRead: map[string]bool{}, seenMod: map[string]bool{}, seenSkill: map[string]bool{}}
}

func (a *artifactSet) addRead(p string) {
	if p != "" && !a.seenRead[p] {
		a.seenRead[p] = true
		a.read = append(a.read, p)
	}
}

// How Files modified lists a rename and a deletion (R-C6).
const (
	RenameSep     = " → "
	DeletedSuffix = " (deleted)"
)

func (a *artifactSet) addModified(p string) {
	if p != "" {
		a.edits++
	}
	// A file deleted is listed as deleted, not also as modified; one
	// written again after its deletion exists again.
	if base, ok := strings.CutSuffix(p, DeletedSuffix); ok && a.seenMod[base] {
		a.dropModified(base)
	} else if a.seenMod[p+DeletedSuffix] {
		a.dropModified(p + DeletedSuffix)
	}
	if p != "" && !a.seenMod[p] {
		a.seenMod[p] = true
		a.modified = append(a.modified, p)
	}
}

func (a *artifactSet) dropModified(p string) {
	delete(a.seenMod, p)
	a.modified = slices.DeleteFunc(a.modified, func(x string) bool { return x == p })
}

func (a *artifactSet) addSkill(s string) {
	if s != "" && !a.seenSkill[s] {
		a.seenSkill[s] = true
		a.skills = append(a.skills, s)
	}
}

// addCommand records the checks and consequential commands of a shell
// command line that ran with the exit status exit (nil: interrupted or not
// told) and printed output.
func (a *artifactSet) addCommand(cmd string, exit *int, pipefail bool, output string) {
	if cmd == "" {
		return
	}
	for _, r := range outcomesOf(cmd, exit, pipefail, output) {
		run := checkRun{
			check:   r.group.display,
			v:       capsule.Verification{Command: r.group.display, ExitCode: r.exit, Outcome: r.outcome, Detail: r.detail},
			note:    r.note,
			filter:  r.group.filter,
			edits:   a.edits,
			suspect: r.suspect,
		}
		if r.suspect {
			e := *exit // the chain's status: it failed
			run.failedExit = &e
		}
		a.checks.addRun(run)
		if c := r.group.chain; c != "" && exit != nil && !slices.ContainsFunc(a.chains, func(x consequentialRun) bool { return x.key == c && x.exit == *exit }) {
			a.chains = slices.DeleteFunc(a.chains, func(x consequentialRun) bool { return x.key == c })
			a.chains = append(a.chains, consequentialRun{key: c, display: c, exit: *exit, failed: *exit != 0})
		}
	}
	for _, c := range parsedLine(cmd).ofKind(kindConsequential) {
		if exit == nil || c.status == statusMasked {
			continue
		}
		key := consequentialKey(c)
		a.consequential = slices.DeleteFunc(a.consequential, func(r consequentialRun) bool { return r.key == key })
		run := consequentialRun{key: key, display: c.display(), exit: *exit, failed: *exit != 0 && c.status == statusOwn}
		step := ""
		if run.failed {
			step = failedStep(output)
		}
		switch {
		case step != "":
			// A check failed inside it: the Verification line is the
			// command that ran, with the step that failed (R-C5).
			run.step = step
			a.checks.replace(capsule.Verification{Command: run.display, ExitCode: *exit, Outcome: OutcomeFailedCmd, Detail: "in its `" + step + "` step"})
		case a.checks.has(run.display) && c.status == statusOwn:
			outcome := OutcomePassed
			if *exit != 0 {
				outcome = OutcomeFailedCmd
			}
			a.checks.replace(capsule.Verification{Command: run.display, ExitCode: *exit, Outcome: outcome})
		}
		if run.failed {
			run.line = whyFailed(output)
			if c.words[0] == "git" && strings.Contains(output, "nothing to commit") {
				run.failed = false // nothing was refused
			}
		}
		a.consequential = append(a.consequential, run)
	}
}

// whyFailed is the line of a failed command's output that says why: its
// tool's failure text, else its first line that mentions an error, else
// its last non-empty line.
func whyFailed(out string) string {
	if l := failureLine(out); l != "" {
		return l
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		ll := strings.ToLower(l)
		if strings.Contains(ll, "error") || strings.Contains(ll, "rejected") || strings.Contains(ll, "denied") || strings.Contains(ll, "fatal") {
			return strings.TrimSpace(l)
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "Exit code") && !strings.HasPrefix(l, "Command exited") {
			return l
		}
	}
	return ""
}

// toolArgs are the argument fields the engine reads from recorded calls when
// a result carries no artifacts (imported sessions).
type toolArgs struct {
	Path    string `json:"path"`
	Command string `json:"command"`
	Name    string `json:"name"`
}

// addResult records the artifacts of one tool result, from the artifacts the
// tool recorded, else from its call's arguments.
func (a *artifactSet) addResult(r *session.ToolResult, call *session.ToolCall) {
	if art := r.Artifacts; art != nil {
		for _, p := range art.FilesRead {
			a.addRead(p)
		}
		for _, p := range art.FilesModified {
			a.addModified(p)
		}
		a.addSkill(art.Skill)
		a.addCommand(art.Command, art.ExitCode, art.Pipefail, r.Content)
		return
	}
	if call == nil || !r.OK && IsDenial(r.Content) {
		return // a refused call ran nothing (R-C6)
	}
	var args toolArgs
	_ = json.Unmarshal(call.Arguments, &args) // unknown shapes leave no artifacts
	switch tool.ArtifactOf(call.Name) {
	case tool.FileRead:
		if r.OK {
			a.addRead(args.Path)
		}
	case tool.FileModified:
		if r.OK {
			a.addModified(args.Path)
		}
	case tool.Skill:
		if r.OK {
			a.addSkill(args.Name)
		}
	case tool.Command:
		exit := 0
		if !r.OK {
			exit = 1
		}
		a.addCommand(args.Command, &exit, false, r.Content)
	}
}
