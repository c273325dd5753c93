package session

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Info describes one session file for soba.session.list.
type Info struct {
	SessionID string    `json:"sessionId"`
	Path      string    `json:"path"`
	UpdatedAt time.Time `json:"updatedAt"`
	Entries   int       `json:"entries"`
}

// List describes the session files (*.jsonl) in dir, most recently updated
// first, without decoding any entry: Entries counts the complete lines that
// end like an entry, so a torn tail or a healed torn line is not counted. A
// missing dir has no sessions. List takes no lock: a file being appended to
// may be counted a few entries short.
func List(dir string) ([]Info, error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("session: list: %w", err)
	}
	var out []Info
	buf := make([]byte, 256<<10)
	for _, de := range des {
		name := de.Name()
		if !de.Type().IsRegular() || !strings.HasSuffix(name, ".jsonl") {
			continue
		}
		path := filepath.Join(dir, name)
		n, mod, err := countEntries(path, buf)
		if errors.Is(err, fs.ErrNotExist) { // removed since ReadDir
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("session: list: %w", err)
		}
		out = append(out, Info{SessionID: strings.TrimSuffix(name, ".jsonl"), Path: path, UpdatedAt: mod, Entries: n})
	}
	slices.SortFunc(out, func(a, b Info) int {
		return cmp.Or(b.UpdatedAt.Compare(a.UpdatedAt), cmp.Compare(a.SessionID, b.SessionID))
	})
	return out, nil
}

// countEntries counts the newline-terminated lines of path whose last byte
// (before an optional "\r") is '}', and returns the file's modification time.
func countEntries(path string, buf []byte) (int, time.Time, error) {
	f, err := openFile(path, os.O_RDONLY)
	if err != nil {
		return 0, time.Time{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, time.Time{}, err
	}
	count := 0
	var prev, prev2 byte // the two bytes before the current position
	for {
		n, rerr := f.Read(buf)
		p := buf[:n]
		for len(p) > 0 {
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				prev, prev2 = lastTwo(p, prev, prev2)
				break
			}
			b1, b2 := lastTwo(p[:i], prev, prev2)
			if b1 == '}' || (b1 == '\r' && b2 == '}') {
				count++
			}
			prev, prev2 = '\n', 0
			p = p[i+1:]
		}
		if rerr == io.EOF {
			return count, fi.ModTime(), nil
		}
		if rerr != nil {
			return 0, time.Time{}, rerr
		}
	}
}

// lastTwo returns the last and second-to-last bytes of the stream after p,
// given those before p.
func lastTwo(p []byte, prev, prev2 byte) (byte, byte) {
	switch len(p) {
	case 0:
		return prev, prev2
	case 1:
		return p[0], prev
	}
	return p[len(p)-1], p[len(p)-2]
}
