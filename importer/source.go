package importer

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// MaxSourceBytes bounds a source converted in memory (Claude Code, Codex,
// opencode; a pi session is streamed and has no bound but its lines'). An
// import converts a whole history, which compaction later fits to the model
// window, so the bound is on what this process holds, not on the window: a
// larger source is refused before a byte is read (R-W7).
const MaxSourceBytes = 512 << 20

// SourceTooLargeError refuses a source over its bound, naming both sizes.
type SourceTooLargeError struct {
	Path        string
	Size, Limit int64
}

func (e *SourceTooLargeError) Error() string {
	return fmt.Sprintf("%s is %d bytes, over the limit of %d bytes for a transcript converted in memory (R-W7)", e.Path, e.Size, e.Limit)
}

// openSource opens a source for reading without blocking (a FIFO does not
// wait for a writer) and refuses anything but a regular file: /dev/zero, a
// FIFO or a directory named as a transcript is an error at once.
func openSource(path string) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	return f, fi.Size(), nil
}

// readSource reads a whole source file of at most limit bytes (one that
// grows while read is cut at limit+1 and refused the same way).
func readSource(path string, limit int64) ([]byte, error) {
	f, size, err := openSource(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > limit {
		return nil, &SourceTooLargeError{Path: path, Size: size, Limit: limit}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &SourceTooLargeError{Path: path, Size: int64(len(data)), Limit: limit}
	}
	return data, nil
}
