package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gofrs/flock"

	"github.com/soba-agent/soba-lsp/internal/lazyregexp"
)

// SobaDirName is soba's directory under the workspace root.
const SobaDirName = ".soba"

// sobaGitignore is written to `.soba/.gitignore` when there is none
// (PROTOCOL.md "Files": transcripts and flight records are not committed by
// accident). It ignores what is private to one person's sessions — the
// transcripts (the whole conversation, tool output, possibly secrets) and
// flight records — and the lock and temporary files of atomic writes. It
// keeps what is meant to be shared with the project: Project Memory
// (memory/), portable capsules (capsules/), skills (skills/) and config.json.
// An existing `.soba/.gitignore` is the user's and is left alone.
const sobaGitignore = `# Written by soba-lsp. Session transcripts and flight records stay local:
# they hold whole conversations and tool output. Project Memory (memory/),
# portable capsules (capsules/), skills (skills/) and config.json are meant
# to be committed with the project.
sessions/
flight/
*.lock
.*.tmp
`

// EnsureSobaDir creates `<root>/.soba/` and its `.gitignore` when missing,
// and returns the directory.
func EnsureSobaDir(root *Root) (string, error) {
	dir := filepath.Join(root.Dir(), SobaDirName)
	if err := root.MkdirAllInside(SobaDirName); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	gi := filepath.Join(dir, ".gitignore")
	if _, err := os.Lstat(gi); err == nil {
		return dir, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("check %s: %w", gi, err)
	}
	if err := writeAtomic(gi, []byte(sobaGitignore)); err != nil {
		return "", err
	}
	return dir, nil
}

// Memory is Project Memory (R-C4): capsules of explicit compactions mirrored
// under `.soba/memory/capsules/<checkpointId>.capsule.md` and listed in
// `.soba/memory/MEMORY.md`, one line per capsule. It stores; whether a capsule
// may be mirrored is the compaction engine's decision
// (compaction.ShouldMirror). Safe for concurrent use, and across processes
// sharing the workspace: the index is rewritten under a file lock.
type Memory struct {
	root *Root
	dir  string // .soba/memory

	mu sync.Mutex // serialises Mirror within the process
}

// MemoryItem is one capsule listed in MEMORY.md.
type MemoryItem struct {
	CheckpointID string
	Title        string
	Created      time.Time
	// Path is the capsule file, workspace-relative
	// (`.soba/memory/capsules/<id>.capsule.md`).
	Path string
}

// OpenMemory opens the Project Memory of root, creating `.soba/` (with its
// .gitignore) and `.soba/memory/capsules/` when missing.
func OpenMemory(root *Root) (*Memory, error) {
	soba, err := EnsureSobaDir(root)
	if err != nil {
		return nil, fmt.Errorf("project memory: %w", err)
	}
	dir := filepath.Join(soba, "memory")
	if err := root.MkdirAllInside(SobaDirName + "/memory/capsules"); err != nil {
		return nil, fmt.Errorf("project memory: %w", err)
	}
	return &Memory{root: root, dir: dir}, nil
}

// IndexPath is MEMORY.md's absolute path.
func (m *Memory) IndexPath() string { return filepath.Join(m.dir, "MEMORY.md") }

var checkpointIDPattern = lazyregexp.New(`^ck_[A-Za-z0-9_-]{1,128}$`)

// maxTitleRunes bounds a title in the index, which is one line per capsule.
const maxTitleRunes = 200

// Mirror writes a capsule's Markdown to Project Memory and lists it in
// MEMORY.md. Both files are written atomically (temporary file, then
// rename), so a reader never sees half a file. Mirroring the same checkpoint
// again replaces its file and its one index line. Index lines whose capsule
// file is gone are dropped. path is the capsule file's absolute path.
func (m *Memory) Mirror(checkpointID, title string, created time.Time, markdown []byte) (path string, err error) {
	if !checkpointIDPattern.MatchString(checkpointID) {
		return "", fmt.Errorf("project memory: checkpoint id %q is not of the form ck_<letters, digits, _ or ->", checkpointID)
	}
	if created.IsZero() {
		return "", fmt.Errorf("project memory: capsule %s has no creation time", checkpointID)
	}
	title = cleanTitle(title)
	m.mu.Lock()
	defer m.mu.Unlock()
	unlock, err := m.lock()
	if err != nil {
		return "", err
	}
	defer unlock()

	path = filepath.Join(m.dir, "capsules", checkpointID+".capsule.md")
	if err := writeAtomic(path, markdown); err != nil {
		return "", fmt.Errorf("project memory: %w", err)
	}
	items, err := m.List()
	if err != nil {
		return "", err
	}
	items = slices.DeleteFunc(items, func(it MemoryItem) bool { return it.CheckpointID == checkpointID })
	items = append(items, MemoryItem{
		CheckpointID: checkpointID,
		Title:        title,
		Created:      created.UTC().Truncate(time.Second),
		Path:         m.root.Rel(path),
	})
	items = slices.DeleteFunc(items, func(it MemoryItem) bool {
		_, err := os.Stat(filepath.Join(m.root.Dir(), filepath.FromSlash(it.Path)))
		return errors.Is(err, fs.ErrNotExist)
	})
	if err := writeAtomic(m.IndexPath(), renderIndex(items)); err != nil {
		return "", fmt.Errorf("project memory: %w", err)
	}
	return path, nil
}

// lock takes the cross-process lock on the index.
func (m *Memory) lock() (func(), error) {
	fl := flock.New(filepath.Join(m.dir, "MEMORY.lock"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ok, err := fl.TryLockContext(ctx, 20*time.Millisecond)
	if err != nil || !ok {
		return nil, fmt.Errorf("project memory: lock %s: %v", fl.Path(), cmpErr(err, "held by another process for 10 s"))
	}
	return func() { _ = fl.Unlock() }, nil
}

func cmpErr(err error, fallback string) string {
	if err != nil {
		return err.Error()
	}
	return fallback
}

func cleanTitle(title string) string {
	title = strings.Join(strings.Fields(title), " ")
	// The index separates fields with " — "; a title keeps its dashes but
	// cannot fake a field boundary at its end.
	title = strings.TrimRight(title, " —")
	if utf8.RuneCountInString(title) > maxTitleRunes {
		r := []rune(title)
		title = strings.TrimSpace(string(r[:maxTitleRunes])) + "…"
	}
	if title == "" {
		title = "(untitled)"
	}
	return title
}

const indexHeader = `# Project Memory

Capsules of explicit compactions, mirrored by soba-lsp for later sessions, newest first.
One line per capsule: checkpoint id — title — created (UTC) — file. soba-lsp rewrites this list.

`

// indexLine matches one capsule line of MEMORY.md.
var indexLine = lazyregexp.New(`^- (ck_[A-Za-z0-9_-]+) — (.*) — (\S+) — \[[^\]]*\]\(([^)\s]+)\)$`)

func renderIndex(items []MemoryItem) []byte {
	sortItems(items)
	var b strings.Builder
	b.WriteString(indexHeader)
	for _, it := range items {
		link := strings.TrimPrefix(it.Path, SobaDirName+"/memory/")
		fmt.Fprintf(&b, "- %s — %s — %s — [%s](%s)\n", it.CheckpointID, it.Title, it.Created.UTC().Format(time.RFC3339), link, link)
	}
	return []byte(b.String())
}

// sortItems orders newest first, then by id, so the index is stable.
func sortItems(items []MemoryItem) {
	slices.SortStableFunc(items, func(a, b MemoryItem) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return strings.Compare(a.CheckpointID, b.CheckpointID)
	})
}

// List reads MEMORY.md: the capsules it lists, newest first. A missing
// index is an empty memory; lines that are not capsule lines (the header,
// notes someone added) are skipped.
func (m *Memory) List() ([]MemoryItem, error) {
	data, err := m.root.ReadFile(m.IndexPath(), MaxMemoryBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("project memory: %w", err)
	}
	var items []MemoryItem
	seen := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		mt := indexLine.FindStringSubmatch(strings.TrimRight(line, "\r"))
		if mt == nil || seen[mt[1]] {
			continue
		}
		created, err := time.Parse(time.RFC3339, mt[3])
		if err != nil {
			continue
		}
		link := filepath.ToSlash(filepath.Clean(filepath.FromSlash(mt[4])))
		if strings.HasPrefix(link, "../") || strings.HasPrefix(link, "/") || link == ".." {
			continue // a link out of memory/ is not a capsule of ours
		}
		seen[mt[1]] = true
		items = append(items, MemoryItem{
			CheckpointID: mt[1],
			Title:        mt[2],
			Created:      created,
			Path:         SobaDirName + "/memory/" + link,
		})
	}
	sortItems(items)
	return items, nil
}

// summaryItems bounds how many capsules Summary names.
const summaryItems = 20

// Summary is a short text of what Project Memory holds, for the system
// prompt of a new session: the newest capsules with their titles, dates and
// files, which the agent can read with read_file when they bear on the task.
// It is "" when Project Memory is empty or cannot be read.
func (m *Memory) Summary() string {
	items, err := m.List()
	if err != nil || len(items) == 0 {
		return ""
	}
	var b strings.Builder
	noun := "capsules"
	if len(items) == 1 {
		noun = "capsule"
	}
	fmt.Fprintf(&b, "Project Memory (%s/memory/MEMORY.md) holds %d %s from earlier sessions, newest first; read one with read_file when it bears on the task:\n", SobaDirName, len(items), noun)
	for i, it := range items {
		if i == summaryItems {
			fmt.Fprintf(&b, "- … and %d older (see MEMORY.md)\n", len(items)-summaryItems)
			break
		}
		fmt.Fprintf(&b, "- %s %s: %s (%s)\n", it.Created.UTC().Format("2006-01-02"), it.CheckpointID, it.Title, it.Path)
	}
	return b.String()
}

// writeAtomic replaces name with data through a temporary file in the same
// directory and a rename, so readers see the old file or the new one.
func writeAtomic(name string, data []byte) error {
	dir := filepath.Dir(name)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(name)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename this is a no-op
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}
