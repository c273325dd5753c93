package main

import (
	"os"
	"runtime/debug"
)

// offlineMemoryLimit is the soft memory limit of the offline commands that
// read a whole session (budget, compact, verify, import). Their live memory
// is the index and a bounded window; without a limit the collector lets the
// heap grow to twice the live size between cycles, which made the peak
// twice what the work needs. GOMEMLIMIT, when set, wins.
const offlineMemoryLimit = 140 << 20

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
