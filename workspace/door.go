package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// The door (R-W1): every file of the workspace that the server or the
// agent's tools open is opened through the Root's os.Root, which resolves
// each path component relative to the root's directory descriptor and
// refuses `..`, absolute and symlink escapes, also when a symlink is swapped
// in between a check and the open (the kernel does the walk, there is no
// check-then-use). On top of os.Root the door adds what os.Root leaves to
// its callers: files are opened non-blocking and refused unless regular
// (FIFOs, devices and sockets never block or stream endlessly), and every
// whole-file read is bounded.
//
// Limit: a hardlink inside the workspace to a file outside it is the same
// file; os.Root cannot tell it apart and neither can the door
// (docs/security.md).

// Read bounds of the files the server reads whole.
const (
	MaxConfigBytes    = 1 << 20   // .soba/config.json and the user's config
	MaxGitignoreBytes = 1 << 20   // the root .gitignore
	MaxMemoryBytes    = 4 << 20   // Project Memory's MEMORY.md
	MaxCapsuleBytes   = 4 << 20   // a .capsule.md loaded by capsule.load
	MaxSkillBytes     = 256 << 10 // a SKILL.md
)

// NotRegularError is the error of a path that names something other than a
// regular file (a FIFO, a device, a socket, a directory where a file was
// expected).
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is not a regular file (%s)", e.Path, kindOf(e.Mode))
}

// TooLargeError is the error of a whole-file read over its bound.
type TooLargeError struct {
	Path        string
	Size, Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is %d bytes, over the %d-byte limit", e.Path, e.Size, e.Limit)
}

func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	}
	return "irregular"
}

// relName turns a path as callers give it (relative to the root, or absolute
// under the root) into the slash-separated name os.Root takes. Lexical
// escapes are refused here with the root's own error; symlink escapes are
// refused by os.Root at open, whatever happened in between.
func (r *Root) relName(p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("path %q contains a NUL byte", p)
	}
	lexical := p
	if !filepath.IsAbs(lexical) {
		lexical = filepath.Join(r.dir, lexical)
	}
	rel, ok := r.within(filepath.Clean(lexical))
	if !ok {
		// An absolute alias of the root (/tmp → /private/tmp) reaches it
		// only after resolving: Resolve knows.
		_, rrel, err := r.Resolve(p)
		if err != nil {
			return "", err
		}
		rel = rrel
	}
	return rel, nil
}

// rootErr names the path the caller gave in an os.Root error instead of
// os.Root's internal name, and says "escapes the workspace root" for
// os.Root's escape error.
func (r *Root) rootErr(op, name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if err != nil && strings.Contains(err.Error(), "escapes from parent") {
		return &EscapeError{Path: name, Root: r.dir}
	}
	return fmt.Errorf("%s %s: %w", op, name, err)
}

// Open opens the regular file name for reading through the door: the open
// is non-blocking (a FIFO does not wait for a writer) and anything but a
// regular file is refused with a NotRegularError. name is relative to the
// root (or absolute under it); the error names it.
func (r *Root) Open(name string) (*os.File, error) {
	rel, err := r.relName(name)
	if err != nil {
		return nil, err
	}
	f, err := r.fsroot.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, r.rootErr("open", rel, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, r.rootErr("stat", rel, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: rel, Mode: fi.Mode()}
	}
	return f, nil
}

// ReadFile reads the regular file name whole when it is at most limit bytes,
// else fails with a TooLargeError without reading it. A file that grows
// while it is read is cut at limit+1 bytes and refused the same way.
func (r *Root) ReadFile(name string, limit int64) ([]byte, error) {
	f, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rel, _ := r.relName(name)
	fi, err := f.Stat()
	if err != nil {
		return nil, r.rootErr("stat", rel, err)
	}
	if fi.Size() > limit {
		return nil, &TooLargeError{Path: rel, Size: fi.Size(), Limit: limit}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, r.rootErr("read", rel, err)
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Path: rel, Size: int64(len(data)), Limit: limit}
	}
	return data, nil
}

// Stat is os.Root's Stat of name (symlinks inside the root followed).
func (r *Root) Stat(name string) (fs.FileInfo, error) {
	rel, err := r.relName(name)
	if err != nil {
		return nil, err
	}
	fi, err := r.fsroot.Stat(rel)
	if err != nil {
		return nil, r.rootErr("stat", rel, err)
	}
	return fi, nil
}

// WriteFile creates or replaces the contents of the regular file name,
// making its parent directories. An existing file keeps its permissions.
// The open is non-blocking and anything but a regular file is refused before
// a byte is written or truncated.
func (r *Root) WriteFile(name string, data []byte, perm fs.FileMode) error {
	return r.WriteFileGuarded(name, data, perm, nil)
}

// WriteFileGuarded is WriteFile with a guard: after the file is opened, and
// before anything is truncated or written, guard is called with the path
// the open really reached (relative to the root, symlinks resolved, read
// back from the open descriptor), so a symlink swapped in after any check
// cannot redirect the write to a protected file (R-W2). A guard error
// leaves the file untouched (a file the open created is removed).
func (r *Root) WriteFileGuarded(name string, data []byte, perm fs.FileMode, guard func(realRel string) error) error {
	rel, err := r.relName(name)
	if err != nil {
		return err
	}
	if dir := path.Dir(rel); dir != "." {
		if err := r.fsroot.MkdirAll(dir, 0o755); err != nil {
			return r.rootErr("mkdir", dir, err)
		}
	}
	created := false
	f, err := r.fsroot.OpenFile(rel, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		f, err = r.fsroot.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NONBLOCK, perm)
		created = err == nil
	}
	if errors.Is(err, syscall.ENXIO) { // a FIFO without a reader, a device
		if fi, lerr := r.fsroot.Stat(rel); lerr == nil && !fi.Mode().IsRegular() {
			return &NotRegularError{Path: rel, Mode: fi.Mode()}
		}
	}
	if err != nil {
		return r.rootErr("open", rel, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return r.rootErr("stat", rel, err)
	}
	if !fi.Mode().IsRegular() {
		return &NotRegularError{Path: rel, Mode: fi.Mode()}
	}
	if guard != nil {
		real, err := r.openedRel(f, rel)
		if err == nil {
			err = guard(real)
		}
		if err != nil {
			if created {
				_ = r.fsroot.Remove(rel)
			}
			return err
		}
	}
	if err := f.Truncate(0); err != nil {
		return r.rootErr("truncate", rel, err)
	}
	if _, err := f.Write(data); err != nil {
		return r.rootErr("write", rel, err)
	}
	return f.Close()
}

// WalkFunc is called for every entry of a Walk with its slash-separated path
// relative to the root and its directory entry (never followed: a symlink is
// reported as one). Returning fs.SkipDir skips a directory, fs.SkipAll ends
// the walk.
type WalkFunc func(rel string, d fs.DirEntry) error

// Walk walks the tree at name through the door in lexical order, never
// following a symlink (a symlinked directory is reported, not entered), and
// stops with ctx's error when ctx ends. Directories are opened non-blocking
// with O_DIRECTORY, so one swapped for a FIFO mid-walk is skipped rather
// than waited on. An unreadable directory below name is skipped.
func (r *Root) Walk(ctx context.Context, name string, fn WalkFunc) error {
	rel, err := r.relName(name)
	if err != nil {
		return err
	}
	fi, err := r.fsroot.Lstat(rel)
	if err != nil {
		return r.rootErr("lstat", rel, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		// The named start may be a symlink inside the root (os.Root follows
		// it only within the root).
		if fi, err = r.fsroot.Stat(rel); err != nil {
			return r.rootErr("stat", rel, err)
		}
	}
	d := fs.FileInfoToDirEntry(fi)
	err = fn(rel, d)
	if err != nil || !fi.IsDir() {
		if err == fs.SkipDir || err == fs.SkipAll {
			return nil
		}
		return err
	}
	err = r.walkDir(ctx, rel, fn)
	if err == fs.SkipAll {
		return nil
	}
	return err
}

func (r *Root) walkDir(ctx context.Context, dir string, fn WalkFunc) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := r.fsroot.OpenFile(dir, dirOpenFlags, 0)
	if err != nil {
		return nil // vanished, unreadable or no longer a directory
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil && len(ents) == 0 {
		return nil
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := e.Name()
		if dir != "." {
			p = dir + "/" + p
		}
		err := fn(p, e)
		if err == fs.SkipDir {
			continue
		}
		if err != nil {
			return err
		}
		if e.IsDir() { // from the directory itself: a symlink is never IsDir
			if err := r.walkDir(ctx, p, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReadRegularFile reads a file outside any workspace root (the user's own
// configuration) with the door's other guarantees: a non-blocking open,
// regular files only, at most limit bytes.
func ReadRegularFile(name string, limit int64) ([]byte, error) {
	f, err := OpenRegularFile(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, &TooLargeError{Path: name, Size: fi.Size(), Limit: limit}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Path: name, Size: int64(len(data)), Limit: limit}
	}
	return data, nil
}

// OpenRegularFile opens a file outside any workspace root (the user's own
// files) for reading with the door's other guarantees: the open never
// blocks, and anything but a regular file is refused with a NotRegularError.
func OpenRegularFile(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: name, Mode: fi.Mode()}
	}
	return f, nil
}

// readConfigLayer reads a configuration file: through the door of root when
// it lies inside the workspace (a committed .soba/config.json linking to
// /dev/zero or outside is refused), else as a bounded regular file.
func readConfigLayer(root, name string) ([]byte, error) {
	if root != "" {
		if r, err := NewRoot(root); err == nil {
			defer r.Close()
			if _, inside := r.within(filepath.Clean(name)); inside {
				return r.ReadFile(name, MaxConfigBytes)
			}
		}
	}
	return ReadRegularFile(name, MaxConfigBytes)
}

// ReadDir lists the directory name through the door (non-blocking,
// O_DIRECTORY: a FIFO or a file in its place is an error, never a wait),
// sorted by name. Entries are not followed.
func (r *Root) ReadDir(name string) ([]fs.DirEntry, error) {
	rel, err := r.relName(name)
	if err != nil {
		return nil, err
	}
	f, err := r.fsroot.OpenFile(rel, dirOpenFlags, 0)
	if err != nil {
		return nil, r.rootErr("open", rel, err)
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, r.rootErr("readdir", rel, err)
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, nil
}

// openedRel is where the open descriptor f really is, relative to the root:
// Linux's /proc/self/fd link names the file the kernel opened, whatever
// symlinks led there. Elsewhere it falls back to resolving name now.
func (r *Root) openedRel(f *os.File, name string) (string, error) {
	target, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil {
		real, rerr := resolveExisting(filepath.Join(r.dir, filepath.FromSlash(name)), r.dir)
		if rerr != nil {
			return "", rerr
		}
		target = real
	}
	rel, ok := r.within(filepath.Clean(target))
	if !ok {
		return "", &EscapeError{Path: name, Root: r.dir, Target: target}
	}
	return rel, nil
}

// Real is where name leads now, relative to the root with symlinks
// resolved (the file need not exist). It is for checks and messages; opens
// go through the door, which resolves again.
func (r *Root) Real(name string) (string, error) {
	rel, err := r.relName(name)
	if err != nil {
		return "", err
	}
	real, err := resolveExisting(filepath.Join(r.dir, filepath.FromSlash(rel)), r.dir)
	if err != nil {
		return "", err
	}
	out, ok := r.within(real)
	if !ok {
		return "", &EscapeError{Path: name, Root: r.dir, Target: real}
	}
	return out, nil
}

// Inside reports whether the absolute path p lies at or under the root
// (lexically, on the root's real directory), with its slash-separated path
// relative to the root.
func (r *Root) Inside(p string) (string, bool) {
	return r.within(filepath.Clean(p))
}

// MkdirAllInside makes the directory rel (slash-separated, relative to the
// root) and its parents through the door, and checks that it is a real
// directory at that very name: no component is a symlink, so that the
// server's own directories (.soba, Project Memory, flight records) cannot be
// redirected by a repository that commits one as a link, outside or
// elsewhere inside (R-W1, R-W2). The error names the directory.
func (r *Root) MkdirAllInside(rel string) error {
	check := func() error {
		real, err := r.Real(rel)
		if err != nil {
			return err
		}
		if real != path.Clean(rel) {
			return fmt.Errorf("%s leads through a symbolic link (to %s); SOBA's own directories must be real directories", rel, real)
		}
		return nil
	}
	if err := check(); err != nil { // before anything is made through a link
		return err
	}
	if err := r.fsroot.MkdirAll(rel, 0o755); err != nil {
		return r.rootErr("mkdir", rel, err)
	}
	return check()
}
