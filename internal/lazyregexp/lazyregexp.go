// Package lazyregexp is a regular expression compiled on first use, as the
// Go command's internal package of the same name does.
//
// A package-level regexp.MustCompile runs at start in every process that
// links the package, whether or not it ever matches: about 1.2 ms of
// soba-lsp's start went to compiling patterns that an offline command never
// uses (bounded repetitions such as {1,128} compile to hundreds of
// instructions). Under `go test` every pattern is compiled at once, so a bad
// pattern still fails every test of its package, as MustCompile does.
package lazyregexp

import (
	"os"
	"regexp"
	"strings"
	"sync"
)

// Regexp is a regexp.Regexp compiled the first time it is used. It is safe
// for concurrent use.
type Regexp struct {
	str  string
	once sync.Once
	rx   *regexp.Regexp
}

// New returns the Regexp for str, which must compile (regexp.MustCompile).
func New(str string) *Regexp {
	r := &Regexp{str: str}
	if inTest {
		r.re()
	}
	return r
}

// inTest is set in test binaries, where patterns are compiled eagerly.
var inTest = len(os.Args) > 0 && strings.HasSuffix(strings.TrimSuffix(os.Args[0], ".exe"), ".test")

func (r *Regexp) re() *regexp.Regexp {
	r.once.Do(func() { r.rx = regexp.MustCompile(r.str) })
	return r.rx
}

// Regexp returns the compiled expression.
func (r *Regexp) Regexp() *regexp.Regexp { return r.re() }

// String returns the source text.
func (r *Regexp) String() string { return r.str }

func (r *Regexp) MatchString(s string) bool                  { return r.re().MatchString(s) }
func (r *Regexp) FindString(s string) string                 { return r.re().FindString(s) }
func (r *Regexp) FindStringIndex(s string) []int             { return r.re().FindStringIndex(s) }
func (r *Regexp) FindStringSubmatch(s string) []string       { return r.re().FindStringSubmatch(s) }
func (r *Regexp) FindStringSubmatchIndex(s string) []int     { return r.re().FindStringSubmatchIndex(s) }
func (r *Regexp) ReplaceAllString(src, repl string) string   { return r.re().ReplaceAllString(src, repl) }
func (r *Regexp) FindAllString(s string, n int) []string     { return r.re().FindAllString(s, n) }
func (r *Regexp) FindAllStringIndex(s string, n int) [][]int { return r.re().FindAllStringIndex(s, n) }
func (r *Regexp) FindAllStringSubmatch(s string, n int) [][]string {
	return r.re().FindAllStringSubmatch(s, n)
}
func (r *Regexp) FindAllStringSubmatchIndex(s string, n int) [][]int {
	return r.re().FindAllStringSubmatchIndex(s, n)
}
