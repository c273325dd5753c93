package capsule

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// largeDoc is a large capsule: 200 files, 50 decisions and a realistic share
// of everything else.
func largeDoc() Document {
	var st State
	st.Goal = "Port the session store to the new index format without losing any entry, and keep resume under 50 ms for 100k-entry sessions."
	for i := range 12 {
		st.Constraints = append(st.Constraints, fmt.Sprintf("Constraint %d: never rewrite a written line; keep `go vet` clean", i))
		st.Done = append(st.Done, fmt.Sprintf("Step %d done: migrated table %d and checked the index", i, i))
		st.Pending = append(st.Pending, fmt.Sprintf("Pending %d: review the torn-line handling of part %d", i, i))
		st.NextSteps = append(st.NextSteps, fmt.Sprintf("Next %d: run the resume benchmark with -count=%d", i, i+3))
		st.Notes = append(st.Notes, fmt.Sprintf("Note %d: inotify limits 192,530 watches", i))
	}
	for i := range 50 {
		st.Decisions = append(st.Decisions, Decision{
			Decision:  fmt.Sprintf("Decision %d: keep offsets in a sorted slice", i),
			Rationale: "binary search is enough and keeps the index a single allocation",
		})
	}
	for i := range 200 {
		st.FilesRead = append(st.FilesRead, fmt.Sprintf("internal/store/part%03d/file_%03d.go", i/10, i))
	}
	for i := range 60 {
		st.FilesModified = append(st.FilesModified, fmt.Sprintf("internal/store/part%03d/file_%03d.go", i/10, i*3))
	}
	for i := range 20 {
		st.Verification = append(st.Verification, Verification{Command: fmt.Sprintf("go test -race -run TestStore%d ./internal/store/...", i), ExitCode: i % 2, Outcome: []string{"passed", "failed"}[i%2]})
	}
	st.ActiveSkills = []string{"go-testing", "profiling"}
	for i := range 8 {
		st.UserMessages = append(st.UserMessages, fmt.Sprintf("Message %d:\n```go\nfunc f() {}\n```\n%s", i, strings.Repeat("please keep it fast. ", 20)))
	}
	return Document{Meta: Meta{CheckpointID: "ck_bench01", Title: "Large capsule", Created: time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC),
		Session: "s_bench", Project: "soba-lsp", Trigger: "auto_threshold", Quality: QualityFull}, State: st}
}

func BenchmarkRender(b *testing.B) {
	doc := largeDoc()
	b.SetBytes(int64(len(Render(doc))))
	b.ReportAllocs()
	for b.Loop() {
		Render(doc)
	}
}

func BenchmarkParse(b *testing.B) {
	data := Render(largeDoc())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRenderModelText(b *testing.B) {
	st := largeDoc().State
	b.SetBytes(int64(len(RenderModelText(st))))
	b.ReportAllocs()
	for b.Loop() {
		RenderModelText(st)
	}
}

func BenchmarkChecksum(b *testing.B) {
	st := largeDoc().State
	b.ReportAllocs()
	for b.Loop() {
		Checksum(st)
	}
}

// BenchmarkParseHostile is the worst accepted nesting: lists indented to
// the limit, repeated to fill MaxSize.
func BenchmarkParseHostile(b *testing.B) {
	block := deepIndentList(maxMarkerIndent / 2)
	data := []byte("---\nformat: soba-capsule/1\n---\n## Notes\n\n" + strings.Repeat(block+"\n## Notes2\n\n", (MaxSize-64)/(len(block)+12)))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		Parse(data)
	}
}
