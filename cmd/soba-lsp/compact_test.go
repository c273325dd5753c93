package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/compaction/tokens"
	"github.com/soba-agent/soba-lsp/importer"
	"github.com/soba-agent/soba-lsp/session"
)

// BenchmarkImportAndDryRunCompact imports the 2.4 MB real pi session (token
// estimates included) and compacts it with a dry run, in process, as
// `soba-lsp import` then `soba-lsp compact --dry-run` do. Goal: under 150 ms.
// The first three share one warm token counter, as a running server does;
// "cold" gives each step a new counter (its table built, its memo empty), as
// two separate CLI processes have.
func BenchmarkImportAndDryRunCompact(b *testing.B) {
	src := filepath.Join("..", "..", "..", "shared", "transcripts", "pi-mono__before-compaction.jsonl")
	data, err := os.ReadFile(src)
	if err != nil {
		b.Skipf("real transcript %s is not available: %v", src, err)
	}
	ws := b.TempDir()
	o, err := openOffline(filepath.Join(ws, "x.jsonl"), ws, "", io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	o.counter.Count("warm up the tokenizer's tables")
	warm := o.counter
	n := 0 // file names stay unique across -count runs in one temp dir
	importOnce := func() string {
		n++
		est := entryTokens(o.counter)
		res, err := importer.Convert(data, importer.Options{Estimate: est, Counter: o.counter})
		if err != nil {
			b.Fatal(err)
		}
		out := filepath.Join(ws, "s_bench"+strconv.Itoa(n)+".jsonl")
		if err := importer.Write(res, out, session.SessionHeader{ImportedFrom: src}, session.Options{Estimate: est}); err != nil {
			b.Fatal(err)
		}
		return out
	}
	dryRun := func(file string) {
		s, err := o.openSession(file, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		res, cp, err := o.compact(context.Background(), file, compaction.TriggerUser, s, true, io.Discard)
		if err != nil || res.Outcome != compaction.OutcomeCompleted || cp == nil {
			b.Fatalf("dry run: %+v %v", res, err)
		}
	}
	b.Run("import", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			importOnce()
		}
	})
	file := importOnce()
	b.Run("dry-run-compact", func(b *testing.B) {
		for b.Loop() {
			dryRun(file)
		}
	})
	b.Run("import+dry-run", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			dryRun(importOnce())
		}
	})
	fresh := func() {
		c, err := tokens.New(tokens.Cl100kBase)
		if err != nil {
			b.Fatal(err)
		}
		o.counter = c
	}
	b.Run("import+dry-run/cold", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			fresh()
			file := importOnce()
			fresh()
			dryRun(file)
		}
	})
	o.counter = warm
}
