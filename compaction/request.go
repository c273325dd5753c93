package compaction

import (
	"regexp"
	"strings"

	"github.com/soba-agent/soba-lsp/internal/lazyregexp"
)

// Context is not a request (R-C8). Editors and agents wrap what they add
// to a user message in markers: the file the editor has open, the
// selection, the environment, system reminders, interrupt markers, another
// agent's slash command and its output. The capsule's goal, work items and
// latest request come from the user's own words only.

// contextTags are the wrappers editors and agents put around context they
// add to a user message; the tag and everything inside it is context.
var contextTags = []string{
	"ide_opened_file", "ide_selection", "ide_diagnostics", "system-reminder", "environment_context",
	"user_instructions", "turn_aborted", "command-name", "command-message", "command-args",
	"local-command-stdout", "local-command-stderr", "local-command-caveat", "user-prompt-submit-hook",
	"bash-input", "bash-stdout", "bash-stderr", "task-notification", "INSTRUCTIONS", "context",
}

var contextTagPattern = func() *lazyregexp.Regexp {
	alts := make([]string, len(contextTags))
	for i, t := range contextTags {
		alts[i] = regexp.QuoteMeta(t)
	}
	names := strings.Join(alts, "|")
	// An element, or an opening tag left unclosed (the rest is context).
	return lazyregexp.New(`(?s)<(` + names + `)(\s[^>]*)?>.*?</(` + names + `)>|<(` + names + `)(\s[^>]*)?>.*$`)
}()

// interruptMarker matches Claude Code's interrupt markers and the like.
var interruptMarker = lazyregexp.New(`\[Request interrupted by user[^\]]*\]`)

// codexIDEContext is the preamble Codex's IDE extension puts before the
// user's request; the request follows "## My request for Codex:".
const (
	codexIDEContext = "# Context from my IDE setup:"
	codexMyRequest  = "## My request for Codex:"
)

// A Claude Code slash command the user typed is written as
// <command-message>, <command-name>/NAME</command-name> and
// <command-args>ARGS</command-args>; the prompt it expands to follows as a
// harness note. A command that asks for work (/review URL, a project's
// own command) is the user's request: "/NAME ARGS". Claude Code's own
// commands that run locally (/exit, /clear, /model…) ask nothing, and
// neither do Codex's, pi's, opencode's and SOBA's own (harnessCommands).
var (
	slashName = lazyregexp.New(`<command-name>\s*/?([^<\s]+)\s*</command-name>`)
	slashArgs = lazyregexp.New(`(?s)<command-args>(.*?)</command-args>`)
)

var harnessCommands = map[string]bool{
	"add-dir": true, "agents": true, "bashes": true, "bug": true, "clear": true, "compact": true, "config": true,
	"context": true, "cost": true, "doctor": true, "exit": true, "export": true, "help": true, "hooks": true,
	"ide": true, "install-github-app": true, "login": true, "logout": true, "mcp": true, "memory": true,
	"model": true, "output-style": true, "permissions": true, "plugin": true, "plugins": true,
	"privacy-settings": true, "release-notes": true, "resume": true, "rewind": true, "sandbox": true,
	"status": true, "statusline": true, "terminal-setup": true, "todos": true, "upgrade": true, "usage": true,
	"vim": true, "theme": true, "stats": true, "tasks": true, "rename": true, "skills": true, "fast": true,
	// Codex's and pi's own.
	"quit": true, "new": true, "approvals": true, "diff": true, "mention": true, "settings": true, "share": true,
	"copy": true, "session": true, "changelog": true, "hotkeys": true, "fork": true, "tree": true, "reload": true,
	"thinking": true, "scoped-models": true,
	// opencode's and SOBA's own.
	"mode": true, "models": true, "themes": true, "editor": true, "sessions": true, "undo": true, "redo": true,
	"unshare": true, "details": true, "budget": true, "auto-compact": true, "milestone": true, "pivot": true,
	"capsule": true, "cancel": true,
}

// slashRequest is the request a slash command message makes ("" for none).
func slashRequest(msg string) string {
	m := slashName.FindStringSubmatch(msg)
	if m == nil || harnessCommands[m[1]] {
		return ""
	}
	req := "/" + m[1]
	if a := slashArgs.FindStringSubmatch(msg); a != nil {
		if args := strings.TrimSpace(a[1]); args != "" {
			req += " " + args
		}
	}
	return req
}

// userWords is a user message without the context wrapped around it; ""
// when the message is context only (R-C8).
func userWords(msg string) string {
	s := msg
	if strings.HasPrefix(strings.TrimSpace(s), CodexSummaryPrefix) {
		return "" // another agent's handoff summary, not the user's words
	}
	if strings.Contains(s, codexIDEContext) {
		if _, req, ok := strings.Cut(s, codexMyRequest); ok {
			s = req
		} else {
			s, _, _ = strings.Cut(s, codexIDEContext)
		}
	}
	slash := ""
	if strings.Contains(s, "<command-name>") {
		slash = slashRequest(s)
	}
	if strings.Contains(s, "<") {
		s = contextTagPattern.ReplaceAllString(s, "")
	}
	if slash != "" {
		s = slash + "\n" + s
	}
	if strings.Contains(s, "[Request interrupted") {
		s = interruptMarker.ReplaceAllString(s, "")
	}
	return strings.TrimSpace(s)
}

// isQuestionOrComplaint reports whether a sentence asks or complains rather
// than states a rule: it ends with "?", or opens like a question or a
// reproach ("why did you", "you forgot").
func isQuestionOrComplaint(s string) bool {
	t := strings.ToLower(strings.TrimSpace(s))
	if strings.HasSuffix(t, "?") {
		return true
	}
	for _, p := range []string{"why ", "how come", "what ", "how ", "can you", "could you", "would you", "do you", "does ", "can we", "could we", "should we", "shall we", "would it", "is it ", "is there", "are there",
		"you didn't", "you did not", "you forgot", "you still", "you broke", "you keep", "this is wrong", "that's wrong", "this is still", "still not", "it still"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	// An opinion is not a rule: "i think there's only one file left",
	// "i don't think the invalidate works".
	head := t[:min(len(t), 30)]
	for _, p := range []string{"i think", "i don't think", "i dont think", "i don't tink", "i believe", "i guess", "i suppose", "seems like", "looks like"} {
		if i := strings.Index(head, p); i == 0 || i > 0 && !isWordByte(head[i-1]) {
			return true
		}
	}
	return false
}

// nextSentenceEnd returns the end of the next sentence end in s at or after
// i, or -1. A sentence ends with terminal punctuation followed by a blank
// (so `AGENTS.md`, `v1.2` and `e.g.x` stay whole), or with a line break: the
// leftmost match of the regular expression
// [.!?]+(?:["')\]]*)(?:[ \t]+|$)|\n+ (sentenceEnd in the tests), found
// without the regexp engine, since a compaction splits every request of
// the history. A run of terminal punctuation matches only with
// all of it and all the closing quotes after it (a shorter run would be
// followed by punctuation or a quote, not a blank), so a failed run is
// skipped whole.
func nextSentenceEnd(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case '.', '!', '?':
			j := i
			for j < len(s) && (s[j] == '.' || s[j] == '!' || s[j] == '?') {
				j++
			}
			for j < len(s) && (s[j] == '"' || s[j] == '\'' || s[j] == ')' || s[j] == ']') {
				j++
			}
			if j == len(s) {
				return j
			}
			if s[j] == ' ' || s[j] == '\t' {
				for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
					j++
				}
				return j
			}
			i = j // s[j] may start a match (a line break)
		case '\n':
			for i < len(s) && s[i] == '\n' {
				i++
			}
			return i
		default:
			i++
		}
	}
	return -1
}

// sentences splits text into sentences, each with its terminator kept (a
// question keeps its "?"); fragments under 8 bytes are dropped.
func sentences(s string) []string {
	var out []string
	start := 0
	for end := nextSentenceEnd(s, 0); end >= 0; end = nextSentenceEnd(s, end) {
		part := strings.TrimSpace(s[start:end])
		start = end
		if len(part) >= 8 {
			out = append(out, part)
		}
	}
	if part := strings.TrimSpace(s[start:]); len(part) >= 8 {
		out = append(out, part)
	}
	return out
}
