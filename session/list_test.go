package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestListTitle checks soba.session.list's title and bytes: the first user
// request that is not blank, one line, clipped on a rune boundary; lines
// that are not user entries, blank requests, torn lines and lines beyond
// the decode bound do not title a session.
func TestListTitle(t *testing.T) {
	const ts = `"timestamp":"2026-07-01T12:00:00Z"`
	header := `{"id":"r","parentId":null,"type":"session",` + ts + `,"session":{"version":1,"sessionId":"x"}}`
	userLine := func(id, text string) string {
		return `{"id":"` + id + `","parentId":"r","type":"user",` + ts + `,"user":{"text":` + quote(text) + `}}`
	}
	long := strings.Repeat("é", 100) // 200 bytes
	tests := []struct {
		name  string
		lines []string
		tail  string // written after the lines, without a newline
		want  string
	}{
		{"first request", []string{header, userLine("u1", "fix the login bug"), userLine("u2", "second")}, "", "fix the login bug"},
		{"no request yet", []string{header}, "", ""},
		{"blank request skipped", []string{header, userLine("u1", "  \n\t"), userLine("u2", "real one")}, "", "real one"},
		{"first non-blank line, whitespace collapsed", []string{header, userLine("u1", "\n  add   tests\tnow \nand more")}, "", "add tests now"},
		{"clipped on a rune", []string{header, userLine("u1", long)}, "", long[:76] + "…"},
		{"assistant text is not a title", []string{header, `{"id":"a","parentId":"r","type":"assistant",` + ts + `,"assistant":{"text":"hello"}}`}, "", ""},
		{"torn request is not a title", []string{header}, userLine("u1", "torn")[:40], ""},
		{"garbage line", []string{header, `{"type":"user" but not json}`, userLine("u2", "after garbage")}, "", "after garbage"},
		{"over the bound", []string{header, userLine("u1", strings.Repeat("x", maxTitleLine)), userLine("u2", "small")}, "", "small"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			content := strings.Join(tt.lines, "\n") + "\n" + tt.tail
			if err := os.WriteFile(filepath.Join(dir, "s_t.jsonl"), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := List(dir)
			if err != nil || len(got) != 1 {
				t.Fatalf("List = %v, %v", got, err)
			}
			if got[0].Title != tt.want {
				t.Errorf("title %q, want %q", got[0].Title, tt.want)
			}
			if got[0].Bytes != int64(len(content)) {
				t.Errorf("bytes %d, want %d", got[0].Bytes, len(content))
			}
			if len(got[0].Title) > MaxTitle {
				t.Errorf("title is %d bytes, over %d", len(got[0].Title), MaxTitle)
			}
		})
	}
}

func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
