package compaction

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/capsule"
)

// TestFilesFoldByDirectory_RC7: a list of files beyond the bound folds by
// directory with counts; nothing is dropped without its count; a short list
// is untouched; a folded list folds again on a roll.
func TestFilesFoldByDirectory_RC7(t *testing.T) {
	var paths []string
	paths = append(paths, "main.go", "go.mod")
	for i := range 5000 {
		paths = append(paths, fmt.Sprintf("gen/f%04d.txt", i))
	}
	paths = append(paths, "docs/a.md")
	got := foldPaths(paths, MaxFileItems)
	want := []string{"main.go", "go.mod", "gen/ — 5,000 files", "docs/a.md"}
	if !slices.Equal(got, want) {
		t.Fatalf("folded %q, want %q", got, want)
	}
	if short := []string{"a.go", "b/c.go"}; !slices.Equal(foldPaths(short, MaxFileItems), short) {
		t.Errorf("a short list was changed")
	}
	// Roll: the folded item and new files under gen/ fold into one count.
	more := append(slices.Clone(got), make([]string, 0, 300)...)
	for i := range 300 {
		more = append(more, fmt.Sprintf("gen/g%03d.txt", i))
	}
	again := foldPaths(more, MaxFileItems)
	if !slices.Contains(again, "gen/ — 5,300 files") || len(again) > MaxFileItems {
		t.Errorf("refolded %q", again)
	}
	// Nested directories: the deepest crowded one folds, the total stays.
	var nested []string
	for i := range 400 {
		nested = append(nested, fmt.Sprintf("web/src/gen/%d.ts", i), fmt.Sprintf("api/v%d/x.go", i))
	}
	n := 0
	for _, it := range foldPaths(nested, MaxFileItems) {
		if _, c, ok := parseFolded(it); ok {
			n += c
		} else {
			n++
		}
		if strings.Contains(it, "\n") {
			t.Errorf("item %q", it)
		}
	}
	if n != len(nested) || len(foldPaths(nested, MaxFileItems)) > MaxFileItems {
		t.Errorf("folded nested list counts %d of %d files in %d items", n, len(nested), len(foldPaths(nested, MaxFileItems)))
	}
}

// TestFiveThousandFilesCapsule_RC7: the 5,000-file workspace of the issue —
// the watcher reports every generated file modified. The capsule stays
// under its bound, is smaller than the history it replaces, and loads again
// from its .capsule.md export.
func TestFiveThousandFilesCapsule_RC7(t *testing.T) {
	b := newBuilder()
	b.user("generate the fixtures under gen/", 200)
	b.reply("Generated.", 200)
	for range 20 {
		b.user("and more of them, please, in the same layout", 200)
		b.reply("Done, generated another batch of fixture files under gen/.", 200)
	}
	var files []string
	for i := range 5000 {
		files = append(files, fmt.Sprintf("gen/f%04d.json", i))
	}
	st, err := BuildDeterministic(b.es, 1, len(b.es), nil, Extras{FilesModified: files})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.FilesModified) > MaxFileItems || !slices.Contains(st.FilesModified, "gen/ — 5,000 files") {
		t.Fatalf("files modified: %d items %q", len(st.FilesModified), st.FilesModified[:min(5, len(st.FilesModified))])
	}
	text := ModelText(st)
	var history int
	for _, e := range b.es {
		history += e.Tokens
	}
	if tokens := (quarterCounter{}).Count(text); tokens >= history {
		t.Errorf("capsule %d tokens, not smaller than the %d tokens it replaces", tokens, history)
	}
	doc := capsule.Document{Meta: capsule.Meta{CheckpointID: "ck_5000", Trigger: TriggerUser, Quality: capsule.QualityDegraded}, State: st}
	back, _, err := capsule.Parse(capsule.Render(doc))
	if err != nil {
		t.Fatalf("capsule.load refuses the export: %v", err)
	}
	if !slices.Equal(back.State.FilesModified, st.FilesModified) {
		t.Errorf("files modified after a round trip: %q", back.State.FilesModified)
	}
}

// TestNotSmallerIsNeverCompleted_RC7: a capsule whose continuation is not
// smaller than the input it replaces is refused whatever the trigger (the
// barrier reports a forced one failed, a soft one skipped).
func TestNotSmallerIsNeverCompleted_RC7(t *testing.T) {
	for _, trigger := range []string{TriggerUser, TriggerHardLimit, TriggerContextOverflow, TriggerTurnComplete} {
		p := Plan{PlanRequest: PlanRequest{Trigger: trigger, Config: DefaultConfig()}, TokensBefore: 4545}
		if ok, why := p.Accept(Capsule{TokensAfter: 80522}); ok || !strings.Contains(why, "no fewer than the 4,545 tokens of history it would replace") {
			t.Errorf("%s: accepted %v, %q", trigger, ok, why)
		}
		if ok, _ := p.Accept(Capsule{TokensAfter: 1000}); !ok && !IsSoft(trigger) {
			t.Errorf("%s: a smaller capsule refused", trigger)
		}
	}
}

// TestCapsuleWithinShareOfHardLimit_RC7: a capsule larger than its share of
// the hard limit folds its file lists harder and trims the verbatim words
// and notes, saying how many it left out.
func TestCapsuleWithinShareOfHardLimit_RC7(t *testing.T) {
	var st capsule.State
	for d := range 40 {
		for f := range 30 {
			st.FilesModified = append(st.FilesModified, fmt.Sprintf("pkg%02d/sub%02d/file%02d.go", d%8, d, f))
		}
	}
	st.FilesModified = foldPaths(st.FilesModified, MaxFileItems)
	for i := range 30 {
		st.Notes = append(st.Notes, fmt.Sprintf("finding %d: %s", i, strings.Repeat("detail ", 20)))
	}
	c := quarterCounter{}
	before := c.Count(ModelText(st))
	max := before / 3
	got := boundCapsule(st, c, max)
	if n := c.Count(ModelText(got)); n > max {
		t.Errorf("capsule %d tokens, bound %d (was %d)", n, max, before)
	}
	total := 0
	for _, it := range got.FilesModified {
		if _, k, ok := parseFolded(it); ok {
			total += k
		} else {
			total++
		}
	}
	if total != 1200 {
		t.Errorf("the folded lists count %d files of 1,200: %q", total, got.FilesModified)
	}
	if same := boundCapsule(st, c, before); !slices.Equal(same.FilesModified, st.FilesModified) {
		t.Errorf("a capsule within its bound was changed")
	}
}

// BenchmarkFoldSixtyThousandFiles folds the file list of a workspace with
// 60,000 generated files in 50 directories, as a capsule built after the
// watcher saw them all does.
func BenchmarkFoldSixtyThousandFiles(b *testing.B) {
	paths := make([]string, 60000)
	for i := range paths {
		paths[i] = fmt.Sprintf("gen/d%02d/f%05d.json", i%50, i)
	}
	b.ResetTimer()
	for range b.N {
		if got := foldPaths(paths, MaxFileItems); len(got) > MaxFileItems {
			b.Fatalf("%d items", len(got))
		}
	}
}
