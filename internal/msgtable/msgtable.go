// Package msgtable reads docs/messages.md, the table of the sentences SOBA
// shows a user, so each package's tests can check the rows they produce
// against the text the code writes: the table and the code cannot drift.
package msgtable

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Row is one row of the table: when the message is shown, the message as
// the table quotes it ("…" and <placeholders> stand for any text), and the
// tests (package.TestName) that produce it.
type Row struct {
	Line    int
	When    string
	Message string
	Tests   []string
}

var testName = regexp.MustCompile("`?([a-z]+)\\.(Test\\w+)`?")

// Read returns the rows of the table in the file at path.
func Read(path string) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows []Row
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n, inTable := 0, false
	for sc.Scan() {
		n++
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "| when | message | test |"):
			inTable = true
			continue
		case !inTable || strings.HasPrefix(l, "| --- "):
			continue
		case !strings.HasPrefix(l, "| "):
			inTable = false
			continue
		}
		cols := splitRow(l)
		if len(cols) != 3 {
			return nil, fmt.Errorf("%s:%d: a row has %d columns, want 3 (when, message, test)", path, n, len(cols))
		}
		msg, ok := quoted(cols[1])
		if !ok {
			return nil, fmt.Errorf("%s:%d: the message column does not start with a quoted message: %q", path, n, cols[1])
		}
		r := Row{Line: n, When: cols[0], Message: msg}
		for _, m := range testName.FindAllStringSubmatch(cols[2], -1) {
			r.Tests = append(r.Tests, m[1]+"."+m[2])
		}
		rows = append(rows, r)
	}
	return rows, sc.Err()
}

// splitRow splits a Markdown table row on the bars outside code spans.
func splitRow(l string) []string {
	l = strings.TrimSpace(l)
	l = strings.TrimPrefix(strings.TrimSuffix(l, "|"), "|")
	var cols []string
	var b strings.Builder
	code := false
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case c == '`':
			code = !code
		case c == '\\' && i+1 < len(l) && l[i+1] == '|':
			b.WriteByte('|')
			i++
			continue
		case c == '|' && !code:
			cols = append(cols, strings.TrimSpace(b.String()))
			b.Reset()
			continue
		}
		b.WriteByte(c)
	}
	return append(cols, strings.TrimSpace(b.String()))
}

// quoted is the message a column quotes: from its opening quote to the
// quote that ends the column or is followed by " (" or ", or " (the
// column's own remarks).
func quoted(col string) (string, bool) {
	if !strings.HasPrefix(col, `"`) {
		return "", false
	}
	for i := 1; i < len(col); i++ {
		if col[i] != '"' {
			continue
		}
		rest := col[i+1:]
		if rest == "" || strings.HasPrefix(rest, " (") || strings.HasPrefix(rest, ", or ") {
			return col[1:i], true
		}
	}
	return "", false
}

var wildcard = regexp.MustCompile(`…|<[a-z ]+>`)

// Matches reports whether s is the row's message: equal to it, where "…"
// and <placeholders> stand for any text.
func (r Row) Matches(s string) bool {
	parts := wildcard.Split(r.Message, -1)
	var re strings.Builder
	re.WriteString("^")
	for i, p := range parts {
		if i > 0 {
			re.WriteString("(?s:.*?)")
		}
		re.WriteString(regexp.QuoteMeta(strings.TrimSpace(p)))
	}
	re.WriteString("$")
	ok, _ := regexp.MatchString(re.String(), s)
	return ok
}

// Of returns the rows one of whose tests is in package pkg.
func Of(rows []Row, pkg string) []Row {
	var out []Row
	for _, r := range rows {
		for _, t := range r.Tests {
			if strings.HasPrefix(t, pkg+".") {
				out = append(out, r)
				break
			}
		}
	}
	return out
}
