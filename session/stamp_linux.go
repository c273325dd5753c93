package session

import "syscall"

// statTimes are the modification and change times of st in nanoseconds.
func statTimes(st *syscall.Stat_t) (mtime, ctime int64) { return st.Mtim.Nano(), st.Ctim.Nano() }
