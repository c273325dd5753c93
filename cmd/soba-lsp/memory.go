package main

import (
	"os"
	"runtime/debug"
)

// offlineMemoryLimit is the soft memory limit of the offline commands that
// read a whole session (budget, compact, verify, import). Their live memory
// is the index and a bounded window; without a limit the collector lets the
// heap grow to twice the live size between cycles, which made the peak
// twice what the work needs. The limit counts what Go allocates, not the
// binary's pages a process touches (~12 MiB more in its peak RSS), so
// 128 MiB keeps a 200k-entry import under 150 MiB of RSS (it peaked at
// 151–154 MiB under 140 MiB). GOMEMLIMIT, when set, wins.
const offlineMemoryLimit = 128 << 20

// boundMemory sets the offline commands' soft memory limit and returns the
// function that restores the previous one (the commands also run inside
// tests).
func boundMemory() (restore func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	prev := debug.SetMemoryLimit(offlineMemoryLimit)
	return func() { debug.SetMemoryLimit(prev) }
}
