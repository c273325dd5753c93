package session

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"time"

	"github.com/sourcegraph/conc/panics"

	"github.com/soba-agent/soba-lsp/internal/background"
)

// lineRec is what the first, parallel pass of resume learns of one line by
// itself: its place, its header (or why it has none) and the payload facts
// the index keeps. The second pass, in file order, numbers the lines and
// links each entry into the index.
type lineRec struct {
	off    int64
	n      int  // length without the newline (and without a CR of CRLF)
	blank  bool // empty or only white space: counted, not an entry
	err    error
	id     string
	typ    string // interned
	parent string // "" for none or when parentPrev
	// parentPrev says the parent is the id of the previous line with a
	// header (our writer hangs almost every entry from the one before it):
	// the second pass then shares that string instead of a copy.
	parentPrev, hasParent bool
	ts                    time.Time
	tokens                int
	mayHaveUsage          bool
	facts                 *Facts
}

// scanSegmentBytes is the part of the file one core indexes at a time; a
// line belongs to the segment it starts in. Files smaller than two
// segments are scanned on the calling goroutine. (A variable so that tests
// can cut small files into many segments.)
var scanSegmentBytes int64 = 16 << 20

// segment is the outcome of scanning one segment.
type segment struct {
	recs []lineRec
	// checks[k] is what verify learns of the line of recs[k] (onLinked
	// set only).
	checks []lineCheck
	// eof says the scan reached the end of the file: tornOff and tornLen
	// are then the bytes after the last newline.
	eof              bool
	tornOff          int64
	tornLen          int
	err              error
	endOff, startOff int64
}

// add appends a line's record and, when lines are checked, its check.
func (seg *segment) add(r lineRec, c lineCheck) {
	seg.recs = append(seg.recs, r)
	if seg.checks != nil {
		seg.checks = append(seg.checks, c)
	}
}

// errSegmentEnd stops a segment's scan at the first line of the next one.
var errSegmentEnd = errors.New("end of segment")

// scanSegment indexes the lines of f that start in [from, to) (to < 0: to
// the end of the file, wherever it is by then).
func (s *Store) scanSegment(f *os.File, from, to int64, recs []lineRec, checks []lineCheck) segment {
	seg := segment{recs: recs[:0], checks: checks[:0]}
	start := from
	if from > 0 {
		// The segment's first line starts after the first newline at or
		// after from-1.
		var err error
		if start, err = nextLineStart(f, from-1); err != nil {
			seg.err = fmt.Errorf("session %s: %w", s.path, err)
			return seg
		}
		if start < 0 {
			return seg // no line starts in it or after it
		}
	}
	seg.startOff = start
	var long []byte
	// readLong reads the whole of a line longer than the scan's buffer
	// (without the CR of a CRLF) into long.
	readLong := func(ln rawLine) ([]byte, error) {
		if cap(long) < ln.n {
			long = make([]byte, ln.n)
		}
		whole := long[:ln.n]
		if _, err := f.ReadAt(whole, ln.off); err != nil {
			return nil, fmt.Errorf("session %s: read at offset %d: %w", s.path, ln.off, err)
		}
		return bytes.TrimSuffix(whole, []byte("\r")), nil
	}
	var prevID []byte // the previous line's id in this segment, when it had a header
	var prevIDStr string
	tornOff, tornLen, err := scanLines(io.NewSectionReader(f, start, math.MaxInt64-start), func(ln rawLine) error {
		ln.off += start
		if to >= 0 && ln.off >= to {
			return errSegmentEnd
		}
		r := lineRec{off: ln.off, n: ln.n}
		data, last := ln.data, ln.last
		if ln.whole {
			if last == '\r' { // a foreign writer's CRLF
				data = data[:len(data)-1]
				r.n--
				if len(data) > 0 {
					last = data[len(data)-1]
				} else {
					last = 0
				}
			}
			if len(bytes.TrimSpace(data)) == 0 {
				r.blank = true
				seg.add(r, lineCheck{})
				return nil
			}
		}
		h, ok := fastHeader(data, last)
		if !ok {
			whole := data
			if !ln.whole {
				var err error
				if whole, err = readLong(ln); err != nil {
					return err
				}
				r.n = len(whole)
			}
			if h, r.err = slowHeader(whole); r.err != nil {
				seg.add(r, lineCheck{})
				return nil
			}
		}
		r.typ = internType(string(h.typ))
		if prevID != nil && bytes.Equal(h.id, prevID) {
			r.id = prevIDStr // a duplicate of the line before: the second pass reports it
		} else {
			r.id = string(h.id)
		}
		r.ts, r.tokens = h.ts, h.tokens
		if len(h.parent) > 0 {
			r.hasParent = true
			if prevID != nil && bytes.Equal(h.parent, prevID) {
				r.parentPrev = true
			} else {
				r.parent = string(h.parent)
			}
		}
		prevID = append(prevID[:0], h.id...)
		prevIDStr = r.id
		whole := data
		if !ln.whole {
			whole = nil
		}
		if r.typ == TypeAssistant {
			// Answers are many and mostly carry usage: they are not decoded
			// here; the reader of the newest usage decodes newest first.
			r.mayHaveUsage = whole == nil || mayName(whole, "usage")
		} else if factsNeeded(r.typ, whole) {
			if whole == nil {
				var err error
				if whole, err = readLong(ln); err != nil {
					return err
				}
			}
			if e, err := DecodeLine(whole); err == nil {
				r.facts = FactsOf(&e)
			} // else: reported when the entry is first loaded (LoadLenient)
		}
		var c lineCheck
		if s.onLinked != nil {
			if whole == nil {
				var err error
				if whole, err = readLong(ln); err != nil {
					return err
				}
			}
			c = checkLine(whole)
		}
		seg.add(r, c)
		return nil
	})
	switch {
	case errors.Is(err, errSegmentEnd):
	case err != nil:
		seg.err = err
	default:
		seg.eof, seg.tornOff, seg.tornLen = true, tornOff+start, tornLen
	}
	return seg
}

// nextLineStart is the offset after the first newline at or after off, -1
// when there is none.
func nextLineStart(f *os.File, off int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for {
		n, err := f.ReadAt(buf, off)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return off + int64(i) + 1, nil
		}
		off += int64(n)
		if err == io.EOF || (err == nil && n == 0) {
			return -1, nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// scanSegments runs scanSegment over the file, in parallel on all cores
// for a file of several segments, and hands each segment to use in file
// order. Memory is bounded: a segment is scanned at most a few segments
// ahead of the one in use. It stops at use's first error.
func (s *Store) scanSegments(f *os.File, size int64, use func(*segment) error) error {
	workers := runtime.GOMAXPROCS(0)
	checks := func(n int64) []lineCheck {
		if s.onLinked == nil {
			return nil
		}
		return make([]lineCheck, 0, n)
	}
	if size < 2*scanSegmentBytes || workers < 2 {
		seg := s.scanSegment(f, 0, -1, make([]lineRec, 0, size/512+16), checks(size/512+16))
		return use(&seg)
	}
	n := int((size + scanSegmentBytes - 1) / scanSegmentBytes)
	results := make([]chan segment, n)
	for k := range results {
		results[k] = make(chan segment, 1)
	}
	slots := make(chan struct{}, workers+1) // segments scanned or scanning, not yet used
	// The records of a used segment are reused for a later one; lines
	// average over 1 KiB, so one allocation each usually does.
	type buffers struct {
		recs   []lineRec
		checks []lineCheck
	}
	free := make(chan buffers, workers+2)
	for range workers + 1 {
		free <- buffers{make([]lineRec, 0, scanSegmentBytes/1024), checks(scanSegmentBytes / 1024)}
	}
	done := make(chan struct{})
	defer close(done)
	background.Go(func() {
		for k := range n {
			select {
			case slots <- struct{}{}:
			case <-done:
				return
			}
			from, to := int64(k)*scanSegmentBytes, int64(k+1)*scanSegmentBytes
			if k == n-1 {
				to = -1 // the last one reads to the end, as it is by then
			}
			var b buffers
			select {
			case b = <-free:
			case <-done:
				return
			}
			background.Go(func() { results[k] <- s.scanSegment(f, from, to, b.recs, b.checks) },
				func(r *panics.Recovered) { results[k] <- segment{err: background.Error(r)} })
		}
	}, nil)
	for k := range n {
		seg := <-results[k]
		<-slots
		if err := use(&seg); err != nil {
			return err
		}
		clear(seg.recs) // drop the strings for the collector
		clear(seg.checks)
		free <- buffers{seg.recs[:0], seg.checks[:0]}
	}
	return nil
}
