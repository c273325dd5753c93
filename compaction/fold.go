package compaction

import (
	"path"
	"strconv"
	"strings"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/internal/text"
)

// A capsule is bounded (R-C7): a list of files longer than MaxFileItems is
// folded by directory — the directory holding the most entries first — into
// items like "gen/ — 5,000 files", so nothing is dropped without its count.

// MaxFileItems bounds each of Files read and Files modified.
const MaxFileItems = 200

// foldedSep separates a folded directory from its count.
const foldedSep = " — "

// foldPaths folds paths (some maybe folded already) until at most max
// items remain, keeping first-seen order.
func foldPaths(paths []string, max int) []string {
	if len(paths) <= max {
		return paths
	}
	type item = foldItem
	items := make([]item, 0, len(paths))
	for i, p := range paths {
		it := newFoldItem(p, 1, false)
		if dir, count, ok := parseFolded(p); ok {
			it = newFoldItem(dir, count, true)
		}
		it.order = i
		items = append(items, it)
	}
	// counts holds the items directly under each directory and first the
	// order of the first of them; both are kept up to date as directories
	// fold, so a list of tens of thousands of files is counted once.
	counts, first := map[string]int{}, map[string]int{}
	recount := func() {
		clear(counts)
		clear(first)
		for _, it := range items {
			if _, seen := first[it.parent]; !seen || it.order < first[it.parent] {
				first[it.parent] = it.order
			}
			counts[it.parent]++
		}
	}
	recount()
	for len(items) > max {
		// The directory holding the most items folds first (the deeper
		// one, then the one seen first, on a tie).
		best, bestN := "", 0
		for d, n := range counts {
			if n > bestN || n == bestN && (len(d) > len(best) || len(d) == len(best) && first[d] < first[best]) {
				best, bestN = d, n
			}
		}
		if bestN < 2 {
			// Every item in a directory of its own: fold each into its
			// parent, which moves them up one level.
			moved := false
			for i := range items {
				if d := items[i].parent; d != "./" && d != "/" {
					o := items[i].order
					items[i] = newFoldItem(d, items[i].n, true)
					items[i].order = o
					moved = true
				}
			}
			if !moved {
				break // all at the top: nothing left to fold
			}
			items = mergeFolded(items)
			recount()
			continue
		}
		// The items under best, and a folded item of best itself (carried
		// from an earlier capsule), become one item at the first one's
		// place. The list is filtered in place: the new item takes the place
		// of the first item it folds, so writes never pass reads.
		out := items[:0]
		at, merged := -1, 0
		for _, it := range items {
			under := it.parent == best
			if !under && (!it.folded || it.p != best) {
				out = append(out, it)
				continue
			}
			if !under {
				merged++ // counted under best's parent, where the new item goes
			}
			if at < 0 {
				at = len(out)
				out = append(out, newFoldItem(best, 0, true))
				out[at].order = it.order
			}
			out[at].n += it.n
			out[at].order = min(out[at].order, it.order)
		}
		items = out
		np := out[at].parent
		delete(counts, best)
		delete(first, best)
		counts[np] += 1 - merged
		if f, seen := first[np]; !seen || out[at].order < f {
			first[np] = out[at].order
		}
	}
	out := make([]string, len(items))
	for i, it := range items {
		if it.folded {
			out[i] = foldedItem(it.p, it.n)
		} else {
			out[i] = it.p
		}
	}
	return out
}

// foldItem is a file, or a folded directory (ending in "/") with the
// number of files under it.
type foldItem struct {
	p      string
	n      int
	folded bool
	// order is the item's place in the list given (the first of those
	// it folds).
	order int
	// parent is the directory p folds into, computed once: a list of tens
	// of thousands of files is scanned once per directory folded.
	parent string
}

func newFoldItem(p string, n int, folded bool) foldItem {
	d := path.Dir(strings.TrimSuffix(p, "/"))
	switch d {
	case ".":
		d = "./"
	case "/":
	default:
		d += "/"
	}
	return foldItem{p: p, n: n, folded: folded, parent: d}
}

// mergeFolded merges items naming the same directory, summing their counts,
// at the first one's place.
func mergeFolded(items []foldItem) []foldItem {
	at := map[string]int{}
	out := items[:0:0]
	for _, it := range items {
		if i, ok := at[it.p]; ok && it.folded {
			out[i].n += it.n
			continue
		}
		if it.folded {
			at[it.p] = len(out)
		}
		out = append(out, it)
	}
	return out
}

func foldedItem(dir string, n int) string {
	return dir + foldedSep + text.Thousands(n) + " " + pluralWord(n, "file")
}

func pluralWord(n int, w string) string {
	if n == 1 {
		return w
	}
	return w + "s"
}

// parseFolded reads an item foldPaths wrote: "dir/ — 5,000 files".
func parseFolded(s string) (dir string, n int, ok bool) {
	dir, rest, ok := strings.Cut(s, foldedSep)
	if !ok || !strings.HasSuffix(dir, "/") {
		return "", 0, false
	}
	num, _, ok := strings.Cut(rest, " ")
	if !ok {
		return "", 0, false
	}
	n, err := strconv.Atoi(strings.ReplaceAll(num, ",", ""))
	if err != nil {
		return "", 0, false
	}
	return dir, n, true
}

// MaxCapsuleShare is the share of the hard limit, in percent, a capsule's
// model text may take (R-C7, docs/decisions.md): beyond it the file lists
// fold harder, the user's verbatim words and the notes shrink, each with
// its count.
const MaxCapsuleShare = 25

// boundCapsule folds and trims st until its model text counts at most max
// tokens, or nothing more can be folded. max <= 0 bounds nothing.
func boundCapsule(st capsule.State, c Counter, max int) capsule.State {
	if max <= 0 || c == nil {
		return st
	}
	fits := func() bool { return c.Count(ModelText(st)) <= max }
	if fits() {
		return st
	}
	for _, n := range []int{50, 20, 8} {
		st.FilesRead, st.FilesModified = foldPaths(st.FilesRead, n), foldPaths(st.FilesModified, n)
		if fits() {
			return st
		}
	}
	st.UserMessages = boundUserMessages(st.UserMessages, UserMessagesBudget/4)
	if fits() {
		return st
	}
	st.Notes = boundNotes(st.Notes, 10)
	if len(st.Done) > 12 {
		st.Done = append([]string{moreNotes + strconv.Itoa(len(st.Done)-11) + " earlier items are in the transcript"}, st.Done[len(st.Done)-11:]...)
	}
	return st
}
