package app

import (
	"context"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
)

// TestACPThinkingIsAThought_RC9: the model's thinking reaches an ACP client
// as agent_thought_chunk, and the answer alone as agent_message_chunk, live
// and when the session is loaded again.
func TestACPThinkingIsAThought_RC9(t *testing.T) {
	client := &acpClient{decide: func(sdk.RequestPermissionRequest) string { return "allow_once" }}
	conn, id, dir := runACP(t, client, providertest.Reply{Text: "Hello there.", Thinking: "The user greets me; answer briefly.", ThinkingAs: "tags"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock("hi")}}); err != nil {
		t.Fatal(err)
	}
	check := func(what string, from int) {
		t.Helper()
		client.mu.Lock()
		defer client.mu.Unlock()
		var thought, message strings.Builder
		for _, u := range client.updates[from:] {
			if c := u.Update.AgentThoughtChunk; c != nil && c.Content.Text != nil {
				thought.WriteString(c.Content.Text.Text)
			}
			if c := u.Update.AgentMessageChunk; c != nil && c.Content.Text != nil {
				message.WriteString(c.Content.Text.Text)
			}
		}
		if strings.TrimSpace(thought.String()) != "The user greets me; answer briefly." {
			t.Errorf("%s: agent_thought_chunk %q, want the thinking", what, thought.String())
		}
		if message.String() != "Hello there." {
			t.Errorf("%s: agent_message_chunk %q, want the answer alone", what, message.String())
		}
	}
	check("live", 0)
	client.mu.Lock()
	from := len(client.updates)
	client.mu.Unlock()
	if _, err := conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: id, Cwd: dir, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	check("session/load", from)
}
