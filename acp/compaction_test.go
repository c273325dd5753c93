package acp

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// The interceptor passes every line it does not consume through unchanged,
// however the bytes arrive (one at a time, a line longer than its buffer),
// and hands each whole line to handle exactly once.
func TestInterceptorPassesLinesThrough(t *testing.T) {
	huge := `{"jsonrpc":"2.0","method":"_x","params":{"pad":"` + strings.Repeat("x", maxInterceptLine+10) + `"}}` + "\n"
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n"
	del := `{"jsonrpc":"2.0","id":2,"method":"session/delete","params":{"sessionId":"s_1"}}` + "\n"
	tests := []struct {
		name, in, want string
		handled        []string
	}{
		{"nothing consumed", "not json\n" + init, "not json\n" + init, []string{"not json\n", init}},
		{"a consumed line is dropped", init + del + init, init + init, []string{init, del, init}},
		{"a huge line passes uninspected", huge + del + "tail without newline", huge + "tail without newline", []string{del, "tail without newline"}},
		{"blank lines pass", "\n\n" + del, "\n\n", []string{del}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen []string
			r := newInterceptor(iotest.OneByteReader(strings.NewReader(tt.in)), func(line []byte) bool {
				seen = append(seen, string(line))
				return strings.Contains(string(line), "session/delete")
			})
			out, err := io.ReadAll(r)
			if err != nil || string(out) != tt.want {
				t.Fatalf("passed through %d bytes (err %v), want %d", len(out), err, len(tt.want))
			}
			if strings.Join(seen, "|") != strings.Join(tt.handled, "|") {
				t.Fatalf("handled %q, want %q", seen, tt.handled)
			}
		})
	}
}

// AvailableCommands lists each slash command word once, from lsp/slash.
func TestAvailableCommandsOncePerWord(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range AvailableCommands() {
		if seen[c.Name] || strings.HasPrefix(c.Name, "/") || c.Description == "" {
			t.Fatalf("command %+v listed twice, with its slash, or without a description", c)
		}
		seen[c.Name] = true
	}
	for _, want := range []string{"help", "budget", "compact", "auto-compact", "capsule", "milestone", "pivot"} {
		if !seen[want] {
			t.Errorf("%s is not listed", want)
		}
	}
}
