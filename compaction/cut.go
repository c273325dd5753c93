package compaction

import (
	"errors"

	"github.com/soba-agent/soba-lsp/session"
)

// Cut is where a compaction splits the model input: entries of the path in
// [Base.Start, FirstKept) are summarised into the capsule; entries from
// FirstKept to the leaf are kept verbatim (R-M1, R-M3).
type Cut struct {
	// FirstKept is the path index of the first kept entry; equal to the
	// path length when nothing is kept.
	FirstKept int
	// FirstKeptID is that entry's id ("" when nothing is kept).
	FirstKeptID string
	// KeptTokens is the estimate of the kept tail's messages.
	KeptTokens int
	// CompactTokens is the estimate of the messages that the capsule
	// replaces: [Base.Start, FirstKept).
	CompactTokens int
	// Shrunk is true when a forced compaction kept less than
	// keepRecentTokens to fit the hard limit.
	Shrunk bool
}

// Compactable reports whether the cut leaves anything to summarise.
func (c Cut) Compactable() bool { return c.CompactTokens > 0 }

// ErrCannotFit is returned when even the smallest safe tail (the current
// tool batch) does not fit the allowed size: the caller fails the turn and
// sends nothing (R-G4).
var ErrCannotFit = errors.New("the current tool batch alone exceeds the hard limit")

// CutOptions set the keep window.
type CutOptions struct {
	// KeepRecent is the tail to keep, about (keepRecentTokens).
	KeepRecent int
	// MaxKept, when positive, bounds the kept tail (a forced compaction's
	// room under the hard limit); the window shrinks down to the current tool
	// batch to fit, and ErrCannotFit reports when even that cannot.
	MaxKept int
}

// cutCandidate is a safe place to start the kept tail.
type cutCandidate struct {
	index, kept int
	user        bool
}

// FindCut walks back from the leaf, keeping about KeepRecent tokens, and
// returns a cut that never separates a tool call from its results and never
// starts the tail inside a tool batch (R-M3); a user-message boundary is
// preferred when one is near. It loads only the entries it walks over.
func FindCut(t Transcript, b Base, opt CutOptions) (Cut, error) {
	n := t.Len()
	target := opt.KeepRecent
	bounded := opt.MaxKept > 0
	if bounded && opt.MaxKept < target {
		target = opt.MaxKept
	}
	slack := target / 4
	// needCall holds tool-call ids whose result lies after the scan position
	// and whose call has not been met yet: a cut here would orphan them.
	needCall := map[string]struct{}{}
	var cands []cutCandidate
	kept, total := 0, 0
	done := false
	for i := n - 1; i >= b.Start; i-- {
		nd := t.Node(i)
		if i == b.CapsuleIndex || !isModelEntry(nd.Type) {
			continue
		}
		total += nd.Tokens
		if done {
			continue // only summing what the capsule replaces
		}
		e, err := loadEntry(t, i)
		if err != nil {
			return Cut{}, err
		}
		kept += nd.Tokens
		switch {
		case e.ToolResult != nil:
			needCall[e.ToolResult.ToolCallID] = struct{}{}
		case e.Assistant != nil:
			for _, c := range e.Assistant.ToolCalls {
				delete(needCall, c.ID)
			}
		}
		if nd.Type != session.TypeToolResult && len(needCall) == 0 {
			cands = append(cands, cutCandidate{index: i, kept: kept, user: nd.Type == session.TypeUser})
		}
		if kept > target+slack && len(cands) > 0 && (!bounded || cands[0].kept <= opt.MaxKept) {
			done = true
		}
	}
	if len(cands) == 0 {
		// No safe start at all (a tail that is one unfinished batch):
		// keep everything.
		return Cut{FirstKept: b.Start, FirstKeptID: idAt(t, b.Start), KeptTokens: total}, nil
	}
	choice, ok := chooseCut(cands, target, slack, opt.MaxKept)
	if !ok {
		return Cut{}, ErrCannotFit
	}
	c := Cut{FirstKept: choice.index, FirstKeptID: t.Node(choice.index).ID, KeptTokens: choice.kept, CompactTokens: total - choice.kept}
	c.Shrunk = bounded && choice.kept < opt.KeepRecent && c.CompactTokens > 0 && opt.MaxKept < opt.KeepRecent
	// Nothing before the cut is a message: nothing to compact.
	if c.CompactTokens == 0 {
		c.FirstKept, c.FirstKeptID = b.Start, idAt(t, b.Start)
	}
	return c, nil
}

// chooseCut picks the candidate (ordered leaf-first, kept ascending): the
// smallest kept ≥ target, else the largest; then the nearest user boundary
// within slack of it. With maxKept > 0 only candidates within it qualify.
func chooseCut(cands []cutCandidate, target, slack, maxKept int) (cutCandidate, bool) {
	if maxKept > 0 {
		j := 0
		for j < len(cands) && cands[j].kept <= maxKept {
			j++
		}
		cands = cands[:j]
		if len(cands) == 0 {
			return cutCandidate{}, false
		}
	}
	p := len(cands) - 1
	for i, c := range cands {
		if c.kept >= target {
			p = i
			break
		}
	}
	primary := cands[p]
	if primary.user {
		return primary, true
	}
	best, bestDist := -1, slack+1
	for i, c := range cands {
		if !c.user {
			continue
		}
		d := c.kept - primary.kept
		if d < 0 {
			d = -d
		}
		// A user boundary that keeps less than asked for is only taken when
		// the primary itself already keeps less (a bounded window).
		if d <= slack && d < bestDist && (c.kept >= target || primary.kept < target || c.kept >= primary.kept) {
			best, bestDist = i, d
		}
	}
	if best >= 0 {
		return cands[best], true
	}
	return primary, true
}

func idAt(t Transcript, i int) string {
	if i < t.Len() {
		return t.Node(i).ID
	}
	return ""
}
