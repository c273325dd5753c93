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
	for _, p := range paths {
		if dir, count, ok := parseFolded(p); ok {
			items = append(items, item{dir, count, true})
			continue
		}
		items = append(items, item{p, 1, false})
	}
	parent := func(it item) string {
		d := path.Dir(strings.TrimSuffix(it.p, "/"))
		switch d {
		case ".":
			return "./"
		case "/":
			return d
		}
		return d + "/"
	}
	for len(items) > max {
		// The parent directory holding the most items folds first.
		counts := map[string]int{}
		best, bestN := "", 0
		for _, it := range items {
			d := parent(it)
			counts[d]++
			if counts[d] > bestN || counts[d] == bestN && len(d) > len(best) {
				best, bestN = d, counts[d]
			}
		}
		if bestN < 2 {
			// Every item in a directory of its own: fold each into its
			// parent, which moves them up one level.
			moved := false
			for i := range items {
				if d := parent(items[i]); d != "./" && d != "/" {
					items[i] = item{d, items[i].n, true}
					moved = true
				}
			}
			if !moved {
				break // all at the top: nothing left to fold
			}
			items = mergeFolded(items)
			continue
		}
		out := items[:0:0]
		at := -1
		for _, it := range items {
			if parent(it) != best {
				out = append(out, it)
				continue
			}
			if at < 0 {
				at = len(out)
				out = append(out, item{best, 0, true})
			}
			out[at].n += it.n
		}
		items = mergeFolded(out) // with a folded item of the same directory
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
