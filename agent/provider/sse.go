package provider

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// maxLine bounds one SSE or NDJSON line; a longer one is a broken stream,
// not a reason to grow memory without end.
const maxLine = 32 << 20

// sseReader reads Server-Sent Events (the parts the model servers use:
// event, data, comments; id and retry are ignored).
type sseReader struct {
	r    *bufio.Reader
	line []byte
	data []byte
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next event's type and data (data lines joined by "\n").
// The returned slice is valid until the next call. At the end of the input
// it returns io.EOF. An event whose lines were complete but that EOF closed
// instead of a blank line is still returned; a line cut by EOF is
// io.ErrUnexpectedEOF.
func (s *sseReader) Next() (event string, data []byte, err error) {
	s.data = s.data[:0]
	hasData := false
	for {
		line, err := readLine(s.r, &s.line)
		if err != nil {
			if errors.Is(err, io.EOF) && len(line) == 0 {
				if hasData {
					return event, s.data, nil
				}
				return "", nil, io.EOF
			}
			if errors.Is(err, io.EOF) {
				return "", nil, io.ErrUnexpectedEOF
			}
			return "", nil, err
		}
		if len(line) == 0 {
			if hasData || event != "" {
				return event, s.data, nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(name) {
		case "event":
			event = string(value)
		case "error":
			// llama.cpp server builds until late 2025 (PR 16109) sent a
			// failure after the 200 as a non-standard "error:" field; it is
			// read as an event named error whose data is the error object.
			event = "error"
			fallthrough
		case "data":
			if hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			hasData = true
		}
	}
}

// readLine reads one line without its "\n" or "\r\n" into *buf. A last
// line without a newline is returned with io.EOF.
func readLine(r *bufio.Reader, buf *[]byte) ([]byte, error) {
	*buf = (*buf)[:0]
	for {
		chunk, err := r.ReadSlice('\n')
		*buf = append(*buf, chunk...)
		if len(*buf) > maxLine {
			return nil, fmt.Errorf("stream line longer than %d bytes", maxLine)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		line := *buf
		if n := len(line); n > 0 && line[n-1] == '\n' {
			line = line[:n-1]
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			return line, nil
		}
		if err == nil {
			err = io.EOF
		}
		return line, err
	}
}
