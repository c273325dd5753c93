package session

import (
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
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
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
