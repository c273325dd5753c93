package session

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Info describes one session file for soba.session.list.
type Info struct {
	SessionID string    `json:"sessionId"`
	Path      string    `json:"path"`
	UpdatedAt time.Time `json:"updatedAt"`
	Entries   int       `json:"entries"`
	// Title is the session's first user request that is not blank, its
	// first line with whitespace collapsed and clipped to MaxTitle bytes;
	// empty when the session has none yet.
	Title string `json:"title"`
	// Bytes is the file's size.
	Bytes int64 `json:"bytes"`
}

// MaxTitle bounds Info.Title: a picker shows one line.
const MaxTitle = 80

// maxTitleLine bounds the line List decodes for a title; a longer first
// request is skipped (the next one titles the session), so a hostile file
// cannot make List hold more than this.
const maxTitleLine = 1 << 20

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
		c, err := countEntries(path, buf)
		if errors.Is(err, fs.ErrNotExist) { // removed since ReadDir
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("session: list: %w", err)
		}
		out = append(out, Info{SessionID: strings.TrimSuffix(name, ".jsonl"), Path: path, UpdatedAt: c.mod, Entries: c.entries,
			Title: c.title, Bytes: c.size})
	}
	slices.SortFunc(out, func(a, b Info) int {
		return cmp.Or(b.UpdatedAt.Compare(a.UpdatedAt), cmp.Compare(a.SessionID, b.SessionID))
	})
	return out, nil
}

// fileCount is what countEntries learns from one pass over a file.
type fileCount struct {
	entries int
	mod     time.Time
	size    int64
	title   string
}

// countEntries counts the newline-terminated lines of path whose last byte
// (before an optional "\r") is '}', finds the title (the first user request
// that is not blank) and returns the file's modification time and size.
func countEntries(path string, buf []byte) (fileCount, error) {
	f, err := openFile(path, os.O_RDONLY)
	if err != nil {
		return fileCount{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fileCount{}, err
	}
	c := fileCount{mod: fi.ModTime(), size: fi.Size()}
	var prev, prev2 byte // the two bytes before the current position
	// line collects the current line while no title is found; nil when the
	// line outgrew maxTitleLine.
	line, found := []byte{}, false
	for {
		n, rerr := f.Read(buf)
		p := buf[:n]
		for len(p) > 0 {
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				prev, prev2 = lastTwo(p, prev, prev2)
				if !found && line != nil {
					line = appendBounded(line, p)
				}
				break
			}
			b1, b2 := lastTwo(p[:i], prev, prev2)
			if b1 == '}' || (b1 == '\r' && b2 == '}') {
				c.entries++
				if !found && line != nil {
					if line = appendBounded(line, p[:i]); line != nil {
						c.title, found = userTitle(line)
					}
				}
			}
			if !found {
				if line == nil {
					line = []byte{}
				}
				line = line[:0]
			}
			prev, prev2 = '\n', 0
			p = p[i+1:]
		}
		if rerr == io.EOF {
			return c, nil
		}
		if rerr != nil {
			return fileCount{}, rerr
		}
	}
}

// appendBounded appends p to line, or returns nil when the line would
// outgrow maxTitleLine.
func appendBounded(line, p []byte) []byte {
	if len(line)+len(p) > maxTitleLine {
		return nil
	}
	return append(line, p...)
}

// userTitle returns the title a line gives when it is a user entry with a
// request that is not blank.
func userTitle(line []byte) (string, bool) {
	// The header fields come first on a line: skip the decode of the many
	// lines that are not user entries.
	if !bytes.Contains(line[:min(len(line), 256)], []byte(`"type":"user"`)) {
		return "", false
	}
	var e struct {
		Type string       `json:"type"`
		User *UserMessage `json:"user"`
	}
	if json.Unmarshal(line, &e) != nil || e.Type != TypeUser || e.User == nil {
		return "", false
	}
	for _, l := range strings.Split(e.User.Text, "\n") {
		if t := strings.Join(strings.Fields(l), " "); t != "" {
			return clipTitle(t), true
		}
	}
	return "", false
}

// clipTitle shortens t to MaxTitle bytes ending in "…", on a rune boundary.
func clipTitle(t string) string {
	if len(t) <= MaxTitle {
		return t
	}
	cut := MaxTitle - len("…")
	for cut > 0 && !utf8.RuneStart(t[cut]) {
		cut--
	}
	return t[:cut] + "…"
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
