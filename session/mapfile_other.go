//go:build !unix

package session

import (
	"io"
	"os"
)

// mapFile reads the first size bytes of f where files are not mapped.
func mapFile(f *os.File, size int64) (data []byte, unmap func(), err error) {
	data = make([]byte, size)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, size), data); err != nil {
		return nil, nil, err
	}
	return data, func() {}, nil
}
