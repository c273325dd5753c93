package main

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/soba-agent/soba-lsp/agent"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/importer"
	"github.com/soba-agent/soba-lsp/session"
)

// TestLeanViewBuildsTheSameCapsule_RC2: the deterministic capsule built
// through a session's path view, which decodes lean (it leaves out the
// content of successful tool results that recorded artifacts and ran no
// command), is the capsule built from the entries decoded in full, on every
// real transcript of ../shared/transcripts; and the lean view does leave
// content out, so the two ways differ in what they read.
func TestLeanViewBuildsTheSameCapsule_RC2(t *testing.T) {
	srcs, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "transcripts", "*.json*"))
	if len(srcs) == 0 {
		t.Skip("the real transcripts of ../shared/transcripts are not available")
	}
	omittedAll := 0
	for _, src := range srcs {
		t.Run(filepath.Base(src), func(t *testing.T) {
			res, err := importer.ConvertFile(src, importer.Options{})
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "s_lean.jsonl")
			if err := importer.Write(res, file, session.SessionHeader{ImportedFrom: src}, session.Options{}); err != nil {
				t.Fatal(err)
			}
			s, _, err := session.OpenReadOnly(file, session.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			view := agent.StoreTranscript(s)
			var full compaction.Entries
			for _, m := range s.Path() {
				e, err := s.LoadMeta(m)
				if err != nil {
					t.Fatal(err)
				}
				full = append(full, e)
			}
			lean := view.(compaction.LeanTranscript).Lean()
			omitted := 0
			for i := range lean.Len() {
				e, err := lean.Entry(i)
				if err != nil {
					t.Fatal(err)
				}
				if e.ToolResult != nil && e.ToolResult.ContentOmitted {
					omitted++
				}
			}
			omittedAll += omitted
			got, err := compaction.BuildDeterministic(view, 0, view.Len(), nil, compaction.Extras{})
			if err != nil {
				t.Fatal(err)
			}
			want, err := compaction.BuildDeterministic(full, 0, len(full), nil, compaction.Extras{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("lean view:\n%+v\nfull entries:\n%+v", got, want)
			}
			t.Logf("%d entries, %d results' content left out", len(full), omitted)
		})
	}
	if omittedAll == 0 {
		t.Fatal("no transcript had content left out: the test compares nothing")
	}
}
