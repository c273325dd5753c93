package session

import (
	"fmt"
	"runtime/debug"
)

// Verification is the integrity report of a session file (`soba-lsp
// verify`).
type Verification struct {
	Path    string
	Entries int // entries indexed
	// Problems are integrity problems, one line each naming its line, in
	// the order found: the scan's (the same as resume's, OpenReport), then
	// the payloads' and the links'. At most 1000 are listed; ProblemCount
	// is the total.
	Problems     []string
	ProblemCount int
	// Notes are findings that are not damage (unknown entry types, kept and
	// skipped by readers, R-T3).
	Notes []string
	// Unestimated counts entries the model sees that were stored without a
	// token estimate.
	Unestimated int
}

func (v *Verification) problem(p string) {
	v.ProblemCount++
	if len(v.Problems) < maxProblems {
		v.Problems = append(v.Problems, p)
	}
}

// VerifyFile checks a session file without locking or writing it. Lines are
// classified by the store's own scan, so what verify calls a bad line is
// what resume skips, and what it keeps is what resume keeps. The same scan,
// on all cores, checks each indexed entry's line where it reads it, and the
// entries are checked in file order as they are linked, for what resume
// leaves to the reader: a payload that does not decode (resume keeps the
// entry and leaves it out of the model input), a known type without its
// payload, the session header first, every tool result's call on its path
// and every capsule's firstKeptEntryId on its path. The file is read once;
// memory is the index and the scan's few segments.
func VerifyFile(path string) (*Verification, error) {
	// What the entries' checks find, in entry order, as many as can be
	// listed (the rest are counted): memory stays bounded on a file that
	// is all problems. A capsule whose first kept entry is not indexed yet
	// is a problem either way; whether that entry is later in the file or
	// nowhere is known once the index is whole.
	var found []string
	more := 0
	add := func(problem string) bool {
		if len(found) < maxProblems {
			found = append(found, problem)
			return true
		}
		more++
		return false
	}
	type pendingCapsule struct {
		at int // in found
		i  int32
		c  *Capsule
	}
	var pending []pendingCapsule
	callAt := map[string]int32{} // tool call id → the entry that made it
	onLinked := func(s *Store, i int32, c *lineCheck) {
		c.checkLinks(s, i, callAt, add)
		if c.capsule == nil {
			return
		}
		if j, ok := s.find(c.capsule.FirstKeptEntryID); ok {
			if !s.isAncestor(j, i) {
				add(s.capsuleProblem(i, c.capsule))
			}
		} else if add("") {
			pending = append(pending, pendingCapsule{len(found) - 1, i, c.capsule})
		}
	}
	// The index is kept to the end: a collection while it is built finds
	// nothing to free (as in the offline commands' resume).
	gc := debug.SetGCPercent(-1)
	s, rep, err := openReadOnly(path, Options{CacheEntries: -1, FullScan: true}, onLinked)
	debug.SetGCPercent(gc)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	v := &Verification{Path: path, Entries: rep.Entries}
	for _, p := range rep.Problems {
		v.problem(p)
	}
	v.ProblemCount += rep.ProblemCount - len(rep.Problems)
	metas := s.metas
	if len(metas) > 0 && metas[0].Type != TypeSession {
		v.problem(fmt.Sprintf("line %d: the first entry is %q, not the session header", metas[0].Line, metas[0].Type))
	}
	unknown := 0
	for _, m := range metas {
		if !KnownType(m.Type) {
			if unknown++; unknown <= maxListed {
				v.Notes = append(v.Notes, fmt.Sprintf("line %d: entry %s has type %q, unknown to this version: kept and skipped", m.Line, m.ID, m.Type))
			}
		}
		if MissingEstimate(m.Type, int(m.Tokens)) {
			v.Unestimated++
		}
	}
	if unknown > maxListed {
		v.Notes = append(v.Notes, fmt.Sprintf("%d more entries of unknown types", unknown-maxListed))
	}
	for _, p := range pending {
		found[p.at] = s.capsuleProblem(p.i, p.c)
	}
	for _, p := range found {
		v.problem(p)
	}
	v.ProblemCount += more
	return v, nil
}

// lineCheck is what verify learns of one entry's line where the scan reads
// it: whether it decodes, its type and payload, and the ids its links
// name.
type lineCheck struct {
	err        error // the payload does not decode
	typ        string
	payload    string   // what is wrong with its payload (payloadProblem)
	callIDs    []string // an answer's tool calls
	result     bool     // a tool result
	resultCall string   // the call it answers
	capsule    *Capsule // a capsule's ids (checkpoint, first kept)
}

// checkLine decodes line as verify needs it: with the validating scanner
// for our own layout, the JSON decoder for any other.
func checkLine(line []byte) lineCheck {
	e, ok := quickCheck(line)
	if !ok {
		var err error
		if e, err = DecodeLine(line); err != nil {
			return lineCheck{err: err}
		}
	}
	c := lineCheck{typ: e.Type}
	if !KnownType(e.Type) {
		return c
	}
	c.payload = payloadProblem(&e)
	switch {
	case e.Assistant != nil:
		for _, tc := range e.Assistant.ToolCalls {
			c.callIDs = append(c.callIDs, tc.ID)
		}
	case e.ToolResult != nil:
		c.result, c.resultCall = true, e.ToolResult.ToolCallID
	case e.Capsule != nil:
		if e.Capsule.FirstKeptEntryID != "" {
			c.capsule = &Capsule{CheckpointID: e.Capsule.CheckpointID, FirstKeptEntryID: e.Capsule.FirstKeptEntryID}
		}
	}
	return c
}

// checkLinks gives add the problems of entry i of s, checked as c, whose
// ancestors are all linked: its payload and, for a tool result, its call on
// its path. callAt maps the calls seen so far to their entries.
func (c *lineCheck) checkLinks(s *Store, i int32, callAt map[string]int32, add func(string) bool) {
	m := s.metas[i]
	if c.err != nil {
		add(fmt.Sprintf("line %d: entry %q cannot be decoded: %v; resume keeps it and leaves it out of the model input", m.Line, m.ID, c.err))
		return
	}
	if !KnownType(c.typ) {
		return
	}
	if c.payload != "" {
		add(fmt.Sprintf("line %d: entry %s: %s", m.Line, m.ID, c.payload))
	}
	for _, id := range c.callIDs {
		callAt[id] = i
	}
	if c.result {
		j, ok := callAt[c.resultCall]
		switch {
		case !ok:
			add(fmt.Sprintf("line %d: tool result %s: no tool call %q before it", m.Line, m.ID, c.resultCall))
		case !s.isAncestor(j, i):
			cl := s.metas[j]
			add(fmt.Sprintf("line %d: tool result %s: its call %q (entry %s, line %d) is not on its path", m.Line, m.ID, c.resultCall, cl.ID, cl.Line))
		}
	}
}

// capsuleProblem checks that capsule c of entry i keeps an entry on its
// path, with the index as it is; "" when it does.
func (s *Store) capsuleProblem(i int32, c *Capsule) string {
	j, ok := s.find(c.FirstKeptEntryID)
	if ok && s.isAncestor(j, i) {
		return ""
	}
	where := "is not in the file"
	if ok {
		where = "is not on its path"
	}
	m := s.metas[i]
	return fmt.Sprintf("line %d: capsule %s (entry %s): firstKeptEntryId %s %s", m.Line, c.CheckpointID, m.ID, c.FirstKeptEntryID, where)
}

// isAncestor reports whether entry a is a strict ancestor of entry i, by
// walking up from i only as far as a's depth.
func (s *Store) isAncestor(a, i int32) bool {
	d := s.metas[a].Depth
	for j := s.parents[i]; j >= 0; j = s.parents[j] {
		if j == a {
			return true
		}
		if s.metas[j].Depth <= d {
			return false
		}
	}
	return false
}

// payloadProblem says what is wrong with a known entry's payload, or "".
func payloadProblem(e *Entry) string {
	if !hasPayload(e, e.Type) {
		return fmt.Sprintf("%s entry without its %s payload", e.Type, e.Type)
	}
	return ""
}
