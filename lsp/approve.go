package lsp

import (
	"context"
	"encoding/json"
	"fmt"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"github.com/soba-agent/soba-lsp/agent"
)

// Approval actions offered in window/showMessageRequest.
const (
	ActionAllowOnce    = "Allow once"
	ActionAllowSession = "Allow for session"
	ActionDeny         = "Deny"
)

// editorApprover asks the user through window/showMessageRequest. Anything
// but an explicit allow (dismissed, an error, the connection gone, ctx done)
// is Deny.
type editorApprover struct{ s *Server }

var _ agent.Approver = (*editorApprover)(nil)

func (a *editorApprover) Approve(ctx context.Context, tool, summary string) (agent.Approval, error) {
	// Let the notifications queued before this question (the tool_call
	// event) reach the editor first.
	select {
	case <-a.s.out.reached():
	case <-ctx.Done():
		return agent.Deny, ctx.Err()
	}
	params := &protocol.ShowMessageRequestParams{
		Type:    protocol.MessageTypeWarning,
		Message: fmt.Sprintf("SOBA wants to run %s: %s", tool, summary),
		Actions: []protocol.MessageActionItem{{Title: ActionAllowOnce}, {Title: ActionAllowSession}, {Title: ActionDeny}},
	}
	var raw jsonrpc2.RawMessage
	if _, err := a.s.conn.Call(ctx, MethodShowMessageRequest, params, &raw); err != nil {
		return agent.Deny, fmt.Errorf("asking the editor to approve %s: %w", tool, err)
	}
	var item *struct {
		Title string `json:"title"`
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &item); err != nil {
			return agent.Deny, fmt.Errorf("approval answer for %s: %w", tool, err)
		}
	}
	if item == nil {
		return agent.Deny, nil
	}
	switch item.Title {
	case ActionAllowOnce:
		return agent.AllowOnce, nil
	case ActionAllowSession:
		return agent.AllowSession, nil
	}
	return agent.Deny, nil
}
