package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// batches collects what a Watcher delivers.
type batches struct {
	mu  sync.Mutex
	all []Batch
}

func (c *batches) add(b Batch) {
	c.mu.Lock()
	c.all = append(c.all, b)
	c.mu.Unlock()
}

func (c *batches) snapshot() []Batch {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.all)
}

// net folds the batches into the last change seen per path.
func (c *batches) net() map[string]string {
	out := map[string]string{}
	for _, b := range c.snapshot() {
		for _, p := range b.Created {
			out[p] = "created"
		}
		for _, p := range b.Modified {
			out[p] = "modified"
		}
		for _, p := range b.Removed {
			out[p] = "removed"
		}
	}
	return out
}

// seen reports whether any batch listed rel with the given kind ("" = any).
func (c *batches) seen(rel, kind string) bool {
	for _, b := range c.snapshot() {
		for k, list := range map[string][]string{"created": b.Created, "modified": b.Modified, "removed": b.Removed} {
			if (kind == "" || kind == k) && slices.Contains(list, rel) {
				return true
			}
		}
	}
	return false
}

// eventually polls cond for up to 5 s: the kernel's events arrive
// asynchronously, and the machine running the tests is small and shared.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func startWatcher(t *testing.T, dir string, opts WatchOptions) (*Watcher, *batches) {
	t.Helper()
	r, err := NewRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := &batches{}
	if opts.Debounce == 0 {
		opts.Debounce = 30 * time.Millisecond
	}
	opts.OnChange = c.add
	w, err := NewWatcher(r, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return w, c
}

func mkdirs(t *testing.T, base string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(base, filepath.FromSlash(d)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWatcherNewDirectories_RC2 checks that files in directories created
// after the watcher started are seen (R-C2: the watcher is a source of the
// modified-files artifact), including a nested tree made in one MkdirAll,
// whose inner directories exist before any watch on them can.
func TestWatcherNewDirectories_RC2(t *testing.T) {
	dir := t.TempDir()
	w, c := startWatcher(t, dir, WatchOptions{})

	mkdirs(t, dir, "a")
	write(t, filepath.Join(dir, "a", "f.txt"), "x")
	mkdirs(t, dir, "x/y/z")
	write(t, filepath.Join(dir, "x", "y", "z", "deep.txt"), "x")
	eventually(t, "a/f.txt and x/y/z/deep.txt", func() bool {
		return c.seen("a/f.txt", "created") && c.seen("x/y/z/deep.txt", "created")
	})

	for _, d := range []string{"a", "x", "x/y", "x/y/z"} {
		if !slices.Contains(w.WatchList(), d) {
			t.Errorf("%s is not watched: %v", d, w.WatchList())
		}
	}
	// The inner directories are really watched: a later file there is seen.
	write(t, filepath.Join(dir, "x", "y", "later.txt"), "x")
	eventually(t, "x/y/later.txt", func() bool { return c.seen("x/y/later.txt", "created") })
	for _, b := range c.snapshot() {
		for _, list := range [][]string{b.Created, b.Modified, b.Removed} {
			for _, p := range list {
				if p == "a" || p == "x" || p == "x/y" || p == "x/y/z" {
					t.Errorf("directory %q listed in a batch: %+v", p, b)
				}
			}
		}
	}
}

// TestWatcherIgnoredDirs checks that `.git`, `.soba`, `node_modules` and the
// root `.gitignore` patterns are not watched (inspected on fsnotify's own
// watch list) and that their changes are not reported.
func TestWatcherIgnoredDirs(t *testing.T) {
	dir := t.TempDir()
	mkdirs(t, dir, ".git/objects/aa", ".soba/sessions", "node_modules/pkg/lib", "src/node_modules/x",
		"src/pkg", "build/out", "dist", "docs/dist", "cache/keep")
	write(t, filepath.Join(dir, ".gitignore"), "# build output\nbuild/\n/dist\n*.log\ncache/*\n!cache/keep\n")
	w, c := startWatcher(t, dir, WatchOptions{})

	want := []string{".", "cache", "cache/keep", "docs", "docs/dist", "src", "src/pkg"}
	if got := w.WatchList(); !slices.Equal(got, want) {
		t.Errorf("WatchList() = %v, want %v", got, want)
	}
	var fromKernel []string
	for _, p := range w.fsw.WatchList() {
		fromKernel = append(fromKernel, w.root.Rel(p))
	}
	slices.Sort(fromKernel)
	if !slices.Equal(fromKernel, want) {
		t.Errorf("fsnotify WatchList() = %v, want %v", fromKernel, want)
	}

	write(t, filepath.Join(dir, "node_modules", "pkg", "a.js"), "x")
	write(t, filepath.Join(dir, ".git", "HEAD"), "x")
	write(t, filepath.Join(dir, "src", "debug.log"), "x")
	mkdirs(t, dir, "src/build/gen", "src/node_modules/y")
	write(t, filepath.Join(dir, "src", "build", "gen", "g.go"), "x")
	write(t, filepath.Join(dir, "src", "ok.go"), "x")
	eventually(t, "src/ok.go", func() bool { return c.seen("src/ok.go", "") })
	time.Sleep(100 * time.Millisecond) // let any stray event arrive
	got := c.net()
	if len(got) != 1 {
		t.Errorf("reported %v, want only src/ok.go", got)
	}
	for _, d := range []string{"src/build", "src/build/gen", "src/node_modules/y"} {
		if slices.Contains(w.WatchList(), d) {
			t.Errorf("ignored new directory %s is watched", d)
		}
	}
}

// TestWatcherSkipsSymlinkedDirs checks that the walk does not follow a
// symlinked directory (it may lead out of the workspace, or loop), while the
// symlink itself, as an entry of its parent, is still reported.
func TestWatcherSkipsSymlinkedDirs(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "ws")
	mkdirs(t, base, "ws/src", "outside/sub")
	symlink(t, filepath.Join(base, "outside"), filepath.Join(dir, "out"))
	symlink(t, ".", filepath.Join(dir, "src", "loop"))
	w, c := startWatcher(t, dir, WatchOptions{})
	if got := w.WatchList(); !slices.Equal(got, []string{".", "src"}) {
		t.Errorf("WatchList() = %v, want [. src]", got)
	}
	symlink(t, filepath.Join(base, "outside"), filepath.Join(dir, "src", "out2"))
	eventually(t, "src/out2", func() bool { return c.seen("src/out2", "created") })
	if got := w.WatchList(); !slices.Equal(got, []string{".", "src"}) {
		t.Errorf("WatchList() after a new symlink = %v", got)
	}
}

// TestIgnoreMatch checks the ignore rules on their own, with git's
// directory-only and anchored patterns.
func TestIgnoreMatch(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, ".gitignore"), "build/\n/dist\n*.log\n!keep.log\nsecret?.txt\n")
	r, err := NewRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	ig, err := NewIgnore(r)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		rel   string
		isDir bool
		want  bool
	}{
		{".", true, false},
		{".git", true, true},
		{"a/.git/config", false, true},
		{".soba/memory/MEMORY.md", false, true},
		{"web/node_modules/x/y.js", false, true},
		{"build", true, true},
		{"build", false, false}, // `build/` matches directories only
		{"src/build/x.go", false, true},
		{"dist", true, true},
		{"src/dist", true, false}, // `/dist` is anchored at the root
		{"a/b.log", false, true},
		{"a/keep.log", false, false},
		{"secret1.txt", false, true},
		{"src/main.go", false, false},
	}
	for _, tc := range tests {
		if got := ig.Match(tc.rel, tc.isDir); got != tc.want {
			t.Errorf("Match(%q, dir=%v) = %v, want %v", tc.rel, tc.isDir, got, tc.want)
		}
	}
	var none *Ignore
	if none.Match("src/a.go", false) || !none.Match(".git/x", false) {
		t.Error("a nil Ignore must apply only the fixed names")
	}
}

// TestWatcherGitignoreReload checks that editing the root .gitignore during
// the session applies its new patterns.
func TestWatcherGitignoreReload(t *testing.T) {
	dir := t.TempDir()
	_, c := startWatcher(t, dir, WatchOptions{})
	write(t, filepath.Join(dir, ".gitignore"), "*.tmp\n")
	eventually(t, ".gitignore", func() bool { return c.seen(".gitignore", "") })
	write(t, filepath.Join(dir, "x.tmp"), "x")
	write(t, filepath.Join(dir, "x.go"), "x")
	eventually(t, "x.go", func() bool { return c.seen("x.go", "") })
	time.Sleep(100 * time.Millisecond)
	if c.seen("x.tmp", "") {
		t.Error("x.tmp reported after *.tmp was added to .gitignore")
	}
}

// TestWatcherBurstDebounced checks that a burst of 1,000 writes arrives as a
// small, bounded number of batches that together name every file.
func TestWatcherBurstDebounced(t *testing.T) {
	dir := t.TempDir()
	const files = 50
	for i := range files {
		write(t, filepath.Join(dir, fmt.Sprintf("f%02d.txt", i)), "")
	}
	_, c := startWatcher(t, dir, WatchOptions{Debounce: 50 * time.Millisecond, MaxDelay: time.Second})
	start := time.Now()
	for i := range 1000 {
		write(t, filepath.Join(dir, fmt.Sprintf("f%02d.txt", i%files)), fmt.Sprint(i))
	}
	burst := time.Since(start)
	eventually(t, "every file", func() bool { return len(c.net()) == files })
	time.Sleep(150 * time.Millisecond)
	n := len(c.snapshot())
	// The trailing timer flushes after 50 ms of quiet or 1 s of activity;
	// the bound leaves room for scheduling pauses on a busy 2-core machine.
	limit := int(burst/time.Second) + 10
	t.Logf("1000 writes in %v gave %d batches", burst, n)
	if n > limit {
		t.Errorf("%d batches for a burst of 1000 writes, want at most %d", n, limit)
	}
	for p, kind := range c.net() {
		if kind != "modified" {
			t.Errorf("%s reported %s, want modified", p, kind)
		}
	}
}

// TestWatcherRenameRemove checks renames and removals of files and of a
// watched directory, whose watches must follow the new name.
func TestWatcherRenameRemove(t *testing.T) {
	dir := t.TempDir()
	mkdirs(t, dir, "d/sub")
	write(t, filepath.Join(dir, "a.txt"), "a")
	write(t, filepath.Join(dir, "d", "sub", "f.txt"), "f")
	w, c := startWatcher(t, dir, WatchOptions{})

	if err := os.Rename(filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "rename of a.txt", func() bool { return c.seen("a.txt", "removed") && c.seen("b.txt", "created") })
	if err := os.Remove(filepath.Join(dir, "b.txt")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "removal of b.txt", func() bool { return c.net()["b.txt"] == "removed" })

	if err := os.Rename(filepath.Join(dir, "d"), filepath.Join(dir, "e")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "e/sub/f.txt", func() bool { return c.seen("e/sub/f.txt", "created") })
	eventually(t, "watches to follow the rename", func() bool {
		l := w.WatchList()
		return slices.Contains(l, "e/sub") && !slices.Contains(l, "d") && !slices.Contains(l, "d/sub")
	})
	write(t, filepath.Join(dir, "e", "sub", "g.txt"), "g")
	eventually(t, "e/sub/g.txt", func() bool { return c.seen("e/sub/g.txt", "created") })
	if c.seen("d/sub/g.txt", "") {
		t.Error("a file in the renamed directory was reported under its old name")
	}

	if err := os.RemoveAll(filepath.Join(dir, "e")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "removal of e", func() bool {
		return c.net()["e/sub/f.txt"] == "removed" && !slices.Contains(w.WatchList(), "e")
	})
	if got := w.WatchList(); !slices.Equal(got, []string{"."}) {
		t.Errorf("WatchList() after removals = %v", got)
	}
}

// TestPendingNetEffect checks how events on one path fold into a batch.
func TestPendingNetEffect(t *testing.T) {
	tests := []struct {
		name   string
		events []change
		want   change
	}{
		{"created then written", []change{changeCreated, changeModified}, changeCreated},
		{"written twice", []change{changeModified, changeModified}, changeModified},
		{"atomic save", []change{changeRemoved, changeCreated}, changeModified},
		{"created then removed", []change{changeCreated, changeRemoved}, changeRemoved},
		{"written then removed", []change{changeModified, changeRemoved}, changeRemoved},
	}
	for _, tc := range tests {
		p := &pending{paths: map[string]change{}}
		for _, e := range tc.events {
			p.set("f", e)
		}
		if got := p.paths["f"]; got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestWatcherOverflowRescan checks that fsnotify's ErrEventOverflow turns
// into a rescan: a Rescan batch that lists files modified since the start
// even though no event for them arrived.
func TestWatcherOverflowRescan(t *testing.T) {
	dir := t.TempDir()
	mkdirs(t, dir, "src")
	write(t, filepath.Join(dir, "src", "old.go"), "old")
	write(t, filepath.Join(dir, "src", "touched.go"), "x")
	past := time.Now().Add(-time.Hour)
	for _, f := range []string{"old.go", "touched.go"} {
		if err := os.Chtimes(filepath.Join(dir, "src", f), past, past); err != nil {
			t.Fatal(err)
		}
	}
	w, c := startWatcher(t, dir, WatchOptions{})
	// A change the watcher sees no content event for (Chmod is ignored):
	// only the rescan can find it.
	future := time.Now().Add(time.Minute)
	if err := os.Chtimes(filepath.Join(dir, "src", "touched.go"), future, future); err != nil {
		t.Fatal(err)
	}
	w.fsw.Errors <- fsnotify.ErrEventOverflow // the seam: fsnotify's own error channel
	eventually(t, "a rescan batch", func() bool {
		for _, b := range c.snapshot() {
			if b.Rescan {
				return true
			}
		}
		return false
	})
	var rescan Batch
	for _, b := range c.snapshot() {
		if b.Rescan {
			rescan = b
		}
	}
	if !slices.Equal(rescan.Modified, []string{"src/touched.go"}) {
		t.Errorf("rescan Modified = %v, want [src/touched.go]", rescan.Modified)
	}
	if len(w.Warnings()) != 0 {
		t.Errorf("an overflow is not a warning: %v", w.Warnings())
	}
	// Any other kernel error is a warning.
	w.fsw.Errors <- errors.New("notify: short read in readEvents()")
	eventually(t, "a warning", func() bool { return len(w.Warnings()) == 1 })
}

// TestWatcherWatchLimitDegrades checks that ENOSPC from inotify_add_watch
// (fs.inotify.max_user_watches exhausted) degrades the watcher with one
// clear warning and no failure.
func TestWatcherWatchLimitDegrades(t *testing.T) {
	dir := t.TempDir()
	for i := range 20 {
		mkdirs(t, dir, fmt.Sprintf("d%02d", i))
	}
	const limit = 5
	var adds atomic.Int32
	var warned []string
	var wmu sync.Mutex
	w, c := startWatcher(t, dir, WatchOptions{
		addWatch: func(fsw *fsnotify.Watcher, path string) error {
			if adds.Add(1) > limit {
				return syscall.ENOSPC
			}
			return fsw.Add(path)
		},
		OnWarning: func(s string) { wmu.Lock(); warned = append(warned, s); wmu.Unlock() },
	})
	want := "file watcher degraded: inotify watch limit reached after 5 directories (fs.inotify.max_user_watches); falling back to editor document events"
	if got := w.Warnings(); !slices.Equal(got, []string{want}) {
		t.Fatalf("Warnings() = %q, want [%q]", got, want)
	}
	if !w.Degraded() {
		t.Error("Degraded() = false")
	}
	if n := len(w.WatchList()); n != limit {
		t.Errorf("%d directories watched, want %d", n, limit)
	}
	// New directories neither crash nor warn again; the watched part still
	// reports.
	mkdirs(t, dir, "new/deeper")
	write(t, filepath.Join(dir, "root.txt"), "x")
	eventually(t, "root.txt", func() bool { return c.seen("root.txt", "created") })
	wmu.Lock()
	defer wmu.Unlock()
	if len(warned) != 1 || len(w.Warnings()) != 1 {
		t.Errorf("warned %d times (%q), want once", len(warned), warned)
	}
}

// TestWatcherCallbackPanic checks that a panicking OnChange is a warning and
// the watcher goes on.
func TestWatcherCallbackPanic(t *testing.T) {
	dir := t.TempDir()
	r, _ := NewRoot(dir)
	var calls atomic.Int32
	w, err := NewWatcher(r, WatchOptions{Debounce: 20 * time.Millisecond, OnChange: func(Batch) {
		if calls.Add(1) == 1 {
			panic("boom")
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "a"), "x")
	eventually(t, "the first batch", func() bool { return calls.Load() == 1 })
	write(t, filepath.Join(dir, "b"), "x")
	eventually(t, "the second batch", func() bool { return calls.Load() == 2 })
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if ws := w.Warnings(); len(ws) != 1 || !strings.Contains(ws[0], "boom") {
		t.Errorf("Warnings() = %q", ws)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestWatcherCloseFlushes checks that Close delivers what is pending.
func TestWatcherCloseFlushes(t *testing.T) {
	dir := t.TempDir()
	w, c := startWatcher(t, dir, WatchOptions{Debounce: time.Hour, MaxDelay: time.Hour})
	write(t, filepath.Join(dir, "a"), "x")
	time.Sleep(100 * time.Millisecond) // the event reaches the loop
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !c.seen("a", "created") {
		t.Errorf("pending change lost on Close: %v", c.snapshot())
	}
}

// makeTree creates n directories, 100 per parent, each with one file.
func makeTree(tb testing.TB, base string, n int) {
	tb.Helper()
	for i := range n {
		d := filepath.Join(base, fmt.Sprintf("p%03d", i/100), fmt.Sprintf("c%03d", i%100))
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "f.go"), nil, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkWatcherStartup_10kDirs measures NewWatcher (walk + one inotify
// watch per directory) on a tree of 10,000 leaf directories (10,101 watches
// with their parents and the root), each holding one file. Close is timed
// apart (close-ms/op); live-heap-B is the heap the open watcher holds;
// maxrss-MB is the test process's peak resident size (tree creation included).
func BenchmarkWatcherStartup_10kDirs(b *testing.B) {
	dir := b.TempDir()
	makeTree(b, dir, 10_000)
	r, err := NewRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	var live uint64
	var closing time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var before runtime.MemStats
		if i == 0 {
			b.StopTimer()
			runtime.GC()
			runtime.ReadMemStats(&before)
			b.StartTimer()
		}
		w, err := NewWatcher(r, WatchOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			b.StopTimer()
			if n := len(w.WatchList()); n != 10_101 {
				b.Fatalf("%d directories watched", n)
			}
			var after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&after)
			live = after.HeapAlloc - min(before.HeapAlloc, after.HeapAlloc)
			b.StartTimer()
		}
		b.StopTimer()
		t0 := time.Now()
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		closing += time.Since(t0)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(closing.Milliseconds())/float64(b.N), "close-ms/op")
	b.ReportMetric(float64(live), "live-heap-B")
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "maxrss-MB")
	}
}

// BenchmarkWatcherBurst measures a burst of 1,000 writes over 50 files until
// the watcher has delivered every file; ns/op is mostly the file system's
// own cost of the writes. tail-ms/op is the time from the last write to the
// delivery (the 50 ms debounce included); batches/op is how many batches the
// burst became.
func BenchmarkWatcherBurst(b *testing.B) {
	dir := b.TempDir()
	const files = 50
	for i := range files {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.txt", i)), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	r, err := NewRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	nb := 0
	w, err := NewWatcher(r, WatchOptions{Debounce: 50 * time.Millisecond, OnChange: func(bt Batch) {
		mu.Lock()
		nb++
		for _, p := range bt.Modified {
			seen[p] = true
		}
		mu.Unlock()
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	var tail time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		mu.Lock()
		clear(seen)
		mu.Unlock()
		for j := range 1000 {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.txt", j%files)), []byte{byte(j)}, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		wrote := time.Now()
		for {
			mu.Lock()
			n := len(seen)
			mu.Unlock()
			if n == files {
				break
			}
			time.Sleep(time.Millisecond)
		}
		tail += time.Since(wrote)
	}
	b.StopTimer()
	mu.Lock()
	b.ReportMetric(float64(nb)/float64(b.N), "batches/op")
	b.ReportMetric(float64(tail.Microseconds())/1000/float64(b.N), "tail-ms/op")
	mu.Unlock()
}
