package session

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// MaxFileBytes bounds a session file that is resumed, scanned or verified
// (R-W1): a sparse file claiming 64 GB is refused before a byte is read.
const MaxFileBytes int64 = 2 << 30

// openFile opens a session file for the store or a reader (R-W1): the last
// component is never followed (a session file that is a symlink, to an
// outside file or to /dev/zero, is refused rather than appended to), the open
// never blocks (a FIFO does not wait for a writer), and only a regular file
// of at most MaxFileBytes is accepted. The error names the path and the
// problem.
func openFile(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK|oNoFollow, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s is a symbolic link; a session file must be a regular file", path)
		}
		if errors.Is(err, syscall.ENXIO) {
			return nil, fmt.Errorf("%s is not a regular file", path)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, modeName(fi.Mode()))
	}
	if fi.Size() > MaxFileBytes {
		f.Close()
		return nil, fmt.Errorf("%s is %d bytes, over the %d-byte limit of a session file", path, fi.Size(), MaxFileBytes)
	}
	return f, nil
}

func modeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "irregular"
}

// readSessionFile reads a whole session file opened by openFile.
func readSessionFile(path string) ([]byte, error) {
	f, err := openFile(path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	data := make([]byte, 0, fi.Size()+1)
	for {
		if int64(len(data)) > MaxFileBytes {
			return nil, fmt.Errorf("%s grew over the %d-byte limit of a session file", path, MaxFileBytes)
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err != nil {
			if errors.Is(err, io.EOF) {
				return data, nil
			}
			return nil, err
		}
	}
}

// LineOf is the 1-based line number of the entry that starts at offset, for
// reports that name a line; it reads the file up to offset.
func (s *Store) LineOf(offset int64) (int, error) {
	s.mu.Lock()
	f := s.f
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return 0, ErrClosed
	}
	buf := make([]byte, 64<<10)
	line := 1
	for off := int64(0); off < offset; {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), offset-off)], off)
		line += bytes.Count(buf[:n], []byte{'\n'})
		off += int64(n)
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return 0, err
		}
	}
	return line, nil
}

// Undecodable loads each entry of metas and returns, for each one whose
// line does not decode as an entry (a valid header with a payload of the
// wrong shape, such as "user":{"text":123}), a BadLine naming its line and
// why. The same decoder (DecodeLine) serves Load and verify, so an
// entry reported here is the one verify calls not an entry.
func (s *Store) Undecodable(metas []Meta) []BadLine {
	var out []BadLine
	for _, m := range metas {
		if _, err := s.Load(m.ID); err != nil && !errors.Is(err, ErrClosed) {
			line := int(m.Line)
			if line == 0 {
				line, _ = s.LineOf(m.Offset)
			}
			out = append(out, BadLine{Line: line, Offset: m.Offset, Err: fmt.Errorf("entry %q cannot be decoded: %v", m.ID, err)})
		}
	}
	return out
}
