package session

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// entryGen produces a realistic mix of entries: turns of a user message, an
// assistant reply with tool calls, the tool results (source files, test
// output) and a closing answer, averaging about 1.75 KB a line.
type entryGen struct {
	r *rand.Rand
	i int
}

func newEntryGen() *entryGen { return &entryGen{r: rand.New(rand.NewPCG(1, 2))} }

const genText = "func (c *Client) send(ctx context.Context, req *http.Request) (*http.Response, error) {\n" +
	"\tfor attempt := 0; attempt < c.maxAttempts; attempt++ {\n\t\tresp, err := c.hc.Do(req.WithContext(ctx))\n" +
	"\t\tif err == nil && resp.StatusCode < 500 {\n\t\t\treturn resp, nil\n\t\t}\n\t\ttime.Sleep(backoff(attempt))\n\t}\n}\n"

func (g *entryGen) text(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(genText)
	}
	return b.String()[:n]
}

func (g *entryGen) next() Entry {
	g.i++
	switch g.i % 5 {
	case 0:
		return Entry{Type: TypeUser, User: &UserMessage{Text: g.text(100 + g.r.IntN(400))}}
	case 1:
		return Entry{Type: TypeAssistant, Assistant: &Assistant{Text: g.text(100 + g.r.IntN(300)), Provider: "ollama", Model: "qwen3-coder:30b",
			StopReason: "tool_use", Usage: &Usage{InputTokens: 20000 + g.i, OutputTokens: 120},
			ToolCalls: []ToolCall{{ID: fmt.Sprint("call_", g.i), Name: "read_file", Arguments: json.RawMessage(`{"path":"client/retry.go"}`)}}}}
	case 2, 3:
		return Entry{Type: TypeToolResult, ToolResult: &ToolResult{ToolCallID: fmt.Sprint("call_", g.i), ToolName: "read_file", OK: true,
			Content: g.text(800 + g.r.IntN(4300)), Artifacts: &Artifacts{FilesRead: []string{"client/retry.go"}}}}
	default:
		return Entry{Type: TypeAssistant, Assistant: &Assistant{Text: g.text(200 + g.r.IntN(800)), Provider: "ollama", Model: "qwen3-coder:30b",
			StopReason: "end_turn", Usage: &Usage{InputTokens: 21000 + g.i, OutputTokens: 300}}}
	}
}

// buildSession writes a session of n entries (header included) into dir.
func buildSession(tb testing.TB, dir string, n int) string {
	tb.Helper()
	s, err := Create(dir, SessionHeader{SessionID: fmt.Sprintf("s_%d", n)}, Options{Sync: SyncNever, CacheEntries: -1,
		Estimate: func(e *Entry) int { return 400 }})
	if err != nil {
		tb.Fatal(err)
	}
	g := newEntryGen()
	for s.Len() < n {
		if _, err := s.Append(g.next()); err != nil {
			tb.Fatal(err)
		}
	}
	path := s.FilePath()
	s.Close()
	return path
}

func BenchmarkAppend(b *testing.B) {
	for _, c := range []struct {
		name string
		sync SyncPolicy
	}{{"fsync", SyncEveryAppend}, {"nosync", SyncNever}} {
		b.Run(c.name, func(b *testing.B) {
			s, err := Create(b.TempDir(), SessionHeader{SessionID: "bench"}, Options{Sync: c.sync})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			g := newEntryGen()
			es := make([]Entry, 1000)
			for i := range es {
				es[i] = g.next()
			}
			start := s.size
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Append(es[i%len(es)]); err != nil {
					b.Fatal(err)
				}
				_ = s.Path() // what the owner does after every append
			}
			b.StopTimer()
			b.ReportMetric(float64(s.size-start)/float64(b.N), "line-bytes")
		})
	}
}

// BenchmarkOpen resumes sessions of 1k, 10k and 100k entries (about 1.75 KB
// each, so 100k ≈ 175 MB) from a warm page cache: Open indexes the file and
// makes the leaf path ready. Besides ns/op and -benchmem's B/op (allocated
// per Open, from the runtime's TotalAlloc), it reports the live heap after
// Open (HeapInuse after a GC, store alive) and the peak resident set of a
// child process that does nothing but Open and Path (VmHWM, see maxRSS),
// with the same child's RSS before Open as the baseline.
func BenchmarkOpen(b *testing.B) {
	dir := b.TempDir()
	for _, n := range []int{1_000, 10_000, 100_000} {
		path := buildSession(b, dir, n)
		fi, _ := os.Stat(path)
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			var heap uint64
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				s, _, err := Open(path, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if p := s.Path(); len(p) != n {
					b.Fatalf("path has %d entries, want %d", len(p), n)
				}
				if i == b.N-1 {
					b.StopTimer()
					runtime.GC()
					var ms runtime.MemStats
					runtime.ReadMemStats(&ms)
					heap = ms.HeapInuse
					b.StartTimer()
				}
				s.Close()
			}
			b.StopTimer()
			// CPU time is steadier than wall time on a shared machine.
			b.ReportMetric(float64(cpuTime()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(fi.Size())/1e6, "file-MB")
			b.ReportMetric(float64(heap)/1e6, "heap-MB")
			base, peak, err := childOpenRSS(path)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(base, "base-RSS-MB")
			b.ReportMetric(peak, "peak-RSS-MB")
		})
	}
}

// BenchmarkLoad reads one entry of the live tail (cached) and one from deep
// history (a disk read through pread; the page cache is warm).
func BenchmarkLoad(b *testing.B) {
	path := buildSession(b, b.TempDir(), 10_000)
	for _, c := range []struct {
		name  string
		cache int
	}{{"cached", 0}, {"disk", -1}} {
		b.Run(c.name, func(b *testing.B) {
			s, _, err := Open(path, Options{CacheEntries: c.cache})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			id := s.Leaf()
			if _, err := s.Load(id); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Load(id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRewind rewinds a 10k-deep path to its middle and appends there
// (the path is cut and walked, not rebuilt), alternating between branches.
func BenchmarkRewind(b *testing.B) {
	path := buildSession(b, b.TempDir(), 10_000)
	s, _, err := Open(path, Options{Sync: SyncNever})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	p := s.Path()
	targets := []string{p[5_000].ID, p[9_000].ID}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Rewind(targets[i%2]); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuTime is the process's user+system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

const rssChildEnv = "SOBA_SESSION_RSS_CHILD"

// TestOpenRSSChild is the child process of BenchmarkOpen's memory figure; it
// does nothing unless started by it.
func TestOpenRSSChild(t *testing.T) {
	path := os.Getenv(rssChildEnv)
	if path == "" {
		t.Skip("run by BenchmarkOpen")
	}
	base := maxRSS()
	start := time.Now()
	s, _, err := Open(path, Options{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	_ = s.Path()
	took := time.Since(start)
	fmt.Printf("rss %d %d %d\n", base, maxRSS(), took.Nanoseconds())
	s.Close()
	os.Exit(0)
}

// maxRSS returns the peak resident set of this process's address space in
// bytes: VmHWM from /proc/self/status. getrusage's ru_maxrss would be wrong
// here: Linux carries the parent's high-water mark into a child across
// fork+exec, so a child started by a benchmark that just built a 175 MB
// session would report the parent's peak.
func maxRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb)
			return kb * 1024
		}
	}
	return -1
}

func childOpenRSS(path string) (base, peak float64, err error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenRSSChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), rssChildEnv+"="+path)
	out, err := cmd.Output()
	if err != nil {
		return 0, 0, fmt.Errorf("rss child: %w: %s", err, out)
	}
	var b, p, ns int64
	for _, l := range strings.Split(string(out), "\n") {
		if _, err := fmt.Sscanf(l, "rss %d %d %d", &b, &p, &ns); err == nil {
			return float64(b) / 1e6, float64(p) / 1e6, nil
		}
	}
	return 0, 0, fmt.Errorf("rss child printed %q", out)
}

// BenchmarkOpenUnestimated opens a 10k-entry session whose lines carry no
// token estimates (a hand-written or foreign file): Open decodes those lines
// and estimates them (with a constant estimator, so the figure is the
// store's own cost, not the tokenizer's).
func BenchmarkOpenUnestimated(b *testing.B) {
	dir := b.TempDir()
	src := buildSession(b, dir, 10_000)
	data, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	stripped := regexp.MustCompile(`,"tokens":[0-9]+`).ReplaceAll(data, nil)
	path := filepath.Join(dir, "unestimated.jsonl")
	if err := os.WriteFile(path, stripped, 0o600); err != nil {
		b.Fatal(err)
	}
	est := func(*Entry) int { return 400 }
	b.ReportAllocs()
	for b.Loop() {
		s, rep, err := Open(path, Options{Estimate: est})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Estimated == 0 {
			b.Fatal("nothing was estimated")
		}
		s.Close()
	}
	b.ReportMetric(float64(len(stripped))/1e6, "file-MB")
}

// benchSessionFile is a session to benchmark the whole-file readers on: the
// file named by SOBA_BENCH_SESSION (an imported pi session, say), or a
// written one of n entries.
func benchSessionFile(b *testing.B, n int) string {
	if p := os.Getenv("SOBA_BENCH_SESSION"); p != "" {
		return p
	}
	return buildSession(b, b.TempDir(), n)
}

// BenchmarkVerifyFile is `soba-lsp verify` without the process: the scan,
// then every payload validated.
func BenchmarkVerifyFile(b *testing.B) {
	path := benchSessionFile(b, 20_000)
	b.ReportAllocs()
	for b.Loop() {
		v, err := VerifyFile(path)
		if err != nil || v.ProblemCount != 0 {
			b.Fatal(err, v.Problems)
		}
	}
}

// BenchmarkOpenReadOnly is the index scan of resume and the offline
// commands (`budget`, `verify`, `compact`) on one file.
func BenchmarkOpenReadOnly(b *testing.B) {
	path := benchSessionFile(b, 20_000)
	b.ReportAllocs()
	for b.Loop() {
		s, rep, err := OpenReadOnly(path, Options{CacheEntries: -1})
		if err != nil || rep.ProblemCount != 0 {
			b.Fatal(err, rep.Problems)
		}
		s.Close()
	}
}
