package acp

import (
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
)

// The compaction opt-in is read from the client's initialize however the
// bytes arrive, and only from initialize; the bytes pass through unchanged.
func TestInitSnifferReadsCompactionOptIn(t *testing.T) {
	huge := `{"jsonrpc":"2.0","method":"_x","params":{"pad":"` + strings.Repeat("x", maxSniffLine+10) + `"}}` + "\n"
	tests := []struct {
		name, in string
		want     bool
	}{
		{"opted in", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"session":{"compaction":{}}}}}` + "\n", true},
		{"null", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientCapabilities":{"session":{"compaction":null}}}}` + "\n", false},
		{"absent", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientCapabilities":{}}}` + "\n", false},
		{"another method first", `{"method":"session/new","params":{"clientCapabilities":{"session":{"compaction":{}}}}}` + "\n" +
			`{"id":1,"method":"initialize","params":{"clientCapabilities":{"session":{"compaction":{}}}}}` + "\n", true},
		{"garbage, then a huge line, then initialize", "not json\n" + huge +
			`{"id":1,"method":"initialize","params":{"clientCapabilities":{"session":{"compaction":{}}}}}` + "\n", true},
		{"only the first initialize counts", `{"id":1,"method":"initialize","params":{}}` + "\n" +
			`{"id":2,"method":"initialize","params":{"clientCapabilities":{"session":{"compaction":{}}}}}` + "\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var flag atomic.Bool
			s := &initSniffer{r: iotest.OneByteReader(strings.NewReader(tt.in)), compaction: &flag}
			out, err := io.ReadAll(s)
			if err != nil || string(out) != tt.in {
				t.Fatalf("bytes changed on the way through (err %v)", err)
			}
			if flag.Load() != tt.want {
				t.Fatalf("opted in = %v, want %v", flag.Load(), tt.want)
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
