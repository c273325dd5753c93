package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Root is the workspace root: the one directory every agent file tool and
// every command that takes a path is confined to. Its directory is absolute
// with symlinks resolved, so containment checks compare real paths. A Root is
// immutable and safe for concurrent use.
type Root struct {
	dir    string
	fsroot *os.Root // the door (door.go): every open goes through it
}

// NewRoot makes the workspace root of dir, which must be an existing
// directory. Relative dirs are taken against the process's working directory.
func NewRoot(dir string) (*Root, error) {
	if dir == "" {
		return nil, errors.New("workspace root: empty path")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace root %q: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace root %q: %w", dir, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("workspace root %q: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("workspace root %q: not a directory", dir)
	}
	fsroot, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("workspace root %q: %w", dir, err)
	}
	return &Root{dir: real, fsroot: fsroot}, nil
}

// Close releases the root's directory descriptor; the Root must not be used
// afterwards.
func (r *Root) Close() error { return r.fsroot.Close() }

// Dir is the root's absolute, symlink-free directory.
func (r *Root) Dir() string { return r.dir }

// EscapeError is the error of a path that leaves the workspace root, lexically
// (`..`, an absolute path elsewhere) or through a symlink.
type EscapeError struct {
	Path   string // the path as given
	Root   string // the root's directory
	Target string // where a symlink led, when one did
}

func (e *EscapeError) Error() string {
	if e.Target != "" {
		return fmt.Sprintf("path %q escapes the workspace root %s (through a symlink to %s)", e.Path, e.Root, e.Target)
	}
	return fmt.Sprintf("path %q escapes the workspace root %s", e.Path, e.Root)
}

// Resolve confines path to the root. A relative path is taken against the
// root; an absolute one must lie inside it. The path need not exist: the
// longest existing prefix is resolved through its symlinks and the rest is
// appended, so a file about to be created under a symlinked directory is
// checked against where it would really land. A dangling symlink is followed
// to its target for the same reason.
//
// abs is the cleaned absolute path under the root's directory as the caller
// named it (a symlink inside the workspace that points inside the workspace
// is kept, not replaced by its target); rel is abs relative to the root with
// forward slashes, "." for the root itself. The error names the path.
func (r *Root) Resolve(path string) (abs, rel string, err error) {
	if path == "" {
		return "", "", errors.New("empty path")
	}
	if strings.ContainsRune(path, 0) {
		return "", "", fmt.Errorf("path %q contains a NUL byte", path)
	}
	lexical := path
	if !filepath.IsAbs(lexical) {
		lexical = filepath.Join(r.dir, lexical)
	}
	lexical = filepath.Clean(lexical)

	real, err := resolveExisting(lexical, r.dir)
	if err != nil {
		return "", "", fmt.Errorf("path %q: %w", path, err)
	}
	realRel, inside := r.within(real)
	if !inside {
		esc := &EscapeError{Path: path, Root: r.dir}
		if _, lexInside := r.within(lexical); lexInside {
			esc.Target = real
		}
		return "", "", esc
	}
	// Keep the name the caller used when it lies under the root; an absolute
	// path that reached the root only after resolving (an alias of the root
	// itself, such as /tmp → /private/tmp) is named by its real location.
	if lexRel, ok := r.within(lexical); ok {
		return lexical, lexRel, nil
	}
	return real, realRel, nil
}

// Rel is abs relative to the root with forward slashes, for display; a path
// outside the root is returned unchanged.
func (r *Root) Rel(abs string) string {
	if rel, ok := r.within(filepath.Clean(abs)); ok {
		return rel
	}
	return abs
}

// within reports whether the cleaned absolute path p lies at or under the
// root, and its slash-separated relative path if so.
func (r *Root) within(p string) (string, bool) {
	rel, err := filepath.Rel(r.dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// maxSymlinkHops bounds symlink resolution, as the kernel's ELOOP does.
const maxSymlinkHops = 255

// resolveExisting resolves the symlinks of the cleaned absolute path p as far
// as it exists and appends the part that does not. Unlike
// filepath.EvalSymlinks it succeeds on a path whose tail is missing, and it
// follows a dangling symlink's target, so the result is where a create at p
// would land. base is a directory known to be free of symlinks (the root):
// a p under it is walked from there, one Lstat per component below it.
func resolveExisting(p, base string) (string, error) {
	resolved, rest := startOfWalk(p, base)
	parts := splitPath(rest)
	hops := 0
	for i := 0; i < len(parts); i++ {
		next := filepath.Join(resolved, parts[i])
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			return filepath.Join(append([]string{next}, parts[i+1:]...)...), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if !fi.IsDir() && i < len(parts)-1 {
				return "", fmt.Errorf("%s is not a directory", next)
			}
			resolved = next
			continue
		}
		if hops++; hops > maxSymlinkHops {
			return "", fmt.Errorf("too many levels of symbolic links at %s", next)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			// resolved is symlink-free, so a lexical join of the target's
			// `..` elements is where the kernel would go.
			target = filepath.Join(resolved, target)
		}
		resolved, rest = startOfWalk(filepath.Clean(target), base)
		parts = append(splitPath(rest), parts[i+1:]...)
		i = -1
	}
	return resolved, nil
}

// startOfWalk splits the cleaned absolute path p into a symlink-free start
// (base when p lies under it, else the volume's root) and the rest to walk.
func startOfWalk(p, base string) (start, rest string) {
	if p == base {
		return base, ""
	}
	if strings.HasPrefix(p, base+string(filepath.Separator)) {
		return base, p[len(base)+1:]
	}
	vol := filepath.VolumeName(p)
	return vol + string(filepath.Separator), p[len(vol):]
}

func splitPath(p string) []string {
	var out []string
	for _, s := range strings.Split(p, string(filepath.Separator)) {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
