package main

import (
	"context"
	"io"
	"os"

	"github.com/soba-agent/soba-lsp/app"
	"github.com/soba-agent/soba-lsp/lsp"
)

// newBackend creates the backend the server drives: the agent of the
// workspace, configured from its layers. It is built when the server
// starts, not when the process does: the other commands do not pay for
// the token counter's vocabulary unless they count.
func newBackend() lsp.BackendFactory {
	c := newCounter()
	return app.LSPBackendFactory(app.LoadSettings, c, entryTokens(c))
}

func runServe(ctx context.Context, env *cmdEnv, args []string) int {
	fs := subcommandFlags(env, "serve")
	setUsage(fs, env, "usage: soba-lsp [--log-file FILE] [--log-level LEVEL] [serve]\n\nServes the Language Server Protocol on stdin/stdout (the default when no subcommand is given); editors start it.")
	if !parseExact(fs, args, 0) {
		return 2
	}
	server := lsp.NewServer(newBackend(), lsp.WithVersion(versionString()), lsp.WithLogger(env.log))
	env.log.Info("serving LSP on stdin/stdout", "version", versionString())
	code := server.Serve(ctx, stdio{in: env.stdin, out: env.stdout})
	env.log.Info("server exited", "code", code)
	return code
}

// stdio is the server's byte stream: stdin for reading, stdout for writing.
// Close closes stdout so the client sees the end; stdin is left to the
// process exit (a read blocked on it cannot be interrupted portably).
type stdio struct {
	in  io.Reader
	out io.Writer
}

func (s stdio) Read(p []byte) (int, error)  { return s.in.Read(p) }
func (s stdio) Write(p []byte) (int, error) { return s.out.Write(p) }

func (s stdio) Close() error {
	if f, ok := s.out.(*os.File); ok {
		return f.Close()
	}
	if c, ok := s.out.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
