package tokens

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/session"
)

// benchText returns n bytes of real Go source (net/http), repeated as
// needed.
func benchText(b *testing.B, n int) string {
	b.Helper()
	src, err := os.ReadFile(runtime.GOROOT() + "/src/net/http/server.go")
	if err != nil {
		b.Skip(err)
	}
	s := strings.Repeat(string(src), n/len(src)+1)
	return s[:n]
}

func BenchmarkCount(b *testing.B) {
	c := Default()
	for _, size := range []struct {
		name string
		n    int
	}{{"1KB", 1 << 10}, {"100KB", 100 << 10}, {"1MB", 1 << 20}} {
		s := benchText(b, size.n)
		b.Run(size.name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			b.ReportAllocs()
			for b.Loop() {
				c.Count(s)
			}
		})
	}
}

func BenchmarkCountLibrary(b *testing.B) {
	lib := library(b)
	s := benchText(b, 100<<10)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		_, _ = lib.Count(s)
	}
}

func BenchmarkEntryTokens(b *testing.B) {
	src := benchText(b, 4<<10)
	e := session.Entry{Type: session.TypeToolResult, ToolResult: &session.ToolResult{ToolCallID: "call_1", ToolName: "read_file", OK: true, Content: src}}
	EntryTokens(&e)
	b.ReportAllocs()
	for b.Loop() {
		EntryTokens(&e)
	}
}

// BenchmarkMeterAdd measures one appended entry against histories of 1k and
// 100k entries: the cost must not depend on the history.
func BenchmarkMeterAdd(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("history=%d", n), func(b *testing.B) {
			entries := make([]int, n)
			for i := range entries {
				entries[i] = 50 + i%200
			}
			var m Meter
			m.Reset(2000, entries)
			m.Usage(m.Estimated(), 100)
			b.ReportAllocs()
			for b.Loop() {
				m.Add(120)
				if t, _ := m.Effective(); t < 0 {
					b.Fatal("negative")
				}
			}
		})
	}
}

// BenchmarkNew is the per-process cost of a cl100k_base Counter: building
// the rank table from the embedded ranks file.
func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := New(Cl100kBase); err != nil {
			b.Fatal(err)
		}
	}
}
