//go:build unix

package session

import (
	"os"
	"syscall"
)

// mapFile maps the first size bytes of f read-only, for a reader that
// would otherwise copy them out of the page cache (an index file: a fifth
// of a 200k-entry resume was that copy). unmap releases the mapping;
// nothing read from it may be kept past that. A file cut short under the
// mapping faults when read past its new end: readers of a mapping run with
// debug.SetPanicOnFault and recoverFault.
func mapFile(f *os.File, size int64) (data []byte, unmap func(), err error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, nil, syscall.EINVAL
	}
	data, err = syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return data, func() { _ = syscall.Munmap(data) }, nil
}
