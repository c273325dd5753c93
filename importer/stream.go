package importer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/internal/jsondec"
	"github.com/soba-agent/soba-lsp/session"
)

// Streaming import: a pi session is read, converted and written a window
// of lines at a time, so an import's memory is the id maps and one window,
// not the source file and every converted entry (a 200k-entry pi session is
// ~350 MB). The other formats are converted in memory (ConvertFile, Write):
// their converters merge into earlier entries, which a window cannot do.

// streamWindow is the number of converted entries kept before they are
// estimated (on all cores) and written (a variable for tests).
var streamWindow = 4096

const (
	// decodeChunkLines and decodeChunkBytes bound the source lines decoded
	// at a time.
	decodeChunkLines = 2048
	decodeChunkBytes = 8 << 20
	// MaxLineBytes bounds one source line of a streamed import; a longer
	// line is reported and skipped without being held in memory.
	MaxLineBytes = 64 << 20
)

// ImportFile converts the transcript at src and writes it as a new session
// file at dest (as Write does). A pi session is streamed; the others go
// through ConvertFile and Write. The returned Result has no Entries when
// streamed. header.ImportedFrom, when set (the source's path), is prefixed
// with the format found ("pi:/path").
func ImportFile(src, dest string, header session.SessionHeader, opt Options, sopts session.Options) (*Result, error) {
	f, _, err := openSource(src)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	format := opt.Format
	if format == "" {
		// The head decides; a format the head does not show is left to
		// ConvertFile, which reads the whole file.
		head := make([]byte, 1<<20)
		n, err := io.ReadFull(f, head)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return nil, err
		}
		format, _ = Detect(head[:n])
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
	}
	from := header.ImportedFrom
	if format != FormatPi {
		f.Close()
		res, err := ConvertFile(src, opt)
		if err != nil {
			return nil, err
		}
		if from != "" {
			header.ImportedFrom = string(res.Format) + ":" + from
		}
		return res, Write(res, dest, header, sopts)
	}
	if from != "" {
		header.ImportedFrom = string(FormatPi) + ":" + from
	}
	opt.Format = FormatPi
	b := newBuilder(FormatPi, opt)
	w, err := newStreamWriter(dest, header, sopts)
	if err != nil {
		return nil, err
	}
	b.sink = w
	if err := convertPiLines(b, streamLines[piLine](f, b)); err != nil {
		w.abort()
		return nil, err
	}
	if err := b.flush(); err != nil {
		w.abort()
		return nil, err
	}
	if err := w.finish(b.res.Leaf); err != nil {
		return nil, err
	}
	return b.res, nil
}

// streamLines reads r line by line and yields every non-blank line decoded
// into T, in file order; lines are decoded a chunk at a time on all cores.
// A line over MaxLineBytes is reported through b and skipped.
func streamLines[T any](r io.Reader, b *builder) iter.Seq[decodedLine[T]] {
	return func(yield func(decodedLine[T]) bool) {
		br := bufio.NewReaderSize(r, 256<<10)
		no := 0
		var raw [][]byte
		var out []decodedLine[T]
		size := 0
		flush := func() bool {
			decodeParallel(raw, out)
			for _, d := range out {
				if !yield(d) {
					return false
				}
			}
			raw, out, size = raw[:0], out[:0], 0
			return true
		}
		for {
			line, err := readLine(br)
			if line == nil && errors.Is(err, io.EOF) {
				if len(raw) > 0 {
					flush()
				}
				return
			}
			no++
			if errors.Is(err, errLineTooLong) {
				b.problem(no, "line longer than %d bytes: skipped", MaxLineBytes)
				continue
			}
			if err != nil && !errors.Is(err, io.EOF) {
				b.streamErr = err
				return
			}
			line = bytes.TrimSuffix(line, []byte("\r"))
			if len(bytes.TrimSpace(line)) > 0 {
				raw = append(raw, line)
				out = append(out, decodedLine[T]{no: no})
				size += len(line)
			}
			if len(raw) >= decodeChunkLines || size >= decodeChunkBytes {
				if !flush() {
					return
				}
			}
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine returns the next line without its newline (a copy), nil and
// io.EOF at the end. A line longer than MaxLineBytes is consumed and
// errLineTooLong returned.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(line)+len(frag) > MaxLineBytes {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, errLineTooLong
		}
		line = append(line, frag...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(line) == 0 {
				return nil, io.EOF
			}
			return line, io.EOF
		default:
			return nil, err
		}
	}
}

// decodeParallel decodes raw[i] into out[i].v on all cores.
func decodeParallel[T any](raw [][]byte, out []decodedLine[T]) {
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(raw); i += workers {
				out[i].err = jsondec.Unmarshal(raw[i], &out[i].v)
			}
		})
	}
	wg.Wait()
}

// streamWriter is the session store an import streams into.
type streamWriter struct {
	s    *session.Store
	root string // the session header entry's id
}

func newStreamWriter(path string, header session.SessionHeader, opts session.Options) (*streamWriter, error) {
	name := filepath.Base(path)
	if !strings.HasSuffix(name, ".jsonl") || name == ".jsonl" {
		return nil, fmt.Errorf("output %s: a session file name must end in .jsonl", path)
	}
	header.SessionID = strings.TrimSuffix(name, ".jsonl")
	opts.Sync = session.SyncNever
	// The store's line cache would only hold lines nobody reads back.
	opts.CacheEntries = -1
	s, err := session.Create(filepath.Dir(path), header, opts)
	if err != nil {
		return nil, err
	}
	return &streamWriter{s: s, root: s.Leaf()}, nil
}

// abort closes and removes the file: never half an import behind.
func (w *streamWriter) abort() {
	w.s.Close()
	os.Remove(w.s.FilePath())
}

// finish sets the leaf (a rewind when the session continues from an entry
// that is not the file's last, R-T4), closes and syncs the file.
func (w *streamWriter) finish(leaf string) error {
	if leaf != "" && w.s.Leaf() != leaf {
		if _, err := w.s.Rewind(leaf); err != nil {
			w.abort()
			return fmt.Errorf("set the leaf: %w", err)
		}
	}
	if err := w.s.Close(); err != nil {
		os.Remove(w.s.FilePath())
		return err
	}
	if err := syncFile(w.s.FilePath()); err != nil {
		os.Remove(w.s.FilePath())
		return err
	}
	return nil
}

// flush estimates the window's entries and writes them to the sink, then
// drops them from memory; b.index keeps their ids.
func (b *builder) flush() error {
	if b.sink == nil {
		return nil
	}
	b.finishTokens()
	for i := range b.res.Entries {
		e := b.res.Entries[i]
		if e.ParentID == nil {
			p := b.sink.root
			e.ParentID = &p
		}
		if _, err := b.sink.s.Append(e); err != nil {
			return fmt.Errorf("write entry %d: %w", b.flushed+i+1, err)
		}
	}
	b.flushed += len(b.res.Entries)
	clear(b.res.Entries)
	b.res.Entries = b.res.Entries[:0]
	b.estimated = 0
	return nil
}

// written returns the entry with new id (at global position i) from the
// window or, once flushed, from the sink.
func (b *builder) written(id string, i int) (session.Entry, error) {
	if i >= b.flushed {
		return b.res.Entries[i-b.flushed], nil
	}
	return b.sink.s.Load(id)
}

// pathToStream is pathTo over the window and the entries already written.
func (b *builder) pathToStream(id string) (compaction.Entries, error) {
	var rev []session.Entry
	for id != "" && id != b.sink.root {
		i, ok := b.index[id]
		if !ok {
			break
		}
		e, err := b.written(id, i)
		if err != nil {
			return nil, err
		}
		rev = append(rev, e)
		id = e.Parent()
	}
	out := make(compaction.Entries, len(rev))
	for j, e := range rev {
		out[len(rev)-1-j] = e
	}
	return out, nil
}
