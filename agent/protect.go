package agent

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/workspace"
)

// protected are the workspace paths (slash-separated, relative to the root)
// that the agent's tools never write (R-W2): the transcript and its locks,
// the flight records, the server's own configuration and Project Memory,
// which only the store, the engine and Project Memory write. A path is
// protected when it is one of them or lies under one.
type protected []string

// protectedPaths lists the protected paths of a workspace whose sessions and
// flight records live in sessionDir and flightDir (absolute; ignored when
// outside root, which the configuration refuses).
func protectedPaths(root, sessionDir, flightDir string) protected {
	p := protected{".soba/config.json", ".soba/memory", ".soba/sessions", ".soba/flight"}
	for _, d := range []string{sessionDir, flightDir} {
		if d == "" || root == "" {
			continue
		}
		if rel, err := filepath.Rel(root, d); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			p = append(p, filepath.ToSlash(rel))
		}
	}
	return p
}

// check refuses rel when it is protected, naming it and why.
func (p protected) check(rel string) error {
	for _, q := range p {
		if rel == q || strings.HasPrefix(rel, q+"/") {
			return fmt.Errorf("%s is protected: %s is written only by SOBA itself, never by a tool (R-W2)", rel, q)
		}
	}
	return nil
}

// readCapsuleFile reads a .capsule.md for capsule.load (R-W1): through the
// workspace's door when it lies inside the workspace, else as a bounded
// regular file; the open never blocks and at most capsule.MaxSize bytes are
// read. It holds no lock of the agent.
func (a *Agent) readCapsuleFile(abs string) ([]byte, error) {
	if r := a.opt.Resolver; r != nil {
		if _, inside := r.Inside(abs); inside {
			return r.ReadFile(abs, capsule.MaxSize)
		}
	}
	return workspace.ReadRegularFile(abs, capsule.MaxSize)
}

// refuseReceipt refuses an export to a path that is, or leads to, a receipt
// (R-W2): anything under the session or flight directories, a protected
// path of the workspace, a lock file, or an existing file that is a session
// transcript (its first line is a session header), wherever it is.
func (a *Agent) refuseReceipt(abs string) error {
	paths := []string{filepath.Clean(abs)}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		paths = append(paths, filepath.Join(dir, filepath.Base(abs)))
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		paths = append(paths, real)
	}
	dirs := []string{a.opt.SessionDir, a.opt.FlightDir}
	for _, d := range dirs[:2] {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			dirs = append(dirs, real)
		}
	}
	for _, p := range paths {
		for _, d := range dirs {
			if d == "" {
				continue
			}
			if rel, err := filepath.Rel(d, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return fmt.Errorf("%s is a receipt (under %s); an export never writes there (R-W2)", abs, d)
			}
		}
		if r := a.opt.Resolver; r != nil {
			if rel, inside := r.Inside(p); inside {
				if err := a.tools.protected.check(rel); err != nil {
					return fmt.Errorf("export: %w", err)
				}
			}
		}
		if strings.HasSuffix(p, ".lock") {
			return fmt.Errorf("%s is a lock file; an export never writes there (R-W2)", abs)
		}
	}
	if isTranscript(abs) {
		return fmt.Errorf("%s is a session transcript; an export never overwrites one (R-W2)", abs)
	}
	return nil
}

// isTranscript reports whether the regular file at abs starts with a
// session header entry.
func isTranscript(abs string) bool {
	f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	buf := make([]byte, 64<<10)
	n, _ := io.ReadFull(f, buf)
	line, _, _ := bytes.Cut(buf[:n], []byte{'\n'})
	e, err := session.DecodeLine(line)
	return err == nil && e.Type == session.TypeSession
}
