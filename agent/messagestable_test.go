package agent

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/internal/msgtable"
)

// TestMessagesTableMatchesCode: every row of docs/messages.md names tests
// that exist, and each row of the agent's is a sentence the agent writes,
// word for word (the table's "…" and <placeholders> stand for any text).
// compaction and lsp check their rows the same way.
func TestMessagesTableMatchesCode(t *testing.T) {
	rows, err := msgtable.Read(filepath.Join("..", "docs", "messages.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatal("docs/messages.md has no rows")
	}
	for _, r := range rows {
		if len(r.Tests) == 0 {
			t.Errorf("docs/messages.md:%d: %q names no test", r.Line, r.Message)
		}
		for _, name := range r.Tests {
			pkg, fn, _ := strings.Cut(name, ".")
			if !testExists(t, pkg, fn) {
				t.Errorf("docs/messages.md:%d: no func %s in %s/*_test.go", r.Line, fn, pkg)
			}
		}
	}
	var written []string
	for _, c := range userMessageCases() {
		written = append(written, c.got)
	}
	for _, r := range msgtable.Of(rows, "agent") {
		found := false
		for _, w := range written {
			if r.Matches(w) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("docs/messages.md:%d: no sentence the agent writes reads %q", r.Line, r.Message)
		}
	}
}

func testExists(t *testing.T, pkg, fn string) bool {
	files, _ := filepath.Glob(filepath.Join("..", pkg, "*_test.go"))
	re := regexp.MustCompile(`(?m)^func ` + regexp.QuoteMeta(fn) + `\(`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if re.Match(b) {
			return true
		}
	}
	return false
}
