package tokens

import (
	"unicode"
	"unicode/utf8"
)

// splitCl100k calls piece for each pre-token of text, in order, exactly as
// cl100k_base's split pattern
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// would cut it, the way the tokenizer library's generated matcher does
// (leftmost-first alternation; see the \s*[\r\n]+ case below for where it
// differs from OpenAI's tiktoken, and DEL, which the library skips and we
// count as the byte token it is). It is a hand-written scanner because the
// library's regular-expression engine allocates per match and runs at about
// 1 MB/s, which is too slow for a count made on every appended entry; the
// tests check it piece for piece against the library on large corpora and
// under fuzzing. \s is unicode.IsSpace, \p{L} unicode.IsLetter and \p{N}
// unicode.IsNumber, as in the library's engine. text must be valid UTF-8.
func splitCl100k(text string, piece func(string)) {
	for p := 0; p < len(text); {
		n := matchCl100k(text, p)
		piece(text[p : p+n])
		p += n
	}
}

// matchCl100k returns the length in bytes of the pre-token starting at p.
func matchCl100k(s string, p int) int {
	c, w := decode(s, p)

	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if c == '\'' {
		if n := contraction(s, p+1); n > 0 {
			return 1 + n
		}
	}

	// [^\r\n\p{L}\p{N}]?\p{L}+
	if unicode.IsLetter(c) {
		return w + letters(s, p+w)
	}
	if c != '\r' && c != '\n' && !unicode.IsNumber(c) && p+w < len(s) {
		if c2, _ := decode(s, p+w); unicode.IsLetter(c2) {
			return w + letters(s, p+w)
		}
	}

	// \p{N}{1,3}
	if unicode.IsNumber(c) {
		n := w
		for i := 1; i < 3 && p+n < len(s); i++ {
			c2, w2 := decode(s, p+n)
			if !unicode.IsNumber(c2) {
				break
			}
			n += w2
		}
		return n
	}

	// ` ?[^\s\p{L}\p{N}]+[\r\n]*`
	start := p
	if c == ' ' && p+1 < len(s) {
		if c2, _ := decode(s, p+1); isOther(c2) {
			start = p + 1
		}
	}
	if c2, _ := decode(s, start); isOther(c2) {
		e := start
		for e < len(s) {
			c3, w3 := decode(s, e)
			if !isOther(c3) {
				break
			}
			e += w3
		}
		for e < len(s) && (s[e] == '\r' || s[e] == '\n') {
			e++
		}
		return e - p
	}

	// Only whitespace is left: c is a space of some kind.
	// \s*[\r\n]+ ends after the first run of CRs and LFs in the whitespace
	// run. (A backtracking matcher would end after the last one; the
	// library's generated matcher backtracks to the first, and counts must
	// agree with it.)
	e, nl := p, -1
	prev := p
	for e < len(s) {
		c3, w3 := decode(s, e)
		if !unicode.IsSpace(c3) {
			break
		}
		if nl < 0 && (c3 == '\r' || c3 == '\n') {
			nl = e
		}
		prev = e
		e += w3
	}
	if nl >= 0 {
		for nl < len(s) && (s[nl] == '\r' || s[nl] == '\n') {
			nl++
		}
		return nl - p
	}
	// \s+(?!\S): the whole run at the end of the text, else the run minus its
	// last character (which then starts the next piece, e.g. " word").
	if e == len(s) || prev == p {
		// \s+ (a single space before a non-space falls through to here too)
		return e - p
	}
	return prev - p
}

// contraction returns the length of s', re, ve, m, ll, d, t (any case, and
// the long s ſ that case-insensitive matching folds to s) at i, or 0.
func contraction(s string, i int) int {
	if i >= len(s) {
		return 0
	}
	switch s[i] | 0x20 {
	case 's', 't', 'm', 'd':
		return 1
	case 'r', 'v':
		if i+1 < len(s) && s[i+1]|0x20 == 'e' {
			return 2
		}
	case 'l':
		if i+1 < len(s) && s[i+1]|0x20 == 'l' {
			return 2
		}
	}
	if c, w := decode(s, i); c == 'ſ' {
		return w
	}
	return 0
}

// letters returns the length of the run of letters at i.
func letters(s string, i int) int {
	e := i
	for e < len(s) {
		c, w := decode(s, e)
		if !unicode.IsLetter(c) {
			break
		}
		e += w
	}
	return e - i
}

// isOther is [^\s\p{L}\p{N}].
func isOther(c rune) bool {
	return !unicode.IsSpace(c) && !unicode.IsLetter(c) && !unicode.IsNumber(c)
}

// decode is utf8.DecodeRuneInString at i with an ASCII shortcut.
func decode(s string, i int) (rune, int) {
	if b := s[i]; b < utf8.RuneSelf {
		return rune(b), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}
