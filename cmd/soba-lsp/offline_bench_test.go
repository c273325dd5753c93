package main

import (
	"io"
	"os"
	"strings"
	"testing"
)

// BenchmarkOfflineCommand runs one offline command in process on the
// session named by SOBA_BENCH_SESSION, the command line in
// SOBA_BENCH_ARGS ("compact --dry-run" by default), so that
// `go test -cpuprofile` shows where a command's time goes.
func BenchmarkOfflineCommand(b *testing.B) {
	file := os.Getenv("SOBA_BENCH_SESSION")
	if file == "" {
		b.Skip("SOBA_BENCH_SESSION names no session file")
	}
	args := strings.Fields(os.Getenv("SOBA_BENCH_ARGS"))
	if len(args) == 0 {
		args = []string{"compact", "--dry-run"}
	}
	args = append(args, file)
	for b.Loop() {
		if code := run(args, strings.NewReader(""), io.Discard, io.Discard); code != 0 {
			b.Fatalf("%v: exit %d", args, code)
		}
	}
}
