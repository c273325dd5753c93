package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"

	"github.com/sourcegraph/conc/pool"

	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/session"
)

// transcriptFile is a session file read without the store: every line
// decoded, nothing locked, nothing written. Offline commands that only read
// (verify, budget, compact --dry-run) use it, so they also work on a session
// a running server holds.
type transcriptFile struct {
	path    string
	entries []session.Entry // indexed entries in file order
	line    []int           // entries[i]'s 1-based line
	index   map[string]int
	parent  []int // index of entries[i]'s parent, -1 for a root or a missing parent
	// problems are integrity problems, one line each with its line number.
	problems []string
	// notes are findings that are not damage (unknown entry types, kept
	// and skipped by readers, R-T3).
	notes []string
	// unestimated counts entries the model sees that were stored without a
	// token estimate.
	unestimated int
}

// readTranscript reads and indexes a session file as the store's resume
// does: a torn last line is ignored, lines that are not entries and
// duplicate ids are skipped, an entry whose parent is not earlier in the
// file is kept as a root, and the leaf is the last indexed entry. With est
// set, entries stored without a token estimate get one, as the store's
// Open gives them (session.MissingEstimate); unestimated counts them.
func readTranscript(path string, est func(*session.Entry) int) (*transcriptFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	tf := &transcriptFile{path: path, index: map[string]int{}}
	// Split, decode every line in parallel (decoding is the cost), then
	// index in file order exactly as the store's resume does.
	type rawLine struct {
		no   int
		line []byte
		e    session.Entry
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
				r.e, r.err = session.DecodeLine(r.line)
				if r.err == nil && session.MissingEstimate(r.e.Type, r.e.Tokens) {
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
			tf.problems = append(tf.problems, fmt.Sprintf("line %d: not an entry: %v", no, err))
			continue
		case e.ID == "":
			tf.problems = append(tf.problems, fmt.Sprintf(`line %d: entry has no "id"`, no))
			continue
		case e.Type == "":
			tf.problems = append(tf.problems, fmt.Sprintf(`line %d: entry %s has no "type"`, no, e.ID))
			continue
		}
		if j, dup := tf.index[e.ID]; dup {
			tf.problems = append(tf.problems, fmt.Sprintf("line %d: duplicate entry id %s (first at line %d): skipped", no, e.ID, tf.line[j]))
			continue
		}
		p := -1
		if pid := e.Parent(); pid != "" {
			if j, ok := tf.index[pid]; ok {
				p = j
			} else {
				tf.problems = append(tf.problems, fmt.Sprintf("line %d: entry %s: parent %s is not earlier in the file", no, e.ID, pid))
			}
		}
		if !session.KnownType(e.Type) {
			tf.notes = append(tf.notes, fmt.Sprintf("line %d: entry %s has type %q, unknown to this version: kept and skipped", no, e.ID, e.Type))
		} else if why := payloadProblem(&e); why != "" {
			tf.problems = append(tf.problems, fmt.Sprintf("line %d: entry %s: %s", no, e.ID, why))
		}
		if r.unestimated {
			tf.unestimated++
		}
		tf.index[e.ID] = len(tf.entries)
		tf.entries = append(tf.entries, e)
		tf.line = append(tf.line, no)
		tf.parent = append(tf.parent, p)
	}
	if torn != "" {
		tf.problems = append(tf.problems, torn)
	}
	return tf, nil
}

// payloadProblem says what is wrong with a known entry's payload, or "".
func payloadProblem(e *session.Entry) string {
	has := map[string]bool{
		session.TypeSession: e.Session != nil, session.TypeUser: e.User != nil, session.TypeAssistant: e.Assistant != nil,
		session.TypeToolResult: e.ToolResult != nil, session.TypeCapsule: e.Capsule != nil, session.TypeCheckpoint: e.Checkpoint != nil,
		session.TypeCapsuleLoad: e.CapsuleLoad != nil, session.TypeSettings: e.Settings != nil,
	}
	if !has[e.Type] {
		return fmt.Sprintf("%s entry without its %s payload", e.Type, e.Type)
	}
	return ""
}

// leaf is the index of the last indexed entry, -1 for none.
func (tf *transcriptFile) leaf() int { return len(tf.entries) - 1 }

// pathTo is the root → i path.
func (tf *transcriptFile) pathTo(i int) compaction.Entries {
	var rev []int
	for ; i >= 0; i = tf.parent[i] {
		rev = append(rev, i)
	}
	out := make(compaction.Entries, len(rev))
	for j, k := range rev {
		out[len(rev)-1-j] = tf.entries[k]
	}
	return out
}

// leafPath is the leaf path, root first (R-T2).
func (tf *transcriptFile) leafPath() compaction.Entries {
	if tf.leaf() < 0 {
		return nil
	}
	return tf.pathTo(tf.leaf())
}

// onPathAbove reports whether entry id is a strict ancestor of entry i.
func (tf *transcriptFile) onPathAbove(i int, id string) bool {
	for j := tf.parent[i]; j >= 0; j = tf.parent[j] {
		if tf.entries[j].ID == id {
			return true
		}
	}
	return false
}

// check adds the cross-entry problems: the session header first, no tool
// result without its call on its path, every capsule's firstKeptEntryId on
// its path.
func (tf *transcriptFile) check() {
	if len(tf.entries) > 0 && tf.entries[0].Type != session.TypeSession {
		tf.problems = append(tf.problems, fmt.Sprintf("line %d: the first entry is %q, not the session header", tf.line[0], tf.entries[0].Type))
	}
	callAt := map[string]int{} // tool call id → the assistant entry that made it
	for i, e := range tf.entries {
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
				tf.problems = append(tf.problems, fmt.Sprintf("line %d: tool result %s: no tool call %q before it", tf.line[i], e.ID, id))
			case !tf.onPathAbove(i, tf.entries[j].ID):
				tf.problems = append(tf.problems, fmt.Sprintf("line %d: tool result %s: its call %q (entry %s, line %d) is not on its path", tf.line[i], e.ID, id, tf.entries[j].ID, tf.line[j]))
			}
		case e.Capsule != nil:
			fk := e.Capsule.FirstKeptEntryID
			if fk == "" || tf.onPathAbove(i, fk) {
				continue
			}
			where := "is not in the file"
			if _, ok := tf.index[fk]; ok {
				where = "is not on its path"
			}
			tf.problems = append(tf.problems, fmt.Sprintf("line %d: capsule %s (entry %s): firstKeptEntryId %s %s", tf.line[i], e.Capsule.CheckpointID, e.ID, fk, where))
		}
	}
}

// runVerify checks a transcript's integrity and lists the problems, one a
// line; it exits 1 when there are any.
func runVerify(_ context.Context, env *cmdEnv, args []string) int {
	fs := subcommandFlags(env, "verify")
	setUsage(fs, env, "usage: soba-lsp verify <session.jsonl>\n\nChecks that every line is an entry, parents exist, every tool result has its call on its path and\nevery capsule's firstKeptEntryId lies on its path. Lists problems one a line; exits 1 when there are any.")
	if !parseExact(fs, args, 1) {
		return 2
	}
	tf, err := readTranscript(fs.Arg(0), nil)
	if err != nil {
		fmt.Fprintln(env.stderr, "soba-lsp verify:", err)
		return 1
	}
	tf.check()
	if tf.unestimated > 0 {
		tf.notes = append(tf.notes, fmt.Sprintf("%d entries carry no token estimate (hand-written or foreign lines): the server, budget and compact estimate them each time they read the session", tf.unestimated))
	}
	for _, p := range tf.problems {
		fmt.Fprintln(env.stdout, p)
	}
	for _, n := range tf.notes {
		fmt.Fprintln(env.stderr, "note:", n)
	}
	if len(tf.problems) > 0 {
		fmt.Fprintf(env.stderr, "soba-lsp verify: %s: %d problems in %d entries\n", tf.path, len(tf.problems), len(tf.entries))
		return 1
	}
	fmt.Fprintf(env.stderr, "soba-lsp verify: %s: ok, %d entries\n", tf.path, len(tf.entries))
	return 0
}
