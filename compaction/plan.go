package compaction

import (
	"errors"
	"fmt"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/session"
)

// Counter counts tokens of a text (compaction/tokens implements it).
type Counter interface {
	Count(text string) int
}

// PlanRequest is what a compaction is planned from.
type PlanRequest struct {
	OperationID  string
	CheckpointID string
	Trigger      string
	Config       Config
	// SystemTokens is the estimate of the system prompt and tool schemas.
	SystemTokens int
	// AfterSystemTokens is that estimate for the continuation, when the
	// compaction changes it (the system prompt carries the bodies of the
	// new capsule's skills, not only the old one's); 0 means SystemTokens.
	AfterSystemTokens int
	// ExpectedLeaf is the session leaf the plan is made on; the append of
	// its capsule is refused when the leaf moved since (R-B5).
	ExpectedLeaf string
	Instructions string
	Extras       Extras
	// CapsuleAllowance is the room a forced compaction keeps for the new
	// capsule under the hard limit; 0 means the default. FitForced raises it
	// when a built capsule turned out larger.
	CapsuleAllowance int
}

// Plan is the immutable plan of one compaction (R-B2): trigger, cut point,
// token limits and the expected leaf. Nothing in it changes once made.
type Plan struct {
	PlanRequest
	Base Base
	Cut  Cut
	// HardLimit and SoftLimit in force when the plan was made.
	HardLimit, SoftLimit int
	// PreviousCapsuleTokens is the estimate of the capsule now in the model
	// input (0 without one).
	PreviousCapsuleTokens int
	// TokensBefore is the estimated model input now: system and tools, the
	// current capsule, every message from the base on.
	TokensBefore int
	// PathLen is the path length the plan covers.
	PathLen int
}

// Skip is a plan that decided nothing can run; its reason is user-facing.
type Skip struct{ Reason string }

func (s *Skip) Error() string { return s.Reason }

// CannotFitError says a forced compaction cannot bring the request under the
// hard limit; the turn fails closed with these figures (R-G4).
type CannotFitError struct {
	HardLimit, SystemTokens, SmallestTail int
}

func (e *CannotFitError) Error() string {
	return fmt.Sprintf("cannot fit the request under the hard limit of %d tokens: system and tools take %d and the smallest safe tail (the current tool batch) %d; nothing was sent",
		e.HardLimit, e.SystemTokens, e.SmallestTail)
}

// afterSystemTokens is the system and tool tokens of the continuation.
func (r PlanRequest) afterSystemTokens() int {
	if r.AfterSystemTokens > 0 {
		return r.AfterSystemTokens
	}
	return r.SystemTokens
}

// capsuleAllowance is the room a forced compaction reserves for the capsule
// it is about to write, beyond the previous capsule's size: capsules are
// bounded (narrative lists and user messages are capped; artifacts are not,
// which FitForced corrects for).
const capsuleAllowance = 3000

// MakePlan freezes the plan of a compaction: finds the base and the safe cut.
// It returns a *Skip when nothing before the keep window can be compacted
// safely (R-G8) and a *CannotFitError when a forced compaction cannot fit
// even the current tool batch under the hard limit (R-G4).
func MakePlan(t Transcript, c Counter, req PlanRequest) (Plan, error) {
	if !ValidTrigger(req.Trigger) {
		return Plan{}, fmt.Errorf("unknown trigger %q", req.Trigger)
	}
	b, err := FindBase(t)
	if err != nil {
		return Plan{}, err
	}
	p := Plan{PlanRequest: req, Base: b, HardLimit: req.Config.HardLimit(), SoftLimit: req.Config.SoftLimit(), PathLen: t.Len()}
	if b.State != nil {
		p.PreviousCapsuleTokens = c.Count(CapsulePreamble + ModelText(*b.State))
	}
	opt := CutOptions{KeepRecent: req.Config.KeepRecentTokens}
	forced := req.Trigger == TriggerHardLimit || req.Trigger == TriggerContextOverflow
	if forced {
		allowance := req.CapsuleAllowance
		if allowance <= 0 {
			allowance = p.PreviousCapsuleTokens + capsuleAllowance
		}
		opt.MaxKept = p.HardLimit - req.afterSystemTokens() - allowance
		if opt.MaxKept <= 0 {
			return Plan{}, &CannotFitError{HardLimit: p.HardLimit, SystemTokens: req.afterSystemTokens()}
		}
	}
	cut, err := FindCut(t, b, opt)
	if errors.Is(err, ErrCannotFit) {
		small, _ := FindCut(t, b, CutOptions{KeepRecent: 1})
		return Plan{}, &CannotFitError{HardLimit: p.HardLimit, SystemTokens: req.afterSystemTokens(), SmallestTail: small.KeptTokens}
	}
	if err != nil {
		return Plan{}, err
	}
	p.Cut = cut
	p.TokensBefore = req.SystemTokens + p.PreviousCapsuleTokens + cut.CompactTokens + cut.KeptTokens
	if !cut.Compactable() {
		return p, &Skip{Reason: ReasonNothingOld}
	}
	return p, nil
}

// Capsule is a built capsule measured against the plan (R-R2).
type Capsule struct {
	Entry session.Capsule
	// Text is the capsule as the model will see it.
	Text string
	// TokensAfter is the exact measurement of the whole continuation:
	// system and tools, the serialized capsule (artifacts and active skills
	// included) and the kept tail.
	TokensAfter int
}

// BuildCapsule builds the capsule of a plan. With summary == nil it is the
// deterministic capsule, quality degraded when degraded is set (the
// timeout fallback, R-F1) and full otherwise (no model configured: the
// deterministic capsule is then the intended one). With a parsed model
// summary, the summary's narrative is merged with the exact artifacts.
func BuildCapsule(t Transcript, c Counter, p Plan, summary *capsule.State, degraded bool) (Capsule, error) {
	det, err := buildDeterministic(t, p.Base.Start, p.Cut.FirstKept, nil, p.Extras)
	if err != nil {
		return Capsule{}, err
	}
	state := det
	if summary != nil {
		state = MergeSummary(det, *summary)
		if summary.Goal == "" {
			state.Goal = det.Goal
		}
	}
	if p.Base.State != nil {
		if summary != nil && summary.Goal != "" {
			state = Roll(*p.Base.State, state)
		} else {
			state = rollKeepingGoal(*p.Base.State, state)
		}
	}
	state = boundCapsule(workOnly(state), c, p.HardLimit*MaxCapsuleShare/100)
	quality := capsule.QualityFull
	if degraded {
		quality = capsule.QualityDegraded
	}
	text := CapsulePreamble + ModelText(state)
	after := p.afterSystemTokens() + c.Count(text) + p.Cut.KeptTokens
	e := session.Capsule{
		CheckpointID:     p.CheckpointID,
		Trigger:          p.Trigger,
		FirstKeptEntryID: p.Cut.FirstKeptID,
		TokensBefore:     p.TokensBefore,
		TokensAfter:      after,
		Quality:          quality,
		SourceFrom:       idAt(t, p.Base.Start),
		State:            state,
	}
	if p.Cut.FirstKept > 0 {
		e.SourceTo = t.Node(p.Cut.FirstKept - 1).ID
	}
	return Capsule{Entry: e, Text: text, TokensAfter: after}, nil
}

// Accept applies the post-generation gate (R-R2) to a built capsule.
// Whatever the trigger, a continuation that is not smaller than the input it
// replaces is never accepted (R-C7).
func (p Plan) Accept(c Capsule) (bool, string) {
	if p.TokensBefore > 0 && c.TokensAfter >= p.TokensBefore {
		return false, ReasonNotSmaller(c.TokensAfter, p.TokensBefore)
	}
	return PostGenerationROI(p.Trigger, p.TokensBefore, c.TokensAfter, p.Config)
}

// FitForced builds the capsule of a forced plan and, when the measured
// continuation still exceeds the hard limit (a capsule larger than the
// allowance), re-plans once with the capsule's measured size reserved, so a
// forced compaction fits whenever that is possible at all (R-G4). build is
// BuildCapsule with the caller's summary choice bound.
func FitForced(t Transcript, c Counter, p Plan, build func(Plan) (Capsule, error)) (Plan, Capsule, error) {
	cp, err := build(p)
	if err != nil || cp.TokensAfter <= p.HardLimit || (p.Trigger != TriggerHardLimit && p.Trigger != TriggerContextOverflow) {
		return p, cp, err
	}
	req := p.PlanRequest
	req.CapsuleAllowance = c.Count(cp.Text) + 256
	p2, err := MakePlan(t, c, req)
	if err != nil {
		return p, cp, err
	}
	cp2, err := build(p2)
	if err != nil {
		return p2, cp2, err
	}
	if cp2.TokensAfter > p2.HardLimit {
		return p2, cp2, &CannotFitError{HardLimit: p2.HardLimit, SystemTokens: p2.afterSystemTokens(), SmallestTail: p2.Cut.KeptTokens}
	}
	return p2, cp2, nil
}
