package compaction

import (
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/tool"
)

// verificationPattern matches commands that verify the work: tests, builds,
// type checks and linters across common toolchains.
var verificationPattern = regexp.MustCompile(`(?i)(^|[\s;&|(/])(` +
	`go (test|build|vet)|gofmt|golangci-lint|staticcheck|` +
	`(npm|pnpm|yarn|bun) (run )?(test|build|lint|check|typecheck)|npx (tsc|vitest|jest|eslint|mocha)|tsc|vitest|jest|eslint|mocha|` +
	`pytest|python3? -m (pytest|unittest|mypy)|mypy|ruff|tox|` +
	`cargo (test|build|check|clippy)|make( [\w-]*test[\w-]*| check| build| lint)?|ctest|` +
	`mvn (test|verify|package)|gradle(w)? (test|build|check)|\./gradlew (test|build|check)|` +
	`dotnet (test|build)|rspec|bundle exec (rspec|rake)|mix test|swift (test|build)|zig build|bazel (test|build)` +
	`)($|[\s;&|)])`)

// verificationSeen memoises IsVerificationCommand: sessions run the same
// few commands over and over, and the pattern is costly.
var (
	verificationSeen  sync.Map // command → bool
	verificationCount atomic.Int32
)

// maxVerificationMemo bounds the memo in a long-running server.
const maxVerificationMemo = 4096

// IsVerificationCommand reports whether a shell command verifies the work
// (tests, build, lint), so its last outcome belongs in the capsule (R-C1).
func IsVerificationCommand(cmd string) bool {
	if v, ok := verificationSeen.Load(cmd); ok {
		return v.(bool)
	}
	ok := verificationPattern.MatchString(strings.TrimSpace(cmd))
	if len(cmd) <= 512 && verificationCount.Load() < maxVerificationMemo {
		verificationCount.Add(1)
		verificationSeen.Store(cmd, ok)
	}
	return ok
}

// Outcome names for verification commands.
const (
	OutcomePassed      = "passed"
	OutcomeFailedCmd   = "failed"
	OutcomeInterrupted = "interrupted"
)

// artifactSet accumulates the exact artifacts of R-C2 in first-seen order.
type artifactSet struct {
	read, modified, skills []string
	seenRead, seenMod      map[string]bool
	seenSkill              map[string]bool
	checks                 checkRuns // the latest run of each check
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

func (a *artifactSet) addModified(p string) {
	if p != "" && !a.seenMod[p] {
		a.seenMod[p] = true
		a.modified = append(a.modified, p)
	}
}

func (a *artifactSet) addSkill(s string) {
	if s != "" && !a.seenSkill[s] {
		a.seenSkill[s] = true
		a.skills = append(a.skills, s)
	}
}

// addVerification records a run; a check run again moves to the end with
// its new outcome, so the list ends with the most recent runs (checks.go).
func (a *artifactSet) addVerification(cmd string, exit int, outcome string) {
	if cmd == "" {
		return
	}
	a.checks.add(capsule.Verification{Command: cmd, ExitCode: exit, Outcome: outcome})
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
		if art.Command != "" && IsVerificationCommand(art.Command) {
			exit, outcome := -1, OutcomeInterrupted
			if art.ExitCode != nil {
				exit = *art.ExitCode
				outcome = OutcomePassed
				if exit != 0 {
					outcome = OutcomeFailedCmd
				}
			}
			a.addVerification(recordedCommand(art.Command, exit, art.Pipefail), exit, outcome)
		}
		return
	}
	if call == nil {
		return
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
		if IsVerificationCommand(args.Command) {
			exit, outcome := 0, OutcomePassed
			if !r.OK {
				exit, outcome = 1, OutcomeFailedCmd
			}
			a.addVerification(args.Command, exit, outcome)
		}
	}
}
