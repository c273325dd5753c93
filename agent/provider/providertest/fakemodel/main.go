// Command fakemodel serves a scripted fake model server on a loopback port,
// for the editor end-to-end tests: point soba-lsp's model.baseURL at the URL
// it prints and each prompt gets the next scripted reply.
//
// Usage:
//
//	fakemodel -script replies.json [-addr 127.0.0.1:0] [-format openai|openai-responses|anthropic|ollama] [-url-file PATH] [-requests-file PATH]
//
// Flags:
//
//	-script         JSON script (see providertest.Script); required
//	-addr           loopback address to listen on; port 0 picks a free one (default 127.0.0.1:0)
//	-format         wire format, overriding the script's "format" (openai, openai-responses, anthropic or ollama)
//	-url-file       write the base URL there once listening (for a test to read the port)
//	-requests-file  on exit, write every received request (decoded) there as JSON
//	-repeat-last    answer with the last reply once the script is spent
//
// It prints "fakemodel listening on URL" to stdout and runs until SIGINT or
// SIGTERM or until its standard input closes (so a test harness that dies
// takes it down).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fakemodel:", err)
		os.Exit(1)
	}
}

// run serves until a signal or until stdin closes.
func run(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("fakemodel", flag.ContinueOnError)
	scriptPath := fs.String("script", "", "JSON script of replies (required)")
	addr := fs.String("addr", "127.0.0.1:0", "loopback address to listen on")
	format := fs.String("format", "", "wire format: openai, openai-responses, anthropic or ollama (default: the script's)")
	urlFile := fs.String("url-file", "", "write the base URL to this file once listening")
	reqFile := fs.String("requests-file", "", "write the received requests to this file on exit")
	repeat := fs.Bool("repeat-last", false, "answer with the last reply once the script is spent")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *scriptPath == "" {
		return fmt.Errorf("-script is required")
	}
	f, err := os.Open(*scriptPath)
	if err != nil {
		return err
	}
	script, err := providertest.LoadScript(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", *scriptPath, err)
	}
	if *format != "" {
		script.Format = *format
	}
	srv, err := providertest.Serve(*addr, script.Format, script.Replies)
	if err != nil {
		return err
	}
	defer srv.Close()
	srv.AddCompact(script.Compacts...)
	if script.RepeatLast || *repeat {
		srv.RepeatLast()
	}
	if *urlFile != "" {
		if err := os.WriteFile(*urlFile, []byte(srv.URL+"\n"), 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "fakemodel listening on %s\n", srv.URL)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	stdinClosed := make(chan struct{})
	go func() { // cannot panic: it only drains stdin
		_, _ = io.Copy(io.Discard, stdin)
		close(stdinClosed)
	}()
	select {
	case <-stop:
	case <-stdinClosed:
	}
	signal.Stop(stop)
	srv.Close()
	if *reqFile != "" {
		b, err := json.MarshalIndent(srv.Requests(), "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*reqFile, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
