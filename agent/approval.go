package agent

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

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
