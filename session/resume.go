package session

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/conc/pool"
)

// maxListed bounds the problems an OpenReport lists one by one; the counts
// stay exact. A damaged or foreign file must not turn resume into a memory
// hog.
const maxListed = 100

// OpenReport says what Open found besides the entries themselves. None of it
// is fatal (R-T3, R-T5).
type OpenReport struct {
	Path    string
	Entries int // entries indexed
	// Torn is the incomplete last line (no trailing newline), ignored and left
	// on disk as is; nil when the file ends cleanly.
	Torn *TornLine
	// BadLines are complete lines that are not entries (not JSON, no id or
	// type, a duplicate id, a healed torn line), skipped. At most 100 are
	// listed; BadLineCount is the total.
	BadLines     []BadLine
	BadLineCount int
	// UnknownTypes counts indexed entries by type for types this version does
	// not know; they are kept in the tree and skipped by readers.
	UnknownTypes map[string]int
	// MissingParents lists entries whose parentId names no earlier entry
	// (at most 100; MissingParentCount is the total); they are kept as roots.
	MissingParents     []string
	MissingParentCount int
	// Estimated counts entries the model sees that were stored without a
	// token estimate (hand-written or foreign lines): Open estimated them
	// with Options.Estimate, in the index only, since the file is
	// append-only; they are estimated again on every Open.
	Estimated int
	// Problems are the damage above, one line each in file order, naming
	// its line as `soba-lsp verify` prints it (at most 1000 listed;
	// ProblemCount is the total). Resume and verify classify lines with
	// this one scan, so they agree on every line.
	Problems     []string
	ProblemCount int
	// Duration is the time the scan took.
	Duration time.Duration
	// FromIndexFile says the index came from the session's index file, not
	// from reading the transcript (indexfile.go).
	FromIndexFile bool
}

// TornLine is the position of a torn last line.
type TornLine struct {
	Offset int64
	Bytes  int
	Line   int
}

// maxProblems bounds the problems a report lists as text; ProblemCount
// stays exact.
const maxProblems = 1000

// problem lists one problem found by the scan, in the words verify prints.
func (r *OpenReport) problem(p string) {
	r.ProblemCount++
	if len(r.Problems) < maxProblems {
		r.Problems = append(r.Problems, p)
	}
}

// BadLine is a skipped line: its 1-based line number, offset and reason.
type BadLine struct {
	Line   int
	Offset int64
	Err    error
}

// Clean reports whether the file held nothing but entries of known types.
func (r *OpenReport) Clean() bool {
	return r.Torn == nil && r.BadLineCount == 0 && len(r.UnknownTypes) == 0 && r.MissingParentCount == 0
}

// String summarises the report in one line for logs.
func (r *OpenReport) String() string {
	parts := []string{fmt.Sprintf("%s: %d entries", r.Path, r.Entries)}
	if r.Torn != nil {
		parts = append(parts, fmt.Sprintf("torn last line at offset %d (%d bytes) ignored", r.Torn.Offset, r.Torn.Bytes))
	}
	if r.BadLineCount > 0 {
		s := fmt.Sprintf("%d bad lines skipped", r.BadLineCount)
		if len(r.BadLines) > 0 {
			b := r.BadLines[0]
			s += fmt.Sprintf(" (first: line %d: %v)", b.Line, b.Err)
		}
		parts = append(parts, s)
	}
	for t, n := range r.UnknownTypes {
		parts = append(parts, fmt.Sprintf("%d entries of unknown type %q kept and skipped", n, t))
	}
	if r.MissingParentCount > 0 {
		parts = append(parts, fmt.Sprintf("%d entries with a missing parent", r.MissingParentCount))
	}
	if r.Estimated > 0 {
		parts = append(parts, fmt.Sprintf("%d entries stored without a token estimate, estimated", r.Estimated))
	}
	return strings.Join(parts, "; ")
}

// resume indexes the file: one pass, header fields only, payloads left on
// disk. Memory is the index (about 150 bytes an entry) plus one read buffer.
func (s *Store) resume(f *os.File) (*OpenReport, error) {
	start := time.Now()
	rep := &OpenReport{Path: s.path}
	lineNo := 0
	bad := func(off int64, err error, problem string) {
		rep.BadLineCount++
		if len(rep.BadLines) < maxListed {
			rep.BadLines = append(rep.BadLines, BadLine{Line: lineNo, Offset: off, Err: err})
		}
		rep.problem(problem)
	}
	if s.readIndexFile(f, rep) {
		s.finishResume()
		rep.Duration = time.Since(start)
		return rep, nil
	}
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	// The lines are read, split and their headers parsed on all cores
	// (scanSegments); here, in file order, they are numbered and linked
	// into the index.
	var tornOff int64
	var tornLen int
	prevID := "" // the id of the previous line with a header
	err := s.scanSegments(f, size, func(seg *segment) error {
		if seg.err != nil {
			return seg.err // os.File's errors and the scan's name the path already
		}
		if seg.eof {
			tornOff, tornLen = seg.tornOff, seg.tornLen
		}
		if cap(s.metas) == 0 && len(seg.recs) > 0 {
			// The index's size, from the first segment's lines: exact for
			// a file of one segment, within a few percent for the rest,
			// so the index is neither regrown nor much too large.
			guess := len(seg.recs) + 16
			if last := seg.recs[len(seg.recs)-1]; !seg.eof && last.off > seg.startOff {
				guess = int(float64(len(seg.recs))*float64(size)/float64(last.off+int64(last.n)+1-seg.startOff)*1.05) + 16
			}
			s.metas = make([]Meta, 0, guess)
			s.parents = make([]int32, 0, guess)
			s.index = make(map[string]int32, guess)
		}
		for k := range seg.recs {
			r := &seg.recs[k]
			lineNo++
			if r.blank {
				continue
			}
			if r.err != nil {
				bad(r.off, r.err, fmt.Sprintf("line %d: not an entry: %v", lineNo, r.err))
				continue
			}
			parentID := r.parent
			if r.parentPrev {
				parentID = prevID
			}
			prevID = r.id
			if r.n > MaxEntryBytes {
				bad(r.off, fmt.Errorf("a line of %d bytes, over the %d an entry may have", r.n, MaxEntryBytes),
					fmt.Sprintf("line %d: %d bytes, over the %d an entry may have: skipped", lineNo, r.n, MaxEntryBytes))
				continue
			}
			m := Meta{ID: r.id, Type: r.typ, Offset: r.off, Len: int32(r.n), Tokens: clamp32(r.tokens), Line: clamp32(lineNo),
				MayHaveUsage: r.mayHaveUsage, Facts: r.facts}
			m.setTimestamp(r.ts)
			// One map operation per entry: insert, and learn from the size
			// whether the id was there already (rare; then the old index is
			// restored).
			before := len(s.index)
			s.index[m.ID] = int32(len(s.metas))
			if len(s.index) == before {
				first := s.firstIndexOf(m.ID)
				s.index[m.ID] = first
				bad(r.off, fmt.Errorf("duplicate entry id %q", m.ID),
					fmt.Sprintf("line %d: duplicate entry id %s (first at line %d): skipped", lineNo, m.ID, s.metas[first].Line))
				continue
			}
			parent := int32(-1)
			if r.hasParent {
				// Our writer hangs almost every entry from the one before
				// it: try that before the map.
				last := int32(len(s.metas) - 1)
				if last >= 0 && s.metas[last].ID == parentID {
					parent = last
				} else if i, ok := s.index[parentID]; ok && int(i) < len(s.metas) {
					parent = i // (an entry naming itself as parent is not its own parent)
				}
				if parent >= 0 {
					m.Depth = s.metas[parent].Depth + 1
				} else {
					if s.dangling == nil {
						s.dangling = map[int32]string{}
					}
					s.dangling[int32(len(s.metas))] = parentID
					rep.MissingParentCount++
					rep.problem(fmt.Sprintf("line %d: entry %s: parent %s is not earlier in the file", lineNo, m.ID, parentID))
					if len(rep.MissingParents) < maxListed {
						rep.MissingParents = append(rep.MissingParents, m.ID)
					}
				}
			}
			if !knownTypes[m.Type] {
				if rep.UnknownTypes == nil {
					rep.UnknownTypes = map[string]int{}
				}
				rep.UnknownTypes[m.Type]++
			}
			s.metas = append(s.metas, m)
			s.parents = append(s.parents, parent)
			s.mark(len(s.metas) - 1)
			if s.onLinked != nil {
				s.onLinked(s, int32(len(s.metas)-1), &seg.checks[k])
			}
		}
		return nil
	})
	if err != nil {
		return rep, err
	}
	if err := s.estimateMissing(f, rep); err != nil {
		return rep, err
	}
	s.size = tornOff + int64(tornLen)
	s.lines = lineNo
	if tornLen > 0 {
		rep.Torn = &TornLine{Offset: tornOff, Bytes: tornLen, Line: lineNo + 1}
		rep.problem(fmt.Sprintf("line %d: torn last line (%d bytes without a newline): ignored", lineNo+1, tornLen))
		s.heal = true
	}
	rep.Entries = len(s.metas)
	// Only a file that is all entries of known types, each with its
	// estimate, gets an index file: resume from it reports nothing, and
	// must have nothing to report.
	s.cleanIndex = rep.Clean() && rep.Estimated == 0 && rep.ProblemCount == 0
	s.finishResume()
	rep.Duration = time.Since(start)
	return rep, nil
}

// finishResume sets the leaf path to the last entry and reads the session
// header, from the index however it was made.
func (s *Store) finishResume() {
	if len(s.metas) == 0 {
		return
	}
	if last := len(s.metas) - 1; int(s.metas[last].Depth) == last {
		// The leaf has every entry as an ancestor: the session is one
		// line of entries and its path is the index itself, shared
		// (capacity clipped, so an append copies it) rather than
		// copied.
		s.leafPath = s.metas[: last+1 : last+1]
	} else {
		s.leafPath = s.pathThrough(int32(last))
	}
	if first := s.metas[0]; first.Type == TypeSession {
		if e, err := s.Load(first.ID); err == nil && e.Session != nil {
			s.header = e.Session
		}
	}
}

// firstIndexOf finds the entry that holds id by a linear scan; only resume's
// duplicate-id path uses it.
func (s *Store) firstIndexOf(id string) int32 {
	for i, m := range s.metas {
		if m.ID == id {
			return int32(i)
		}
	}
	return -1
}

// estimateMissing gives the entries stored without a token estimate one,
// decoding just those lines (in parallel: a foreign file may have nothing
// but), so that budgets and compaction triggers never see a message as
// free. Our writer stores an estimate in every entry, so this costs nothing
// on our own files.
func (s *Store) estimateMissing(f *os.File, rep *OpenReport) error {
	if s.opt.Estimate == nil {
		return nil
	}
	var missing []int
	for i := range s.metas {
		if MissingEstimate(s.metas[i].Type, int(s.metas[i].Tokens)) {
			missing = append(missing, i)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var estimated atomic.Int32
	workers := runtime.GOMAXPROCS(0)
	per := (len(missing) + workers - 1) / workers
	p := pool.New().WithErrors().WithMaxGoroutines(workers)
	for start := 0; start < len(missing); start += per {
		chunk := missing[start:min(start+per, len(missing))]
		p.Go(func() error {
			var line []byte
			for _, i := range chunk {
				m := &s.metas[i] // each index is one goroutine's alone
				line = slices.Grow(line[:0], int(m.Len))[:m.Len]
				if _, err := f.ReadAt(line, m.Offset); err != nil {
					return fmt.Errorf("session %s: read entry %q at offset %d: %w", s.path, m.ID, m.Offset, err)
				}
				e, err := DecodeLine(line)
				if err != nil {
					continue // its header decoded; a payload that does not stays at 0
				}
				m.Tokens = clamp32(s.opt.Estimate(&e))
				estimated.Add(1)
			}
			return nil
		})
	}
	err := p.Wait()
	rep.Estimated = int(estimated.Load())
	return err
}
