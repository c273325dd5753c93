package session

import (
	"fmt"
	"runtime"
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

// verifyChunkBytes bounds the lines decoded at a time: verify's memory is
// the index and one chunk, whatever the session's length.
const verifyChunkBytes = 4 << 20

// VerifyFile checks a session file without locking or writing it. Lines are
// classified by the store's own scan, so what verify calls a bad line is
// what resume skips, and what it keeps is what resume keeps. Then every
// indexed entry is decoded once, in file order and in parallel chunks, for
// the checks resume leaves to the reader: a payload that does not decode
// (resume keeps the entry and leaves it out of the model input), a known
// type without its payload, the session header first, every tool result's
// call on its path, every capsule's firstKeptEntryId on its path.
func VerifyFile(path string) (*Verification, error) {
	// The index is kept to the end: a collection while it is built finds
	// nothing to free (as in the offline commands' resume).
	gc := debug.SetGCPercent(-1)
	s, rep, err := OpenReadOnly(path, Options{CacheEntries: -1, FullScan: true})
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
		if MissingEstimate(m.Type, m.Tokens) {
			v.Unestimated++
		}
	}
	if unknown > maxListed {
		v.Notes = append(v.Notes, fmt.Sprintf("%d more entries of unknown types", unknown-maxListed))
	}

	callAt := map[string]int32{} // tool call id → the entry that made it
	// Chunks of consecutive entries up to verifyChunkBytes (at least one
	// entry each), each read in one pass over its byte range. The cores
	// take one chunk each, read and validate it; then the chunks' entries
	// are checked in file order (tool calls before their results).
	var bounds []int
	for start := 0; start < len(metas); {
		end := start + 1
		for end < len(metas) && metas[end].Offset+int64(metas[end].Len)-metas[start].Offset <= verifyChunkBytes {
			end++
		}
		bounds = append(bounds, start)
		start = end
	}
	bounds = append(bounds, len(metas))
	type chunkResult struct {
		decoded []Entry
		errs    []error
		err     error
		buf     *[]byte
	}
	n := len(bounds) - 1
	workers := runtime.GOMAXPROCS(0)
	// The cores read and check chunks ahead while this goroutine checks
	// the links of the chunks before, in order; at most workers+1 chunks
	// are read and not yet linked, so memory stays bounded.
	results := make([]chan chunkResult, n)
	for k := range results {
		results[k] = make(chan chunkResult, 1)
	}
	bufs := make(chan *[]byte, workers+1)
	for range workers + 1 {
		bufs <- new([]byte)
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for k := range n {
			var pb *[]byte
			select {
			case pb = <-bufs:
			case <-done:
				return
			}
			go func() {
				chunk := metas[bounds[k]:bounds[k+1]]
				from, to := chunk[0].Offset, chunk[len(chunk)-1].Offset+int64(chunk[len(chunk)-1].Len)
				if int64(cap(*pb)) < to-from {
					*pb = make([]byte, to-from)
				}
				buf := (*pb)[:to-from]
				if _, err := s.f.ReadAt(buf, from); err != nil {
					results[k] <- chunkResult{err: fmt.Errorf("%s: read at offset %d: %w", path, from, err), buf: pb}
					return
				}
				r := chunkResult{decoded: make([]Entry, len(chunk)), errs: make([]error, len(chunk)), buf: pb}
				for i, m := range chunk {
					line := buf[m.Offset-from : m.Offset-from+int64(m.Len)]
					var ok bool
					if r.decoded[i], ok = quickCheck(line); !ok {
						r.decoded[i], r.errs[i] = DecodeLine(line)
					}
				}
				results[k] <- r
			}()
		}
	}()
	for k := range n {
		r := <-results[k]
		bufs <- r.buf
		if r.err != nil {
			return nil, r.err
		}
		for i := range r.decoded {
			v.checkEntry(s, int32(bounds[k]+i), &r.decoded[i], r.errs[i], callAt)
		}
	}
	return v, nil
}

// checkEntry checks entry i of s, decoded as e (or not: err).
func (v *Verification) checkEntry(s *Store, i int32, e *Entry, err error, callAt map[string]int32) {
	m := s.metas[i]
	if err != nil {
		v.problem(fmt.Sprintf("line %d: entry %q cannot be decoded: %v; resume keeps it and leaves it out of the model input", m.Line, m.ID, err))
		return
	}
	if !KnownType(e.Type) {
		return
	}
	if why := payloadProblem(e); why != "" {
		v.problem(fmt.Sprintf("line %d: entry %s: %s", m.Line, m.ID, why))
	}
	switch {
	case e.Assistant != nil:
		for _, c := range e.Assistant.ToolCalls {
			callAt[c.ID] = i
		}
	case e.ToolResult != nil:
		id := e.ToolResult.ToolCallID
		j, ok := callAt[id]
		switch {
		case !ok:
			v.problem(fmt.Sprintf("line %d: tool result %s: no tool call %q before it", m.Line, m.ID, id))
		case !s.isAncestor(j, i):
			c := s.metas[j]
			v.problem(fmt.Sprintf("line %d: tool result %s: its call %q (entry %s, line %d) is not on its path", m.Line, m.ID, id, c.ID, c.Line))
		}
	case e.Capsule != nil:
		fk := e.Capsule.FirstKeptEntryID
		if fk == "" {
			return
		}
		j, ok := s.find(fk)
		if ok && s.isAncestor(j, i) {
			return
		}
		where := "is not in the file"
		if ok {
			where = "is not on its path"
		}
		v.problem(fmt.Sprintf("line %d: capsule %s (entry %s): firstKeptEntryId %s %s", m.Line, e.Capsule.CheckpointID, m.ID, fk, where))
	}
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
