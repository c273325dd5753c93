package agent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/workspace"
)

// denyPaths denies a write or an edit of the listed paths and allows every
// other call, as a user answering the approval prompt would.
type denyPaths []string

func (d denyPaths) Approve(_ context.Context, req ApprovalRequest) (Approval, error) {
	if slices.Contains(d, req.Path) {
		return Deny, nil
	}
	return AllowOnce, nil
}

// R-C6: a write that was proposed and denied, or that failed, is never
// "modified" — neither in the capsule nor in what the editor is sent (the
// tool_result events its file list is built from). Only the write that
// happened is listed, and the denial is the user's decision, not a blocker.
func TestArtifactsOnlyWhatHappened_RC6(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Approval = "ask"; o.Approver = denyPaths{"denied.txt"} },
		providertest.Call("c1", "write_file", map[string]any{"path": "denied.txt", "content": "no"}),
		providertest.Call("c2", "edit_file", map[string]any{"path": "missing.txt", "old_text": "a", "new_text": "b"}),
		providertest.Call("c3", "edit_file", map[string]any{"path": "kept.txt", "old_text": "not there", "new_text": "x"}),
		providertest.Call("c4", "write_file", map[string]any{"path": "adir", "content": "a directory is not a file"}),
		providertest.Call("c5", "write_file", map[string]any{"path": "done.txt", "content": "yes"}),
		providertest.Call("c6", "read_file", map[string]any{"path": "kept.txt"}),
		providertest.Text("done.txt written; the rest was refused or failed."))
	if err := os.WriteFile(filepath.Join(f.dir, "kept.txt"), []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(f.dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	turn, _, err := f.agent.Prompt("write the files")
	if err != nil {
		t.Fatal(err)
	}
	if end := f.rec.turnEnd(t, turn); end.Outcome != "completed" {
		t.Fatalf("turn %s: %s", end.Outcome, end.Error)
	}

	// What happened on disk, so the expectations below are the truth.
	if _, err := os.Stat(filepath.Join(f.dir, "denied.txt")); err == nil {
		t.Fatal("denied.txt was written although denied")
	}
	if got, _ := os.ReadFile(filepath.Join(f.dir, "kept.txt")); string(got) != "original\n" {
		t.Fatalf("kept.txt changed: %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(f.dir, "done.txt")); string(got) != "yes" {
		t.Fatalf("done.txt = %q", got)
	}

	// What the editor is sent: each call's result, by id.
	type sent struct {
		ok             bool
		read, modified []string
	}
	results := map[string]sent{}
	f.rec.mu.Lock()
	for _, e := range f.rec.events {
		if e.Type == "tool_result" {
			results[e.ID] = sent{ok: e.OK != nil && *e.OK, read: e.FilesRead, modified: e.FilesModified}
		}
	}
	f.rec.mu.Unlock()
	cases := []struct {
		call, what     string
		ok             bool
		read, modified []string
	}{
		{"c1", "write denied by the user", false, nil, nil},
		{"c2", "edit of a missing file", false, nil, nil},
		{"c3", "edit whose old_text is not in the file", false, nil, nil},
		{"c4", "write onto a directory", false, nil, nil},
		{"c5", "write that happened", true, nil, []string{"done.txt"}},
		{"c6", "read", true, []string{"kept.txt"}, nil},
	}
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			r, found := results[c.call]
			if !found {
				t.Fatalf("no tool_result event for %s", c.call)
			}
			if r.ok != c.ok || !slices.Equal(r.read, c.read) || !slices.Equal(r.modified, c.modified) {
				t.Fatalf("tool_result %s: ok=%v read=%q modified=%q, want ok=%v read=%q modified=%q",
					c.call, r.ok, r.read, r.modified, c.ok, c.read, c.modified)
			}
		})
	}

	// What the capsule says, with nothing kept verbatim.
	view, _ := f.state(t)
	cs, err := compaction.BuildDeterministic(view, 0, view.Len(), nil, compaction.Extras{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cs.FilesModified, []string{"done.txt"}) {
		t.Errorf("capsule files modified %q, want only done.txt", cs.FilesModified)
	}
	if !slices.Equal(cs.FilesRead, []string{"kept.txt"}) {
		t.Errorf("capsule files read %q, want kept.txt", cs.FilesRead)
	}
	for _, b := range cs.Blockers {
		if strings.Contains(b, "denied") {
			t.Errorf("the user's denial is listed as a blocker: %q", b)
		}
	}
	if !slices.ContainsFunc(cs.Decisions, func(d capsule.Decision) bool { return strings.Contains(d.Decision, "denied") }) {
		t.Errorf("the denial is not among the decisions: %+v", cs.Decisions)
	}
}

// TestDeletedSuffixAgrees_RC6: the watcher's list and the capsule mark a
// deleted file the same way, so a roll replays a live deletion like an
// imported one.
func TestDeletedSuffixAgrees_RC6(t *testing.T) {
	if workspace.DeletedSuffix != compaction.DeletedSuffix {
		t.Fatalf("workspace marks a deletion %q, the capsule %q", workspace.DeletedSuffix, compaction.DeletedSuffix)
	}
}
