package lsp

import (
	"path/filepath"
	"testing"

	"github.com/soba-agent/soba-lsp/internal/msgtable"
)

// TestMessagesTableTurnFailed: the rows of docs/messages.md that name this
// package are what TurnFailedMessage writes, word for word.
func TestMessagesTableTurnFailed(t *testing.T) {
	rows, err := msgtable.Read(filepath.Join("..", "docs", "messages.md"))
	if err != nil {
		t.Fatal(err)
	}
	written := []string{TurnFailedMessage("openai: request rejected (HTTP 400): bad tool")}
	for _, r := range msgtable.Of(rows, "lsp") {
		found := false
		for _, w := range written {
			found = found || r.Matches(w)
		}
		if !found {
			t.Errorf("docs/messages.md:%d: no sentence the server writes reads %q", r.Line, r.Message)
		}
	}
}
