//go:build linux || darwin

package session

import (
	"os"
	"syscall"
)

// stampOf is fi's stamp; ok is false when fi does not come from stat(2).
func stampOf(fi os.FileInfo) (fileStamp, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStamp{}, false
	}
	mtime, ctime := statTimes(st)
	return fileStamp{dev: uint64(st.Dev), ino: st.Ino, size: uint64(fi.Size()), mtimeNs: mtime, ctimeNs: ctime}, true
}
