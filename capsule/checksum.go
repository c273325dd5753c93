package capsule

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// sectionHashLen is the number of hex digits of a section's hash in the
// front matter's "sections" line: enough to tell which sections a hand edit
// touched, short enough to keep the line readable.
const sectionHashLen = 8

// Checksum is "sha256:<hex>" of the canonical form of the portable state
// (docs/capsule-format.md "Checksum"). The state is normalised first, so two
// states that render to the same file have the same checksum.
func Checksum(st State) string {
	st = normState(st)
	sum, _ := canonicalHashes(&st, false)
	return sum
}

// sectionHashes returns the short hash of each section's canonical form, in
// section order. st must be normalised.
func sectionHashes(st *State) [numSections]string {
	_, hs := canonicalHashes(st, true)
	return hs
}

// canonicalHashes hashes the canonical form of st (which must be normal),
// and with sections also each section's block, in one pass.
func canonicalHashes(st *State, withSections bool) (string, [numSections]string) {
	var hs [numSections]string
	h := sha256.New()
	buf := make([]byte, 0, 4096)
	buf = append(buf, Format...)
	buf = append(buf, '\n')
	h.Write(buf)
	for i := range sections {
		buf = appendCanonicalSection(buf[:0], st, i)
		h.Write(buf)
		if withSections {
			sum := sha256.Sum256(buf)
			hs[i] = hex.EncodeToString(sum[:sectionHashLen/2])
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), hs
}

// appendCanonicalSection appends one section's canonical form: the line
// "<key> <item count>\n", then each part of each item as "<byte length>:<bytes>\n".
// Length prefixes make the encoding unambiguous whatever the text holds.
func appendCanonicalSection(buf []byte, st *State, i int) []byte {
	s := &sections[i]
	part := func(v string) {
		buf = strconv.AppendInt(buf, int64(len(v)), 10)
		buf = append(buf, ':')
		buf = append(buf, v...)
		buf = append(buf, '\n')
	}
	count := func(n int) {
		buf = append(buf, s.key...)
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, int64(n), 10)
		buf = append(buf, '\n')
	}
	switch s.kind {
	case kindGoal:
		if st.Goal == "" {
			count(0)
		} else {
			count(1)
			part(st.Goal)
		}
	case kindDecisions:
		count(len(st.Decisions))
		for _, d := range st.Decisions {
			part(d.Decision)
			part(d.Rationale)
		}
	case kindVerification:
		count(len(st.Verification))
		for _, v := range st.Verification {
			part(v.Command)
			part(v.Outcome)
			part(strconv.Itoa(v.ExitCode))
			if v.Detail != "" {
				// Only when set, so capsules written before Detail
				// existed keep their checksum.
				part(v.Detail)
			}
		}
	default:
		items := *s.list(st)
		count(len(items))
		for _, v := range items {
			part(v)
		}
	}
	return buf
}
