// Package text holds the few text helpers every layer shares: numbers with
// thousands separators as result lines write them, and clipping that never
// cuts inside a UTF-8 character.
package text

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Thousands writes n with comma separators: 45210 → "45,210".
func Thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Clip shortens s to at most n bytes, the last three of them an ellipsis
// "…", cutting on a rune boundary so no character is split. A string that
// fits is returned as is.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(0, n-len("…"))
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Count writes n with the noun's singular or plural: "1 entry",
// "3 entries", "0 problems", "1,204 files" (thousands separated, as every
// figure the user reads).
func Count(n int, singular, plural string) string {
	if n == 1 {
		return "1 " + singular
	}
	return Thousands(n) + " " + plural
}
