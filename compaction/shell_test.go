package compaction

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// FuzzShellCommands_RC5: reading any command line never panics, and a check
// named only inside a quoted word — an echo, a commit message, a note — is
// never found as a command (R-C5: words inside quotes are never commands).
func FuzzShellCommands_RC5(f *testing.F) {
	for _, s := range []string{
		"go test ./...", "npm run check 2>&1 | tail -5", "cd pkg && make test || true", "bash -lc 'cd web && npm test'",
		"git commit -m \"fix: make npm test pass\"", "cat > f <<EOF\nnpm test\nEOF", "for f in *; do go vet $f; done",
		"pnpm --filter api test", "x=$(npm test)", "echo `go test`", "((", "'unterminated", "a |& b && c; d &",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		_ = parseShell(line)
		_, _ = CheckOf(line)
		_ = FilesOfCommand(line)
		q, err := syntax.Quote(line, syntax.LangBash)
		if err != nil {
			return // not quotable (a NUL byte)
		}
		for _, wrapped := range []string{"echo " + q, "git commit -m " + q, "bd update x --append-notes " + q} {
			l := parseShell(wrapped)
			if !l.ok {
				t.Fatalf("%q does not parse", wrapped)
			}
			if len(l.ofKind(kindCheck)) != 0 {
				t.Fatalf("a check found inside a quoted word: %q → %+v", wrapped, l.cmds)
			}
			if fs := FilesOfCommand(wrapped); len(fs.Written)+len(fs.Deleted)+len(fs.Renamed)+len(fs.Read) != 0 {
				t.Fatalf("files found inside a quoted word: %q → %+v", wrapped, fs)
			}
		}
	})
}

// BenchmarkShellCommandsOfRealSession parses, cold, every shell command of
// the 2.4 MB real pi session (454 tool calls): what reading the commands
// adds to `compact --dry-run` of that session.
func BenchmarkShellCommandsOfRealSession(b *testing.B) {
	p := filepath.Join("..", "..", "shared", "transcripts", "pi-mono__before-compaction.jsonl")
	data, err := os.ReadFile(p)
	if err != nil {
		b.Skipf("real transcript %s is not available: %v", p, err)
	}
	var cmds []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var e struct {
			Message struct {
				Content []struct {
					Type      string `json:"type"`
					Name      string `json:"name"`
					Arguments struct {
						Command string `json:"command"`
					} `json:"arguments"`
				} `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		for _, c := range e.Message.Content {
			if c.Type == "toolCall" && c.Name == "bash" {
				cmds = append(cmds, c.Arguments.Command)
			}
		}
	}
	if len(cmds) < 100 {
		b.Fatalf("%d commands: the benchmark would measure nothing", len(cmds))
	}
	b.ReportMetric(float64(len(cmds)), "commands")
	b.ResetTimer()
	for range b.N {
		for _, c := range cmds {
			_ = parseShell(c)
		}
	}
}
