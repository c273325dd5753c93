package agent

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/workspace"
)

// TestGeneratedFilesCapsuleBounded_RC7 is the workspace with
// thousands of generated files, each seen modified (as the file watcher
// reports them): an explicit compact of a short history completes only with
// a capsule smaller than what it replaces (its file list folded by
// directory with counts), the next turn runs, and the capsule SOBA exports
// loads again.
func TestGeneratedFilesCapsuleBounded_RC7(t *testing.T) {
	if testing.Short() {
		t.Skip("generates up to 60,000 files")
	}
	for _, n := range []int{5000, 60000} {
		t.Run(fmt.Sprintf("%d files", n), func(t *testing.T) {
			var touched *workspace.Touched
			script := []providertest.Reply{}
			for range 4 {
				script = append(script, providertest.Text("Generated another batch. "+bigText))
			}
			script = append(script, providertest.Text("The fixtures are in place."))
			f := newFixture(t, func(o *Options) {
				root, err := workspace.NewRoot(o.Root)
				if err != nil {
					t.Fatal(err)
				}
				touched = workspace.NewTouched(root, nil)
				o.Touched = touched
				o.Compaction.KeepRecentTokens = 500
			}, script...)
			// The files are not written: what the watcher reported is what
			// the capsule lists, and writing 60,000 files would only slow
			// the test.
			for i := range n {
				touched.Modified(fmt.Sprintf("gen/d%02d/f%05d.json", i%50, i))
			}
			if _, mod := touched.Snapshot(); len(mod) != n {
				t.Fatalf("%d files tracked, want %d", len(mod), n)
			}
			for range 4 {
				if end := f.prompt(t, "generate more fixtures under gen/ "+bigText); end.Outcome != "completed" {
					t.Fatalf("turn %s: %s", end.Outcome, end.Error)
				}
			}
			res, err := f.agent.Compact(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != compaction.OutcomeCompleted || res.TokensAfter >= res.TokensBefore {
				t.Fatalf("compact %s %d → %d (%s)", res.Outcome, res.TokensBefore, res.TokensAfter, res.Reason)
			}
			caps := f.capsules(t)
			st := caps[len(caps)-1].State
			total := 0
			for _, it := range st.FilesModified {
				if !strings.HasPrefix(it, "gen/") {
					t.Fatalf("a file item not under gen/: %q", it)
				}
				_, k, ok := strings.Cut(it, "/ — ")
				if !ok {
					total++ // a file left unfolded
					continue
				}
				var c int
				if _, err := fmt.Sscanf(strings.ReplaceAll(k, ",", ""), "%d files", &c); err != nil {
					t.Fatalf("%q: %v", it, err)
				}
				total += c
			}
			if total != n || len(st.FilesModified) > compaction.MaxFileItems {
				t.Errorf("the folded list counts %d files of %d in %d items", total, n, len(st.FilesModified))
			}
			if end := f.prompt(t, "thanks"); end.Outcome != "completed" {
				t.Fatalf("the turn after the compaction: %s: %s", end.Outcome, end.Error)
			}
			out, err := f.agent.CapsuleExport(caps[len(caps)-1].CheckpointID, "export.capsule.md", false)
			if err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(out); err != nil || fi.Size() > 64<<10 {
				t.Errorf("the export is %d bytes (%v)", fi.Size(), err)
			}
			if _, _, _, err := f.agent.CapsuleLoad("export.capsule.md"); err != nil {
				t.Errorf("capsule.load refuses SOBA's own export: %v", err)
			}
		})
	}
}
