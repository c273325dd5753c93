package lsp

import (
	"context"
	"encoding/json"
	"fmt"

	"go.lsp.dev/jsonrpc2"
	lsproto "go.lsp.dev/protocol"

	"github.com/soba-agent/soba-lsp/lsp/protocol"
)

// Approval actions offered in window/showMessageRequest.
const (
	ActionAllowOnce    = "Allow once"
	ActionAllowSession = "Allow for session"
	ActionDeny         = "Deny"
)

// approvalMessage is the question of an approval (R-W3): a first line
// naming the tool, then the whole summary on the lines after it (the VS Code
// extension shows them as the dialog's detail, the Neovim plugin as the
// prompt), never cut to a first line.
func approvalMessage(tool, why, summary string) string {
	if why != "" {
		// Why a call is asked every time comes before what it does, so a
		// dialog that shows the first lines shows it (R-W6).
		return fmt.Sprintf("SOBA wants to run %s\n%s\n%s", tool, why, summary)
	}
	return fmt.Sprintf("SOBA wants to run %s\n%s", tool, summary)
}

// approvalActions are the answers offered, Deny first: editors give the
// first action the default focus, and the default must not allow. A call
// asked every time gets no answer for the session, which would not hold.
func approvalActions(req ApprovalRequest) []lsproto.MessageActionItem {
	if req.EveryTime {
		return []lsproto.MessageActionItem{{Title: ActionDeny}, {Title: ActionAllowOnce}}
	}
	return []lsproto.MessageActionItem{{Title: ActionDeny}, {Title: ActionAllowOnce}, {Title: allowSessionTitle(req.Scope)}}
}

// sessionScope is the scope an answer for the session would cover, empty
// when none is offered.
func sessionScope(req ApprovalRequest) string {
	if req.EveryTime {
		return ""
	}
	return req.Scope
}

// allowSessionTitle is the action that allows for the session: it names
// what that covers ("Allow file edits for this session"), since one answer
// also allows the other tools of its scope, which a bare "Allow for session"
// on a write_file question does not say. Without a scope it is
// ActionAllowSession.
func allowSessionTitle(scope string) string {
	if scope == "" {
		return ActionAllowSession
	}
	return "Allow " + scope + " for this session"
}

// editorApprover asks the user through window/showMessageRequest. Anything
// but an explicit allow (dismissed, an error, the connection gone, ctx done)
// is Deny.
type editorApprover struct{ s *Server }

var _ Approver = (*editorApprover)(nil)

// approvalParams are window/showMessageRequest's params with SOBA's
// extension: "soba" names the tool and, for a write or an edit, the path and
// the proposed content, so an editor can open a diff beside the question.
type approvalParams struct {
	Type    lsproto.MessageType         `json:"type"`
	Message string                      `json:"message"`
	Actions []lsproto.MessageActionItem `json:"actions"`
	Soba    protocol.ApprovalDetail     `json:"soba"`
}

func (a *editorApprover) Approve(ctx context.Context, req ApprovalRequest) (Approval, error) {
	tool := req.Tool
	// Let the notifications queued before this question (the tool_call
	// event) reach the editor first.
	select {
	case <-a.s.out.reached():
	case <-ctx.Done():
		return Deny, ctx.Err()
	}
	params, err := encodeJSON(approvalParams{Type: lsproto.MessageTypeWarning, Message: approvalMessage(tool, req.Why, req.Summary),
		Actions: approvalActions(req), Soba: protocol.ApprovalDetail{Tool: tool, Summary: req.Summary, Path: req.Path, Proposed: req.Proposed, Scope: sessionScope(req)}})
	if err != nil {
		return Deny, fmt.Errorf("asking the editor to approve %s: %w", tool, err)
	}
	var raw jsonrpc2.RawMessage
	if _, err := a.s.conn.Call(ctx, MethodShowMessageRequest, params, &raw); err != nil {
		return Deny, fmt.Errorf("asking the editor to approve %s: %w", tool, err)
	}
	var item *struct {
		Title string `json:"title"`
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &item); err != nil {
			return Deny, fmt.Errorf("approval answer for %s: %w", tool, err)
		}
	}
	if item == nil {
		return Deny, nil
	}
	// Only an action offered allows: an answer titled for another scope is
	// not this question's and denies.
	switch item.Title {
	case ActionAllowOnce:
		return AllowOnce, nil
	case allowSessionTitle(req.Scope):
		if !req.EveryTime {
			return AllowSession, nil
		}
	}
	return Deny, nil
}
