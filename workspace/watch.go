package workspace

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/sourcegraph/conc"
	"github.com/sourcegraph/conc/panics"
)

// alwaysIgnored are the names never watched nor listed, at any depth: the
// VCS store, soba's own state (transcripts, flight records, Project Memory
// written by the engine itself) and package trees.
var alwaysIgnored = map[string]bool{".git": true, ".soba": true, "node_modules": true}

// Ignore decides which workspace paths the watcher and the touched-file
// tracking leave out: any path with a component named `.git`, `.soba` or
// `node_modules`, and the patterns of the root `.gitignore` (with git's rules:
// a path under an ignored directory is ignored whatever later patterns say).
// Nested `.gitignore` files and `.git/info/exclude` are not read. Safe for
// concurrent use; Reload swaps the patterns atomically.
type Ignore struct {
	root *Root

	mu      sync.RWMutex // guards matcher
	matcher gitignore.Matcher
}

// NewIgnore reads the root `.gitignore` of root; a missing file means no
// patterns. A `.gitignore` the door refuses (a link outside or to a device,
// a FIFO, over MaxGitignoreBytes) is an error, returned with an Ignore that
// applies only the names always ignored, so a hostile repository still
// opens and the caller can warn.
func NewIgnore(root *Root) (*Ignore, error) {
	ig := &Ignore{root: root}
	if err := ig.Reload(); err != nil {
		ig.matcher = gitignore.NewMatcher(nil)
		return ig, err
	}
	return ig, nil
}

// Reload re-reads the root `.gitignore`. On error the previous patterns stay.
func (ig *Ignore) Reload() error {
	data, err := ig.root.ReadFile(".gitignore", MaxGitignoreBytes)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read .gitignore: %w", err)
	}
	m := gitignore.NewMatcher(parseGitignore(data))
	ig.mu.Lock()
	ig.matcher = m
	ig.mu.Unlock()
	return nil
}

// parseGitignore turns .gitignore text into patterns, as go-git's
// ReadPatterns does: blank lines and `#` comments are skipped.
func parseGitignore(data []byte) []gitignore.Pattern {
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, nil))
	}
	return ps
}

// Match reports whether the workspace-relative, slash-separated path rel is
// ignored; isDir says whether rel itself is a directory (patterns ending in
// `/` match directories only). The root itself is never ignored.
func (ig *Ignore) Match(rel string, isDir bool) bool {
	if rel == "." || rel == "" {
		return false
	}
	parts := strings.Split(rel, "/")
	for _, p := range parts {
		if alwaysIgnored[p] {
			return true
		}
	}
	if ig == nil {
		return false
	}
	ig.mu.RLock()
	m := ig.matcher
	ig.mu.RUnlock()
	// Each ancestor is a directory; git never looks inside an ignored one.
	for i := 1; i <= len(parts); i++ {
		if m.Match(parts[:i], i < len(parts) || isDir) {
			return true
		}
	}
	return false
}

// Batch is one debounced set of changes under the workspace root. Paths are
// workspace-relative with forward slashes, sorted, and each path is in at
// most one list: the net effect over the batch (created then written is
// Created; removed and created again, as an atomic save does, is Modified;
// anything whose last event is a removal is Removed). Directories are not
// listed: a new directory contributes the files found in it, a removed one
// the removals of its files that the kernel reported.
type Batch struct {
	Created  []string
	Modified []string
	Removed  []string
	// Rescan says that events were lost (the kernel queue overflowed) and
	// the tree was walked again: Modified then also holds every file whose
	// modification time is at or after the watcher's start, and other
	// changes (removals, in particular) may have been missed.
	Rescan bool
}

// Empty reports whether the batch carries nothing.
func (b Batch) Empty() bool {
	return len(b.Created) == 0 && len(b.Modified) == 0 && len(b.Removed) == 0 && !b.Rescan
}

// Defaults of WatchOptions.
const (
	DefaultDebounce = 75 * time.Millisecond
	DefaultMaxDelay = time.Second
)

// WatchOptions configure a Watcher.
type WatchOptions struct {
	// Debounce is the quiet time after the last event before a batch is
	// delivered (a trailing timer); zero means DefaultDebounce.
	Debounce time.Duration
	// MaxDelay bounds how long a batch is held while events keep coming;
	// zero means DefaultMaxDelay.
	MaxDelay time.Duration
	// OnChange receives each batch, one at a time, on the watcher's
	// goroutine: it should hand the batch on rather than do long work, and
	// must not call Close (which waits for that goroutine). A panic in it
	// is caught and recorded as a warning.
	OnChange func(Batch)
	// OnWarning, when set, is called with each new warning as it is
	// recorded (see Watcher.Warnings), from NewWatcher or the watcher's
	// goroutine.
	OnWarning func(string)
	// Ignore decides what is not watched; nil means NewIgnore(root).
	Ignore *Ignore

	// addWatch replaces fsnotify's Add in tests (watch limit exhaustion).
	addWatch func(w *fsnotify.Watcher, path string) error
}

// maxWarnings bounds the warnings kept, so a flood of identical kernel
// errors cannot grow memory.
const maxWarnings = 32

// eventBuffer is the size of fsnotify's event channel: it absorbs bursts
// while the loop walks a new directory tree.
const eventBuffer = 4096

// Watcher watches a workspace tree recursively with inotify (fsnotify is not
// recursive on Linux): every directory not ignored gets a watch, a new
// directory is walked and watched as it appears, and the files already in it
// by then are reported as created, so nothing created before its watch
// existed is lost. Events are debounced into Batches. A kernel queue
// overflow becomes a rescan; exhausting the inotify watch limit degrades the
// watcher (no more directories are added) with one clear warning, never a
// failure. Create with NewWatcher, stop with Close.
type Watcher struct {
	root   *Root
	opts   WatchOptions
	ignore *Ignore
	fsw    *fsnotify.Watcher
	start  time.Time

	stop      chan struct{}
	closeOnce sync.Once
	closeErr  error
	wg        conc.WaitGroup

	mu       sync.Mutex          // guards the fields below
	dirs     map[string]struct{} // watched directories, relative
	kids     map[string]map[string]struct{}
	degraded bool
	warnings []string
}

// NewWatcher watches root. The tree is walked and every directory watched
// before it returns, so changes made after it returns are seen; batches
// start flowing to opts.OnChange at once. A full watch limit is not an error
// (see Warnings); failing to create the inotify instance is.
func NewWatcher(root *Root, opts WatchOptions) (*Watcher, error) {
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = DefaultMaxDelay
	}
	if opts.MaxDelay < opts.Debounce {
		opts.MaxDelay = opts.Debounce
	}
	ig := opts.Ignore
	if ig == nil {
		var err error
		if ig, err = NewIgnore(root); err != nil && opts.OnWarning != nil {
			opts.OnWarning(err.Error() + "; its patterns are not applied")
		}
	}
	fsw, err := fsnotify.NewBufferedWatcher(eventBuffer)
	if err != nil {
		if errors.Is(err, syscall.EMFILE) {
			return nil, fmt.Errorf("file watcher unavailable: inotify instance limit reached (fs.inotify.max_user_instances): %w", err)
		}
		return nil, fmt.Errorf("file watcher unavailable: %w", err)
	}
	w := &Watcher{
		root:   root,
		opts:   opts,
		ignore: ig,
		fsw:    fsw,
		start:  time.Now(),
		stop:   make(chan struct{}),
		dirs:   make(map[string]struct{}),
		kids:   make(map[string]map[string]struct{}),
	}
	if err := w.watchTree(root.Dir(), nil); err != nil {
		fsw.Close()
		return nil, err
	}
	w.wg.Go(w.loop)
	return w, nil
}

// Close stops the watcher: pending changes are delivered as a last batch,
// and Close returns when the watcher's goroutine has ended. A panic on that
// goroutine is returned as an error. Close is idempotent.
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() {
		close(w.stop)
		if r := w.wg.WaitAndRecover(); r != nil {
			w.closeErr = r.AsError()
		}
		if err := w.fsw.Close(); err != nil && w.closeErr == nil {
			w.closeErr = err
		}
	})
	return w.closeErr
}

// Ignore is the ignore rules the watcher applies, to share with Touched.
func (w *Watcher) Ignore() *Ignore { return w.ignore }

// WatchList is the watched directories, workspace-relative, sorted ("." is
// the root).
func (w *Watcher) WatchList() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.dirs))
	for d := range w.dirs {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// Warnings are the problems the watcher met and lived with, oldest first:
// a full inotify watch limit (once), kernel errors, a panicking OnChange.
func (w *Watcher) Warnings() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.warnings)
}

// Degraded reports whether the watch limit was reached, so some directories
// are not watched and the editor's document events are the fallback.
func (w *Watcher) Degraded() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.degraded
}

func (w *Watcher) warn(msg string) {
	w.mu.Lock()
	if slices.Contains(w.warnings, msg) || len(w.warnings) >= maxWarnings {
		w.mu.Unlock()
		return
	}
	w.warnings = append(w.warnings, msg)
	w.mu.Unlock()
	if w.opts.OnWarning != nil {
		if r := panics.Try(func() { w.opts.OnWarning(msg) }); r != nil {
			w.mu.Lock()
			w.warnings = append(w.warnings, "file watcher: OnWarning panicked: "+r.String())
			w.mu.Unlock()
		}
	}
}

// addWatch watches one directory. It reports false when the watcher is (or
// just became) degraded and no more watches may be added.
func (w *Watcher) addWatch(abs, rel string) (bool, error) {
	w.mu.Lock()
	if w.degraded {
		w.mu.Unlock()
		return false, nil
	}
	if _, ok := w.dirs[rel]; ok {
		w.mu.Unlock()
		return true, nil
	}
	w.mu.Unlock()

	var err error
	if w.opts.addWatch != nil {
		err = w.opts.addWatch(w.fsw, abs)
	} else {
		err = w.fsw.Add(abs)
	}
	if errors.Is(err, syscall.ENOSPC) {
		w.mu.Lock()
		w.degraded = true
		n := len(w.dirs)
		w.mu.Unlock()
		w.warn(fmt.Sprintf("file watcher degraded: inotify watch limit reached after %d directories (fs.inotify.max_user_watches); falling back to editor document events", n))
		return false, nil
	}
	if err != nil {
		return true, err
	}
	w.mu.Lock()
	w.dirs[rel] = struct{}{}
	if rel != "." {
		parent := parentRel(rel)
		if w.kids[parent] == nil {
			w.kids[parent] = make(map[string]struct{})
		}
		w.kids[parent][rel] = struct{}{}
	}
	w.mu.Unlock()
	return true, nil
}

// forgetDir drops the watches of rel and every directory under it, as after
// a removal or a rename away (inotify watches follow inodes, so a renamed
// subtree would otherwise report under its old names). It reports whether
// rel was a watched directory.
func (w *Watcher) forgetDir(rel string) bool {
	w.mu.Lock()
	if _, ok := w.dirs[rel]; !ok {
		w.mu.Unlock()
		return false
	}
	var gone []string
	var drop func(d string)
	drop = func(d string) {
		gone = append(gone, d)
		delete(w.dirs, d)
		for k := range w.kids[d] {
			drop(k)
		}
		delete(w.kids, d)
	}
	drop(rel)
	if p := w.kids[parentRel(rel)]; p != nil {
		delete(p, rel)
	}
	w.mu.Unlock()
	for _, d := range gone {
		// The kernel has usually dropped the watch already; fsnotify then
		// answers ErrNonExistentWatch, which is what we want anyway.
		_ = w.fsw.Remove(filepath.Join(w.root.Dir(), filepath.FromSlash(d)))
	}
	return true
}

func parentRel(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return "."
}

// watchTree walks the tree at abs through the door (Root.Walk: symlinks are
// never followed, directories are opened non-blocking), watching every
// directory that is not ignored, and calls file with each file (any
// non-directory) found, when file is set. An unreadable or vanished entry is
// skipped; the only error is failing to watch the root itself.
func (w *Watcher) watchTree(abs string, file func(rel string, d fs.DirEntry)) error {
	rootDir := w.root.Dir()
	start, ok := w.root.within(filepath.Clean(abs))
	if !ok {
		return nil
	}
	if fi, err := os.Lstat(abs); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		// A link is a name in the tree, never a tree to watch.
		if file != nil && !w.ignore.Match(start, false) {
			file(start, fs.FileInfoToDirEntry(fi))
		}
		return nil
	}
	var rootErr error
	err := w.root.Walk(context.Background(), start, func(rel string, d fs.DirEntry) error {
		p := filepath.Join(rootDir, filepath.FromSlash(rel))
		if !d.IsDir() {
			if file != nil && !w.ignore.Match(rel, false) {
				file(rel, d)
			}
			return nil
		}
		if w.ignore.Match(rel, true) {
			return fs.SkipDir
		}
		more, err := w.addWatch(p, rel)
		if err != nil {
			if p == rootDir {
				rootErr = fmt.Errorf("file watcher: watch %s: %w", p, err)
				return rootErr
			}
			if !errors.Is(err, fs.ErrNotExist) {
				w.warn(fmt.Sprintf("file watcher: cannot watch %s: %v", rel, err))
			}
			return fs.SkipDir
		}
		if !more && file == nil {
			return fs.SkipAll
		}
		return nil
	})
	if rootErr != nil {
		return rootErr
	}
	if err != nil && filepath.Clean(abs) == rootDir {
		return fmt.Errorf("file watcher: %w", err)
	}
	return nil
}

type change uint8

const (
	changeModified change = iota + 1
	changeCreated
	changeRemoved
)

// pending is the batch being gathered; owned by the loop goroutine.
type pending struct {
	paths  map[string]change
	rescan bool
	first  time.Time
}

func (p *pending) empty() bool { return len(p.paths) == 0 && !p.rescan }

func (p *pending) set(rel string, c change) {
	prev := p.paths[rel]
	switch {
	case c == changeModified && prev != 0 && prev != changeRemoved:
		return // created then written stays created
	case c == changeCreated && prev == changeRemoved:
		c = changeModified // replaced: an atomic save
	}
	p.paths[rel] = c
}

func (p *pending) batch() Batch {
	var b Batch
	for rel, c := range p.paths {
		switch c {
		case changeCreated:
			b.Created = append(b.Created, rel)
		case changeModified:
			b.Modified = append(b.Modified, rel)
		case changeRemoved:
			b.Removed = append(b.Removed, rel)
		}
	}
	slices.Sort(b.Created)
	slices.Sort(b.Modified)
	slices.Sort(b.Removed)
	b.Rescan = p.rescan
	return b
}

// loop is the watcher's goroutine: it owns the pending batch and the timer.
func (w *Watcher) loop() {
	pend := &pending{paths: make(map[string]change)}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	arm := func() {
		now := time.Now()
		if pend.first.IsZero() {
			pend.first = now
		}
		wait := w.opts.Debounce
		if left := w.opts.MaxDelay - now.Sub(pend.first); left < wait {
			wait = max(left, 0)
		}
		timer.Reset(wait)
	}
	flush := func() {
		timer.Stop()
		if pend.empty() {
			pend.first = time.Time{}
			return
		}
		b := pend.batch()
		pend.paths = make(map[string]change)
		pend.rescan = false
		pend.first = time.Time{}
		if w.opts.OnChange != nil {
			if r := panics.Try(func() { w.opts.OnChange(b) }); r != nil {
				w.warn("file watcher: OnChange panicked: " + r.String())
			}
		}
	}
	for {
		select {
		case <-w.stop:
			flush()
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				flush()
				return
			}
			if w.handleEvent(ev, pend) {
				arm()
			}
		case err, ok := <-w.fsw.Errors:
			if !ok {
				flush()
				return
			}
			w.handleError(err, pend)
			if !pend.empty() {
				arm()
			}
		case <-timer.C:
			flush()
		}
	}
}

// handleEvent folds one fsnotify event into the pending batch and reports
// whether it changed anything.
func (w *Watcher) handleEvent(ev fsnotify.Event, pend *pending) bool {
	rel, ok := w.root.within(filepath.Clean(ev.Name))
	if !ok || rel == "." {
		return false
	}
	if rel == ".gitignore" && !ev.Has(fsnotify.Chmod) {
		if err := w.ignore.Reload(); err != nil {
			w.warn("file watcher: " + err.Error())
		}
	}
	switch {
	case ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename):
		if w.forgetDir(rel) {
			return false
		}
		if w.ignore.Match(rel, false) {
			return false
		}
		pend.set(rel, changeRemoved)
		return true
	case ev.Has(fsnotify.Create):
		fi, err := os.Lstat(ev.Name)
		if err != nil {
			// Gone again before we looked: a short-lived file still
			// changed the tree.
			if w.ignore.Match(rel, false) {
				return false
			}
			pend.set(rel, changeRemoved)
			return true
		}
		if w.ignore.Match(rel, fi.IsDir()) {
			return false
		}
		if !fi.IsDir() {
			pend.set(rel, changeCreated)
			return true
		}
		// A new directory: watch it and everything under it, then report
		// what is already there, since those creates happened before the
		// watches did.
		changed := false
		_ = w.watchTree(ev.Name, func(f string, _ fs.DirEntry) {
			pend.set(f, changeCreated)
			changed = true
		})
		return changed
	case ev.Has(fsnotify.Write):
		if w.ignore.Match(rel, false) {
			return false
		}
		pend.set(rel, changeModified)
		return true
	}
	return false // Chmod alone: metadata, not content
}

// handleError handles an error from fsnotify: an overflow means events were
// lost, so the tree is walked again (watching directories that appeared
// unseen, and reporting every file modified since the watcher started);
// anything else is a warning.
func (w *Watcher) handleError(err error, pend *pending) {
	if !errors.Is(err, fsnotify.ErrEventOverflow) {
		w.warn("file watcher: " + err.Error())
		return
	}
	pend.rescan = true
	_ = w.watchTree(w.root.Dir(), func(rel string, d fs.DirEntry) {
		fi, err := d.Info()
		if err == nil && !fi.ModTime().Before(w.start) {
			pend.set(rel, changeModified)
		}
	})
}
