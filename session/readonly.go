package session

import (
	"bytes"
	"fmt"
	"runtime"

	"github.com/sourcegraph/conc/pool"
)

// Scan is a session file read without the Store: every line
// decoded and held in memory, nothing locked, nothing written.
//
// Deprecated: the offline commands read through OpenReadOnly (the server's
// own index and path) and VerifyFile (streaming, resume's classification of
// lines); Scan remains for tests that want every entry in memory.
type Scan struct {
	Path    string
	Entries []Entry        // indexed entries in file order
	Line    []int          // Entries[i]'s 1-based line
	Index   map[string]int // entry id → its index in Entries
	Parent  []int          // index of Entries[i]'s parent, -1 for a root or a missing parent
	// Problems are integrity problems, one line each with its line number.
	Problems []string
	// Notes are findings that are not damage (unknown entry types, kept
	// and skipped by readers, R-T3).
	Notes []string
	// Unestimated counts entries the model sees that were stored without a
	// token estimate.
	Unestimated int
}

// ScanFile reads and indexes a session file as the Store's resume
// does: a torn last line is ignored, lines that are not entries and
// duplicate ids are skipped, an entry whose parent is not earlier in the
// file is kept as a root, and the leaf is the last indexed entry. With est
// set, entries stored without a token estimate get one, as the store's
// Open gives them (MissingEstimate); unestimated counts them.
func ScanFile(path string, est func(*Entry) int) (*Scan, error) {
	data, err := readSessionFile(path)
	if err != nil {
		return nil, err
	}
	tf := &Scan{Path: path, Index: map[string]int{}}
	// Split, decode every line in parallel (decoding is the cost), then
	// index in file order exactly as the store's resume does.
	type rawLine struct {
		no   int
		line []byte
		e    Entry
		err  error
		// unestimated: stored without a token estimate.
		unestimated bool
	}
	var raws []rawLine
	torn := ""
	no := 0
	for len(data) > 0 {
		no++
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			torn = fmt.Sprintf("line %d: torn last line (%d bytes without a newline): ignored", no, len(data))
			break
		}
		line := bytes.TrimSuffix(data[:i], []byte("\r"))
		data = data[i+1:]
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		raws = append(raws, rawLine{no: no, line: line})
	}
	workers := runtime.GOMAXPROCS(0)
	per := (len(raws) + workers - 1) / max(workers, 1)
	dec := pool.New().WithMaxGoroutines(workers)
	for start := 0; start < len(raws); start += per {
		chunk := raws[start:min(start+per, len(raws))]
		dec.Go(func() {
			for k := range chunk {
				r := &chunk[k]
				r.e, r.err = DecodeLine(r.line)
				if r.err == nil && MissingEstimate(r.e.Type, r.e.Tokens) {
					r.unestimated = true
					if est != nil {
						r.e.Tokens = est(&r.e)
					}
				}
			}
		})
	}
	dec.Wait()
	for _, r := range raws {
		no, e, err := r.no, r.e, r.err
		switch {
		case err != nil:
			tf.Problems = append(tf.Problems, fmt.Sprintf("line %d: not an entry: %v", no, err))
			continue
		case e.ID == "":
			tf.Problems = append(tf.Problems, fmt.Sprintf(`line %d: entry has no "id"`, no))
			continue
		case e.Type == "":
			tf.Problems = append(tf.Problems, fmt.Sprintf(`line %d: entry %s has no "type"`, no, e.ID))
			continue
		}
		if j, dup := tf.Index[e.ID]; dup {
			tf.Problems = append(tf.Problems, fmt.Sprintf("line %d: duplicate entry id %s (first at line %d): skipped", no, e.ID, tf.Line[j]))
			continue
		}
		p := -1
		if pid := e.Parent(); pid != "" {
			if j, ok := tf.Index[pid]; ok {
				p = j
			} else {
				tf.Problems = append(tf.Problems, fmt.Sprintf("line %d: entry %s: parent %s is not earlier in the file", no, e.ID, pid))
			}
		}
		if !KnownType(e.Type) {
			tf.Notes = append(tf.Notes, fmt.Sprintf("line %d: entry %s has type %q, unknown to this version: kept and skipped", no, e.ID, e.Type))
		} else if why := payloadProblem(&e); why != "" {
			tf.Problems = append(tf.Problems, fmt.Sprintf("line %d: entry %s: %s", no, e.ID, why))
		}
		if r.unestimated {
			tf.Unestimated++
		}
		tf.Index[e.ID] = len(tf.Entries)
		tf.Entries = append(tf.Entries, e)
		tf.Line = append(tf.Line, no)
		tf.Parent = append(tf.Parent, p)
	}
	if torn != "" {
		tf.Problems = append(tf.Problems, torn)
	}
	return tf, nil
}

// payloadProblem says what is wrong with a known entry's payload, or "".
func payloadProblem(e *Entry) string {
	var has bool
	switch e.Type {
	case TypeSession:
		has = e.Session != nil
	case TypeUser:
		has = e.User != nil
	case TypeAssistant:
		has = e.Assistant != nil
	case TypeToolResult:
		has = e.ToolResult != nil
	case TypeCapsule:
		has = e.Capsule != nil
	case TypeCheckpoint:
		has = e.Checkpoint != nil
	case TypeCapsuleLoad:
		has = e.CapsuleLoad != nil
	case TypeSettings:
		has = e.Settings != nil
	}
	if !has {
		return fmt.Sprintf("%s entry without its %s payload", e.Type, e.Type)
	}
	return ""
}

// Leaf is the index of the last indexed entry, -1 for none.
func (tf *Scan) Leaf() int { return len(tf.Entries) - 1 }

// PathTo is the root → i path.
func (tf *Scan) PathTo(i int) []Entry {
	var rev []int
	for ; i >= 0; i = tf.Parent[i] {
		rev = append(rev, i)
	}
	out := make([]Entry, len(rev))
	for j, k := range rev {
		out[len(rev)-1-j] = tf.Entries[k]
	}
	return out
}

// LeafPath is the leaf path, root first (R-T2).
func (tf *Scan) LeafPath() []Entry {
	if tf.Leaf() < 0 {
		return nil
	}
	return tf.PathTo(tf.Leaf())
}

// onPathAbove reports whether entry id is a strict ancestor of entry i.
func (tf *Scan) onPathAbove(i int, id string) bool {
	for j := tf.Parent[i]; j >= 0; j = tf.Parent[j] {
		if tf.Entries[j].ID == id {
			return true
		}
	}
	return false
}

// Check adds the cross-entry problems: the session header first, no tool
// result without its call on its path, every capsule's firstKeptEntryId on
// its path.
func (tf *Scan) Check() {
	if len(tf.Entries) > 0 && tf.Entries[0].Type != TypeSession {
		tf.Problems = append(tf.Problems, fmt.Sprintf("line %d: the first entry is %q, not the session header", tf.Line[0], tf.Entries[0].Type))
	}
	callAt := map[string]int{} // tool call id → the assistant entry that made it
	for i, e := range tf.Entries {
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
				tf.Problems = append(tf.Problems, fmt.Sprintf("line %d: tool result %s: no tool call %q before it", tf.Line[i], e.ID, id))
			case !tf.onPathAbove(i, tf.Entries[j].ID):
				tf.Problems = append(tf.Problems, fmt.Sprintf("line %d: tool result %s: its call %q (entry %s, line %d) is not on its path", tf.Line[i], e.ID, id, tf.Entries[j].ID, tf.Line[j]))
			}
		case e.Capsule != nil:
			fk := e.Capsule.FirstKeptEntryID
			if fk == "" || tf.onPathAbove(i, fk) {
				continue
			}
			where := "is not in the file"
			if _, ok := tf.Index[fk]; ok {
				where = "is not on its path"
			}
			tf.Problems = append(tf.Problems, fmt.Sprintf("line %d: capsule %s (entry %s): firstKeptEntryId %s %s", tf.Line[i], e.Capsule.CheckpointID, e.ID, fk, where))
		}
	}
}
