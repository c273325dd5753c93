package main

import (
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/compaction/tokens"
	"github.com/soba-agent/soba-lsp/session"
)

// newCounter is the token counter the server and the offline commands use.
func newCounter() compaction.Counter { return tokens.Default() }

// entryTokens estimates one transcript entry as the model sees it; it is
// what the session store writes into each entry's tokens field.
func entryTokens(c compaction.Counter) func(*session.Entry) int {
	return tokens.Estimator{Counter: c}.EntryTokens
}
