package workspace

import (
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// URIToRel maps an editor's `file://` URI to its workspace-relative path
// (forward slashes, "." for the root). It refuses other schemes, remote
// hosts and anything outside the root, with the same confinement as Resolve
// (no `..` or symlink escape).
func (r *Root) URIToRel(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("document URI %q: %w", uri, err)
	}
	if u.Scheme != "file" {
		return "", fmt.Errorf("document URI %q: scheme %q is not file", uri, u.Scheme)
	}
	if u.Host != "" && u.Host != "localhost" {
		return "", fmt.Errorf("document URI %q: host %q is not local", uri, u.Host)
	}
	if u.Path == "" || !strings.HasPrefix(u.Path, "/") {
		return "", fmt.Errorf("document URI %q: not an absolute file path", uri)
	}
	_, rel, err := r.Resolve(filepath.FromSlash(u.Path))
	if err != nil {
		return "", fmt.Errorf("document URI %q: %w", uri, err)
	}
	return rel, nil
}

// Touched records the files a session read and modified, the source of the
// capsule's "Files read" and "Files modified" artifacts together with the
// agent's own tool calls (R-C2). It is fed by the editor's document sync
// (Opened, Changed, Saved, Closed), the file watcher (FromWatcher) and the
// agent's tools (Read, Modified).
//
// Touched is safe for concurrent use: the language server's handlers, the
// watcher's goroutine and the turn loop each call it from their own
// goroutine, and a mutex serialises them.
//
// The rules:
//   - opening a document, or the agent reading a file, lists it as read;
//   - editing a document (even unsaved), saving it, the agent writing it,
//     and any change on disk reported by the watcher (created, modified,
//     removed, by anyone: PROTOCOL.md "Fixed details") list it as modified;
//   - a file both read and modified is in both lists, as the compaction
//     engine's own artifact set records reads and modifications
//     independently (a memory capsule may list such a file under modified
//     only: compaction.ValidateForMemory accepts that);
//   - paths the Ignore rules leave out (`.git`, `.soba`, `node_modules`, the
//     root .gitignore) and paths outside the root are not listed;
//   - closing a document removes nothing: it was still read;
//   - a file whose last change the watcher reported is its removal is listed
//     as deleted ("old.go (deleted)", R-C6), until it is written again.
type Touched struct {
	root   *Root
	ignore *Ignore

	mu       sync.Mutex // guards the maps below
	read     map[string]struct{}
	modified map[string]struct{}
	deleted  map[string]struct{} // removed on disk, and not written since
	open     map[string]struct{}
}

// DeletedSuffix marks a deleted file in the list of modified files, as the
// capsule lists it (compaction.DeletedSuffix; a test in agent holds them
// equal, workspace importing no engine).
const DeletedSuffix = " (deleted)"

// NewTouched tracks files under root; ig may be nil (only the fixed names
// `.git`, `.soba` and `node_modules` are then left out). Share the watcher's
// Ignore so both agree.
func NewTouched(root *Root, ig *Ignore) *Touched {
	return &Touched{
		root:     root,
		ignore:   ig,
		read:     make(map[string]struct{}),
		modified: make(map[string]struct{}),
		deleted:  make(map[string]struct{}),
		open:     make(map[string]struct{}),
	}
}

// canonical turns a caller's path into the workspace-relative form, or ""
// when it is to be left out (outside the root, the root itself, ignored).
func (t *Touched) canonical(p string) string {
	if p == "" {
		return ""
	}
	_, rel, err := t.root.Resolve(p)
	if err != nil || rel == "." || t.ignore.Match(rel, false) {
		return ""
	}
	return rel
}

func (t *Touched) mark(set map[string]struct{}, p string) {
	if rel := t.canonical(p); rel != "" {
		t.mu.Lock()
		set[rel] = struct{}{}
		t.mu.Unlock()
	}
}

// Opened records a document the editor opened: it is read.
func (t *Touched) Opened(rel string) {
	if rel = t.canonical(rel); rel == "" {
		return
	}
	t.mu.Lock()
	t.read[rel] = struct{}{}
	t.open[rel] = struct{}{}
	t.mu.Unlock()
}

// Changed records an edit of an open document: it is modified, saved or
// not, since what was read of it earlier is stale.
func (t *Touched) Changed(rel string) { t.markModified(rel) }

// Saved records a document the editor saved: it is modified.
func (t *Touched) Saved(rel string) { t.markModified(rel) }

// Closed records a document the editor closed; it stays listed.
func (t *Touched) Closed(rel string) {
	if rel = t.canonical(rel); rel == "" {
		return
	}
	t.mu.Lock()
	delete(t.open, rel)
	t.mu.Unlock()
}

// Read records a file the agent read (read_file, grep).
func (t *Touched) Read(rel string) { t.mark(t.read, rel) }

// Modified records a file the agent wrote or edited.
func (t *Touched) Modified(rel string) { t.markModified(rel) }

// markModified lists a file as modified; written again, it is no longer
// deleted.
func (t *Touched) markModified(p string) {
	if rel := t.canonical(p); rel != "" {
		t.mu.Lock()
		t.modified[rel] = struct{}{}
		delete(t.deleted, rel)
		t.mu.Unlock()
	}
}

// FromWatcher records a watcher batch: every created, modified or removed
// file changed on disk during the session, so it is modified. A rescan
// batch's Modified already holds the files changed since the watcher
// started.
func (t *Touched) FromWatcher(b Batch) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, list := range [][]string{b.Created, b.Modified, b.Removed} {
		for _, p := range list {
			// Batches hold clean relative paths already; only the
			// ignore rules (which Touched may hold stricter) apply.
			p = path.Clean(p)
			if p == "." || p == ".." || strings.HasPrefix(p, "../") || path.IsAbs(p) || t.ignore.Match(p, false) {
				continue
			}
			if i == 2 { // removed: its last change
				delete(t.modified, p)
				t.deleted[p] = struct{}{}
				continue
			}
			delete(t.deleted, p)
			t.modified[p] = struct{}{}
		}
	}
}

// Snapshot is the files read and the files modified so far, each sorted and
// without duplicates (see Touched for a file in both).
func (t *Touched) Snapshot() (read, modified []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	modified = sortedSet(t.modified)
	for _, p := range sortedSet(t.deleted) {
		modified = append(modified, p+DeletedSuffix)
	}
	return sortedSet(t.read), modified
}

// Open is the documents open in the editor now, sorted.
func (t *Touched) Open() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return sortedSet(t.open)
}

func sortedSet(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
