package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"
	"unicode/utf8"
)

// quickDecodeAgrees fails t when quickDecode accepts line and builds
// another entry than the JSON decoder does.
func quickDecodeAgrees(t *testing.T, line []byte) (accepted bool) {
	t.Helper()
	q, ok := quickDecode(line, false)
	if !ok {
		return false
	}
	e, err := decodeLineFull(line)
	if err != nil {
		t.Fatalf("quickDecode accepts %q, the decoder fails: %v", line, err)
	}
	if !reflect.DeepEqual(q, e) {
		t.Fatalf("%q:\nquickDecode builds %s\nthe decoder     %s", line, dump(q), dump(e))
	}
	return true
}

// leanAgrees fails t unless DecodeLineLean decodes line as DecodeLine
// does, but for the content Lean leaves out, and fails and succeeds alike.
func leanAgrees(t *testing.T, line []byte) {
	t.Helper()
	full, ferr := DecodeLine(line)
	lean, lerr := DecodeLineLean(line)
	if (ferr == nil) != (lerr == nil) {
		t.Fatalf("%q: DecodeLine: %v; DecodeLineLean: %v", line, ferr, lerr)
	}
	if ferr != nil {
		return
	}
	if r := lean.ToolResult; r != nil && r.ContentOmitted {
		if !leanOmits(full.ToolResult) || full.ToolResult.Content == "" || r.Content != "" {
			t.Fatalf("%q: content %q omitted from %+v", line, full.ToolResult.Content, r)
		}
		r.Content, r.ContentOmitted = full.ToolResult.Content, false
	} else if full.ToolResult != nil && leanOmits(full.ToolResult) && full.ToolResult.Content != "" && r != nil {
		// Only a line the quick parser leaves to the decoder keeps it.
		if _, quick := quickDecode(bytes.TrimSuffix(line, []byte("\r")), true); quick {
			t.Fatalf("%q: the lean decoding kept content it leaves out", line)
		}
	}
	if !reflect.DeepEqual(full, lean) {
		t.Fatalf("%q:\nDecodeLineLean builds %s\nDecodeLine     %s", line, dump(lean), dump(full))
	}
}

func dump(e Entry) string {
	b, _ := json.Marshal(e)
	return fmt.Sprintf("%s %#v %#v %#v", b, e.Assistant, e.ToolResult, e.Session)
}

// quickAgrees fails t when quickCheck accepts line but DecodeLine does not,
// or reads another type, payload or tool call ids: verify must classify a
// line as Load does (R-T3).
func quickAgrees(t *testing.T, line []byte) (accepted bool) {
	t.Helper()
	q, ok := quickCheck(line)
	if !ok {
		return false
	}
	e, err := DecodeLine(line)
	if err != nil {
		t.Fatalf("quickCheck accepts %q, DecodeLine fails: %v", line, err)
	}
	if q.Type != e.Type || payloadProblem(&q) != payloadProblem(&e) {
		t.Fatalf("%q: quickCheck reads type %q (%q), DecodeLine %q (%q)", line, q.Type, payloadProblem(&q), e.Type, payloadProblem(&e))
	}
	ids := func(e *Entry) (out []string) {
		if e.Assistant != nil {
			for _, c := range e.Assistant.ToolCalls {
				out = append(out, c.ID)
			}
		}
		if e.ToolResult != nil {
			out = append(out, "result:"+e.ToolResult.ToolCallID)
		}
		return out
	}
	if !slices.Equal(ids(&q), ids(&e)) {
		t.Fatalf("%q: quickCheck reads tool call ids %q, DecodeLine %q", line, ids(&q), ids(&e))
	}
	return true
}

// TestQuickCheckAgreesWithDecodeLine_RT3: verify's validating decode
// accepts the lines our writer writes and leaves every doubtful line to the
// full decoder; whatever it accepts, DecodeLine decodes alike.
func TestQuickCheckAgreesWithDecodeLine_RT3(t *testing.T) {
	const h = `{"id":"a1","parentId":"u1","type":`
	const ts = `,"timestamp":"2026-07-01T12:00:00Z","tokens":12,`
	cases := []struct {
		name   string
		line   string
		accept bool // quickCheck decides it (else: the full decoder does)
	}{
		{"session header", `{"id":"h","parentId":null,"type":"session","timestamp":"2026-07-01T12:00:00.123456789Z","session":{"version":1,"sessionId":"s","workspace":"/w","importedFrom":"pi:/x"}}`, true},
		{"user", h + `"user"` + ts + `"user":{"text":"hi \"there\"\n\u00e9\\"}}`, true},
		{"assistant with calls and usage", h + `"assistant"` + ts + `"assistant":{"text":"t","toolCalls":[{"id":"c1","name":"bash","arguments":{"cmd":"ls","n":[1,-2.5e3,true,null,{"a":{}}],"e":[]}},{"id":"c2","name":"read","arguments":"x"}],"provider":"p","model":"m","stopReason":"toolUse","usage":{"inputTokens":1400,"outputTokens":200,"cachedTokens":0}}}`, true},
		{"tool result with artifacts", h + `"tool_result"` + ts + `"toolResult":{"toolCallId":"c1","toolName":"bash","ok":false,"content":"out\tput","artifacts":{"filesRead":["a"],"filesModified":[],"command":"go test","exitCode":1,"pipefail":true,"skill":"s"}}}`, true},
		{"invalid UTF-8 is decoded as U+FFFD", h + `"user"` + ts + "\"user\":{\"text\":\"\xff\xfe\"}}", true},
		{"empty lists", h + `"assistant"` + ts + `"assistant":{"toolCalls":[],"usage":{"inputTokens":0,"outputTokens":0}}}`, true},
		{"UTF-8 and escapes in lists", h + `"tool_result"` + ts + `"toolResult":{"toolCallId":"c","toolName":"read","ok":true,"content":"héllo \u2028 \/ \b\f\r","artifacts":{"filesRead":["a\u00e9","ü"]}}}`, true},
		{"empty payload object", h + `"user"` + ts + `"user":{}}`, true},
		{"payload of another type", h + `"user"` + ts + `"assistant":{}}`, true},
		{"no payload", h + `"user"` + ts[:len(ts)-1] + `}`, true},
		{"number where a string belongs", h + `"user"` + ts + `"user":{"text":123}}`, false},
		{"control byte in a string", h + `"user"` + ts + "\"user\":{\"text\":\"a\tb\"}}", false},
		{"bad escape", h + `"user"` + ts + `"user":{"text":"\x"}}`, false},
		{"lone surrogate", h + `"user"` + ts + `"user":{"text":"\ud800"}}`, false},
		{"escaped quote at the end", h + `"user"` + ts + `"user":{"text":"\""}}`, true},
		{"unterminated string", h + `"user"` + ts + `"user":{"text":"abc}}`, false},
		{"null payload", h + `"user"` + ts + `"user":null}`, false},
		{"duplicate name", h + `"user"` + ts + `"user":{"text":"a","text":"b"}}`, false},
		{"name in another case", h + `"user"` + ts + `"user":{"Text":"a"}}`, false},
		{"unknown member", h + `"user"` + ts + `"user":{"text":"a","mood":"b"}}`, false},
		{"two payloads", h + `"assistant"` + ts + `"user":{"text":"a"},"assistant":{}}`, false},
		{"capsule goes to the full decoder", h + `"capsule"` + ts + `"capsule":{"checkpointId":"k"}}`, false},
		{"native state goes to the full decoder", h + `"assistant"` + ts + `"assistant":{"native":{}}}`, false},
		{"escaped call id", h + `"assistant"` + ts + `"assistant":{"toolCalls":[{"id":"c\u0031"}]}}`, false},
		{"negative count", h + `"assistant"` + ts + `"assistant":{"usage":{"inputTokens":-1}}}`, false},
		{"fractional count", h + `"assistant"` + ts + `"assistant":{"usage":{"inputTokens":1.0}}}`, false},
		{"huge count", h + `"assistant"` + ts + `"assistant":{"usage":{"inputTokens":1234567890123456789}}}`, false},
		{"bad number in arguments", h + `"assistant"` + ts + `"assistant":{"toolCalls":[{"id":"c","arguments":{"n":01}}]}}`, false},
		{"bad timestamp", `{"id":"a","parentId":null,"type":"user","timestamp":"yesterday","user":{"text":"a"}}`, false},
		{"trailing bytes", h + `"user"` + ts + `"user":{"text":"a"}} x`, false},
		{"whitespace", h + `"user"` + ts + `"user": {"text":"a"}}`, false},
		{"truncated", h + `"user"` + ts + `"user":{"text":"a"}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := quickAgrees(t, []byte(c.line)); got != c.accept {
				t.Fatalf("quickCheck accepted = %v, want %v: %s", got, c.accept, c.line)
			}
			// quickDecode leaves invalid UTF-8 to the decoder's U+FFFD rules.
			if got := quickDecodeAgrees(t, []byte(c.line)); got != (c.accept && utf8.ValidString(c.line)) {
				t.Fatalf("quickDecode accepted = %v, want %v: %s", got, c.accept, c.line)
			}
		})
	}
}

// TestQuickCheckReadsOurFiles_RT3: every line of the fixture sessions that
// quickCheck accepts decodes alike, and it accepts the bulk of them (it
// would be no use otherwise).
func TestQuickCheckReadsOurFiles_RT3(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("..", "testdata", "sessions", "*.jsonl"))
	accepted, known := 0, 0
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range bytes.Split(b, []byte("\n")) {
			e, err := DecodeLine(l)
			if err == nil && (e.User != nil || e.ToolResult != nil || (e.Assistant != nil && e.Assistant.Native == nil)) {
				known++
			}
			if quickAgrees(t, l) {
				accepted++
			}
			if quickDecodeAgrees(t, l) && !quickAgrees(t, l) {
				t.Fatalf("quickDecode accepts %q, quickCheck does not", l)
			}
		}
	}
	if known == 0 || accepted < known*9/10 {
		t.Fatalf("quickCheck accepted %d of %d user, answer and tool result lines in the fixtures", accepted, known)
	}
}

// FuzzQuickCheck: whatever quickCheck accepts, DecodeLine decodes alike.
func FuzzQuickCheck(f *testing.F) {
	for _, file := range fixtureSeeds(f) {
		for _, l := range bytes.Split(file, []byte("\n")) {
			f.Add(l)
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		quickAgrees(t, line)
		quickDecodeAgrees(t, line)
		leanAgrees(t, line)
	})
}

func BenchmarkQuickCheck(b *testing.B) {
	g := newEntryGen()
	var lines [][]byte
	for range 1000 {
		e := g.next()
		e.ID, e.Timestamp, e.Tokens = "a1b2c3d4", time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC), 400
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf) // as Append writes a line
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&e); err != nil {
			b.Fatal(err)
		}
		lines = append(lines, bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	}
	for _, c := range []struct {
		name string
		f    func([]byte) bool
	}{
		{"quickCheck", func(l []byte) bool { _, ok := quickCheck(l); return ok }},
		{"quickDecode", func(l []byte) bool { _, ok := quickDecode(l, false); return ok }},
		{"decoder", func(l []byte) bool { _, err := decodeLineFull(l); return err == nil }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, l := range lines {
					if !c.f(l) {
						b.Fatalf("%s refuses %s", c.name, l)
					}
				}
			}
		})
	}
}

// TestPrintableASCIIIsExact: the sixteen-byte test flags a string exactly
// when one of its bytes is below 0x20 or above 0x7f, wherever that byte is
// and whatever lies around it (a borrow must not hide or invent one).
func TestPrintableASCIIIsExact(t *testing.T) {
	edges := []byte{0x00, 0x1f, 0x20, 0x21, 0x5c, 0x7e, 0x7f, 0x80, 0xc3, 0xff}
	want := func(p []byte) bool {
		for _, c := range p {
			if c < 0x20 || c >= 0x80 {
				return false
			}
		}
		return true
	}
	for n := range 40 {
		for at := range n {
			for _, c := range edges {
				for _, fill := range []byte{' ', '~', 'a'} {
					p := bytes.Repeat([]byte{fill}, n)
					p[at] = c
					if got := printableASCII(p); got != want(p) {
						t.Fatalf("printableASCII(%q) = %v", p, got)
					}
					if at > 0 {
						p[at-1] = 0x1f // a borrow next to the byte
						if got := printableASCII(p); got != want(p) {
							t.Fatalf("printableASCII(%q) = %v", p, got)
						}
					}
				}
			}
		}
	}
}

// TestLeanDecodingLeavesOutOnlyUnreadContent_RC2: a lean decoding leaves
// out the content of a successful result that recorded artifacts and ran no
// command, and nothing else: a command's output, a failure's text and a
// result without artifacts are decoded in full, as is every other field.
func TestLeanDecodingLeavesOutOnlyUnreadContent_RC2(t *testing.T) {
	exit := 1
	for _, tc := range []struct {
		name string
		r    ToolResult
		omit bool
	}{
		{"file read", ToolResult{ToolCallID: "c1", ToolName: "read_file", OK: true, Content: "package main\n\nfunc main() {}\n", Artifacts: &Artifacts{FilesRead: []string{"main.go"}}}, true},
		{"listing, empty artifacts", ToolResult{ToolCallID: "c2", ToolName: "ls", OK: true, Content: "a.go\nb.go", Artifacts: &Artifacts{}}, true},
		{"non-ASCII text", ToolResult{ToolCallID: "c3", ToolName: "read_file", OK: true, Content: "héllo — 日本", Artifacts: &Artifacts{FilesRead: []string{"x"}}}, true},
		{"command output", ToolResult{ToolCallID: "c4", ToolName: "bash", OK: true, Content: "ok  \tpkg\t0.1s", Artifacts: &Artifacts{Command: "go test ./...", ExitCode: new(int)}}, false},
		{"failed command", ToolResult{ToolCallID: "c5", ToolName: "bash", OK: false, Content: "--- FAIL: TestX", Artifacts: &Artifacts{Command: "go test", ExitCode: &exit}}, false},
		{"failed edit", ToolResult{ToolCallID: "c6", ToolName: "edit_file", OK: false, Content: "old text not found", Artifacts: &Artifacts{}}, false},
		{"denied", ToolResult{ToolCallID: "c7", ToolName: "write_file", OK: false, Content: "denied: the user said no"}, false},
		{"no artifacts", ToolResult{ToolCallID: "c8", ToolName: "mcp_search", OK: true, Content: "3 results"}, false},
		{"empty content", ToolResult{ToolCallID: "c9", ToolName: "write_file", OK: true, Artifacts: &Artifacts{FilesModified: []string{"y"}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r
			e := Entry{ID: "e1", Type: TypeToolResult, Timestamp: time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC), Tokens: 9, ToolResult: &r}
			line, err := json.Marshal(&e)
			if err != nil {
				t.Fatal(err)
			}
			lean, err := DecodeLineLean(line)
			if err != nil {
				t.Fatal(err)
			}
			if got := lean.ToolResult.ContentOmitted; got != tc.omit {
				t.Fatalf("ContentOmitted = %v, want %v", got, tc.omit)
			}
			if !tc.omit && lean.ToolResult.Content != tc.r.Content {
				t.Fatalf("content %q, want %q", lean.ToolResult.Content, tc.r.Content)
			}
			leanAgrees(t, line)
		})
	}
}
