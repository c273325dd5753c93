package main

import (
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/compaction/tokens"
	"github.com/soba-agent/soba-lsp/session"
)

// newCounter is the token counter the server and the offline commands use.
func newCounter() compaction.Counter { return tokens.Default() }

// loadingCounter is newCounter's counter for the offline commands: its
// vocabulary (a hash table of 100k tokens, a few milliseconds) is built on
// another core from the moment the command starts, while it reads its
// configuration and scans the session, and the first count waits for it.
type loadingCounter struct{}

// startCounter starts building the vocabulary and returns the counter.
func startCounter() compaction.Counter {
	go tokens.Default()
	return loadingCounter{}
}

func (loadingCounter) Count(text string) int { return tokens.Default().Count(text) }

// entryTokens estimates one transcript entry as the model sees it; it is
// what the session store writes into each entry's tokens field.
func entryTokens(c compaction.Counter) func(*session.Entry) int {
	return tokens.Estimator{Counter: c}.EntryTokens
}
