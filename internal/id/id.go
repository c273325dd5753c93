// Package id makes SOBA's random identifiers, one shape for each kind:
// sessions s_1a2b3c4d5e6f, turns turn_…, compaction operations op_…,
// checkpoints ck_8f2a1c, transcript entries 8 hex digits. The generator is
// math/rand/v2's global source (ChaCha8, seeded by the runtime), safe for
// concurrent use.
package id

import (
	"encoding/hex"
	"math/rand/v2"
)

// hexDigits returns n random hex digits (n even, at most 16).
func hexDigits(n int) string {
	var b [8]byte
	v := rand.Uint64()
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
	return hex.EncodeToString(b[:n/2])
}

// Session is a new session id: s_ and 12 hex digits.
func Session() string { return "s_" + hexDigits(12) }

// Turn is a new turn id: turn_ and 12 hex digits.
func Turn() string { return "turn_" + hexDigits(12) }

// Operation is a new compaction operation id: op_ and 12 hex digits.
func Operation() string { return "op_" + hexDigits(12) }

// Checkpoint is a new checkpoint id: ck_ and 6 hex digits, short enough
// to type in /capsule export.
func Checkpoint() string { return "ck_" + hexDigits(6) }

// Entry is a new transcript entry id, 8 hex digits, that taken does not
// report as already used in the session.
func Entry(taken func(string) bool) string {
	for {
		if e := hexDigits(8); !taken(e) {
			return e
		}
	}
}
