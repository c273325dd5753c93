package agent

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/soba-agent/soba-lsp/configschema"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/tool"
)

// maxApprovalContent bounds the content of a write shown in an approval; a
// longer one is shown head and tail with the number of bytes left out, and
// the text says so.
const maxApprovalContent = 16 << 10

// approvalSummary is what the user approves (R-W3): the tool and what it
// will do, in full, with whitespace runs and control characters made
// visible. For bash it is the whole command (never a first line, never the
// raw JSON); for write_file the path and the content; for edit_file the path,
// the text replaced and its replacement. Arguments that do not decode are
// shown whole, made visible, and the call then fails on the same arguments.
func approvalSummary(c session.ToolCall) string {
	switch c.Name {
	case tool.Bash:
		var a struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(c.Arguments, &a) == nil && a.Command != "" {
			return "command:\n" + visible(a.Command)
		}
	case tool.WriteFile:
		var a struct {
			Path    string `json:"path"`
			Content string `json:"content"`
		}
		if json.Unmarshal(c.Arguments, &a) == nil && a.Path != "" {
			return fmt.Sprintf("write %s (%d bytes):\n%s", visible(a.Path), len(a.Content), visibleBlock(a.Content))
		}
	case tool.EditFile:
		var a struct {
			Path    string `json:"path"`
			OldText string `json:"old_text"`
			NewText string `json:"new_text"`
		}
		if json.Unmarshal(c.Arguments, &a) == nil && a.Path != "" {
			return fmt.Sprintf("edit %s, replacing:\n%s\nwith:\n%s", visible(a.Path), visibleBlock(a.OldText), visibleBlock(a.NewText))
		}
	}
	return "arguments:\n" + visibleBlock(string(c.Arguments))
}

func visibleBlock(s string) string {
	if len(s) <= maxApprovalContent {
		return visible(s)
	}
	head, tail := s[:maxApprovalContent/2], s[len(s)-maxApprovalContent/2:]
	for !utf8.ValidString(head) && len(head) > 0 {
		head = head[:len(head)-1]
	}
	for !utf8.ValidString(tail) && len(tail) > 0 {
		tail = tail[1:]
	}
	return fmt.Sprintf("%s\n[… %d bytes not shown …]\n%s", visible(head), len(s)-len(head)-len(tail), visible(tail))
}

// visible makes what a terminal or a dialog would hide visible: a run of
// more than two spaces becomes "[N spaces]", tabs "\t", carriage returns
// "\r", other control, format (bidirectional overrides, zero-width) and
// invalid bytes their escapes. Newlines stay line breaks, each line being
// shown.
func visible(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == ' ':
			n := 0
			for i+n < len(s) && s[i+n] == ' ' {
				n++
			}
			if n > 2 {
				fmt.Fprintf(&b, "[%d spaces]", n)
			} else {
				b.WriteString(s[i : i+n])
			}
			i += n
			continue
		case r == '\n':
			b.WriteByte('\n')
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Cc, r) || unicode.IsSpace(r) && r != ' ':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// approvalRequest is the request for call: its summary, and for a write or
// an edit whose result is known, the path and the file's content after it.
// An edit that would fail (no workspace, an unreadable file, old_text not
// found once) carries no proposal; the call then fails as it would anyway.
func (env *toolEnv) approvalRequest(call session.ToolCall) ApprovalRequest {
	req := ApprovalRequest{Tool: call.Name, Summary: approvalSummary(call)}
	if env == nil || env.root == nil {
		return req
	}
	switch call.Name {
	case tool.WriteFile:
		var a struct {
			Path    string `json:"path"`
			Content string `json:"content"`
		}
		if json.Unmarshal(call.Arguments, &a) != nil || a.Path == "" {
			return req
		}
		if _, rel, err := env.root.Resolve(a.Path); err == nil {
			req.Path, req.Proposed = rel, &a.Content
		}
	case tool.EditFile:
		var a struct {
			Path    string `json:"path"`
			OldText string `json:"old_text"`
			NewText string `json:"new_text"`
		}
		if json.Unmarshal(call.Arguments, &a) != nil || a.Path == "" || a.OldText == "" {
			return req
		}
		_, rel, err := env.root.Resolve(a.Path)
		if err != nil {
			return req
		}
		data, err := env.root.ReadFile(rel, maxEditBytes)
		if err != nil || strings.Count(string(data), a.OldText) != 1 {
			return req
		}
		out := strings.Replace(string(data), a.OldText, a.NewText, 1)
		req.Path, req.Proposed = rel, &out
	}
	return req
}

// approvalScope is what an answer "for this session" covers, in words that
// also key the decision: a kind of tool, not one name. write_file and
// edit_file are both "file edits", so allowing one is not asked again for
// the other; bash is "bash commands"; every tool of one MCP server is that
// server's, as a server is what the user trusts or not. Any other tool is
// its own.
func (a *Agent) approvalScope(name string) string {
	switch {
	case name == tool.WriteFile || name == tool.EditFile:
		return "file edits"
	case name == tool.Bash:
		return "bash commands"
	case IsMCPTool(name):
		if m := a.opt.MCP; m != nil {
			if r, ok := m.route[name]; ok {
				return fmt.Sprintf("the tools of MCP server %q", r.conn.server.Name)
			}
		}
	}
	return name + " calls"
}

// Verdict is what the approval rule decides for one tool call.
type Verdict int

// The verdicts.
const (
	// VerdictRun: the call runs without a question.
	VerdictRun Verdict = iota
	// VerdictAsk: the user is asked; "Allow … for this session" covers
	// later calls of the same scope.
	VerdictAsk
	// VerdictAskEveryTime: the user is asked, whatever was allowed before
	// and under approval auto; no answer covers a later call (R-W6).
	VerdictAskEveryTime
	// VerdictRefuse: the call does not run (a write to a receipt, R-W2).
	VerdictRefuse
)

// approvalCase is everything the approval rule looks at, settled before
// the call runs: the tool, what it writes, the user's settings (already
// resolved with the workspace's trust, SPEC R-W5) and what the user allowed
// for the session.
type approvalCase struct {
	Tool string
	// MCP marks a tool of an MCP server; ServerApproval is that server's
	// own approval ("" when it has none, then tools.approval decides).
	MCP            bool
	ServerApproval string
	// Paths are the workspace paths the call writes (writtenPaths).
	Paths []string
	// Approval is tools.approval; AutoApprovePaths the user's
	// tools.autoApprovePaths.
	Approval         string
	AutoApprovePaths []string
	// SessionAllowed: the user answered "Allow … for this session" for
	// the call's scope.
	SessionAllowed bool
	// Receipts are the paths no tool writes (R-W2).
	Receipts protected
}

// approvalVerdict is the decision, with the path and the reason for a
// question asked every time or a refusal.
type approvalVerdict struct {
	Verdict   Verdict
	Path, Why string
}

// decideApproval is the one rule that decides whether a tool call runs, is
// asked, is asked every time, or is refused (R-W2, R-W3, R-W6):
//
//  1. write_file and edit_file never write a receipt (the transcript, the
//     flight records, SOBA's configuration and memory): refused, without a
//     question that could only lead to the tool's own refusal;
//  2. a write to a path of AskPaths, or a bash command that writes one or
//     a receipt, is asked every time, unless the user's own
//     tools.autoApprovePaths names it;
//  3. otherwise a tool that writes or runs something (and an MCP tool) is
//     asked under approval "ask" (an MCP server's own approval decides for
//     its tools), unless the user allowed its scope for the session.
func decideApproval(c approvalCase) approvalVerdict {
	editsFile := c.Tool == tool.WriteFile || c.Tool == tool.EditFile
	for _, p := range c.Paths {
		if err := c.Receipts.check(p); err != nil {
			if editsFile {
				return approvalVerdict{Verdict: VerdictRefuse, Path: p, Why: err.Error()}
			}
			if !autoApproved(p, c.AutoApprovePaths) {
				return approvalVerdict{Verdict: VerdictAskEveryTime, Path: p, Why: "SOBA's receipts (the session, its flight records, configuration and memory) are written by SOBA alone (R-W2)"}
			}
		}
	}
	for _, p := range c.Paths {
		if ap, ok := askPathFor(p); ok && !autoApproved(p, c.AutoApprovePaths) {
			return approvalVerdict{Verdict: VerdictAskEveryTime, Path: p, Why: ap.Why}
		}
	}
	var needs bool
	switch {
	case c.MCP && c.ServerApproval != "":
		needs = c.ServerApproval == configschema.ApprovalAsk
	case c.MCP:
		needs = c.Approval == configschema.ApprovalAsk
	default:
		needs = tool.Mutates(c.Tool) && c.Approval == configschema.ApprovalAsk
	}
	if !needs || c.SessionAllowed {
		return approvalVerdict{Verdict: VerdictRun}
	}
	return approvalVerdict{Verdict: VerdictAsk}
}

// approvalCaseOf gathers the case of one call: its written paths, the MCP
// server's approval and the settings.
func (a *Agent) approvalCaseOf(call session.ToolCall, sessionAllowed bool) approvalCase {
	c := approvalCase{Tool: call.Name, Approval: a.Approval(), AutoApprovePaths: a.opt.AutoApprovePaths,
		SessionAllowed: sessionAllowed, Receipts: a.tools.protected}
	if IsMCPTool(call.Name) {
		c.MCP = true
		if m := a.opt.MCP; m != nil {
			if r, ok := m.route[call.Name]; ok {
				c.ServerApproval = r.approval
			}
		}
		return c
	}
	if tool.Mutates(call.Name) {
		c.Paths = a.tools.writtenPaths(call)
	}
	return c
}
