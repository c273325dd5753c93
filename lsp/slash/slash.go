// Package slash is the server's grammar of the slash commands a user types to
// the agent (docs/slash-commands.md): `/budget`, `/compact keep the test
// names`, `/capsule export ck_1 "./my handoff.capsule.md" --overwrite`, ….
//
// Parse is pure. It turns the typed text into a prompt for the model, a
// command of PROTOCOL.md with its arguments (as the JSON object the wire
// carries), the help text, or a usage error naming the command. The editors
// send what the user typed through `soba.run` and never parse it themselves,
// so this is the only definition of the grammar.
package slash

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kind says what a typed text means.
type Kind int

const (
	// Prompt: the text goes to the model (Parsed.Text).
	Prompt Kind = iota
	// Command: run Parsed.Command with Parsed.Args.
	Command
	// Help: show HelpLines.
	Help
	// Usage: nothing runs; Parsed.Err says what is wrong and how to type it.
	Usage
)

// Parsed is what a typed text means.
type Parsed struct {
	Kind Kind
	// Text is the prompt for the model (Kind Prompt).
	Text string
	// Command is the PROTOCOL.md command ID (Kind Command), e.g. "soba.budget".
	Command string
	// Args is the command's argument object as it goes on the wire
	// (Kind Command); never nil.
	Args map[string]any
	// Err is the usage error (Kind Usage).
	Err *UsageError
	// Hint is a line to show after the command's result (Kind Command),
	// e.g. how to go on from a list.
	Hint string
}

// UsageError is a slash command that cannot run as typed: which command,
// what is wrong, and its usage.
type UsageError struct {
	Command string // e.g. "/capsule export"
	Problem string // e.g. `missing <path>`
	Usage   string // e.g. "/capsule export <checkpointId> <path> [--overwrite]"; empty for an unknown command
}

func (e *UsageError) Error() string {
	if e.Usage == "" {
		return e.Problem
	}
	return fmt.Sprintf("%s: %s · usage: %s", e.Command, e.Problem, e.Usage)
}

// HelpLine is one line of /help: a usage and what it does.
type HelpLine struct {
	Usage, Summary string
}

// Commands lists every slash command in the order of docs/slash-commands.md.
var Commands = []HelpLine{
	{"/help", "lists these commands and their usage"},
	{"/budget", "shows the budget"},
	{"/compact [instructions…]", "compacts now, with optional focus instructions"},
	{"/auto-compact on|off", "switches the soft triggers; the hard limit always compacts"},
	{"/milestone <note…>", "marks a milestone checkpoint"},
	{"/pivot <note…>", "marks a plan pivot checkpoint"},
	{"/capsule", "shows the newest capsule: what the model now sees"},
	{"/capsule show [checkpointId]", "shows a capsule"},
	{"/capsule list", "lists the checkpoints"},
	{"/capsule create <title…>", "writes a portable capsule"},
	{"/capsule export <checkpointId> <path> [--overwrite]", "exports a capsule; a relative path is in the workspace"},
	{"/capsule load <path>", "loads a .capsule.md"},
	{"/cancel", "cancels the running turn or compaction"},
	{"/session new|info|list", "starts a session, shows this one, or lists them"},
	{"/session resume [sessionId]", "resumes a session; without an id it lists the sessions to choose from"},
	{"/rewind [entryId]", "moves the session leaf back to an entry; without an id it lists the requests and checkpoints to go back to"},
	{"//text", "sends /text to the model as typed"},
}

// HelpLines is the text of /help, one string per line.
func HelpLines() []string {
	width := 0
	for _, h := range Commands {
		width = max(width, utf8.RuneCountInString(h.Usage))
	}
	lines := []string{"SOBA slash commands:"}
	for _, h := range Commands {
		pad := strings.Repeat(" ", width-utf8.RuneCountInString(h.Usage))
		lines = append(lines, "  "+h.Usage+pad+"  "+h.Summary)
	}
	return lines
}

// Usages of each command, as the errors and the help show them.
const (
	usageHelp          = "/help"
	usageBudget        = "/budget"
	usageAutoCompact   = "/auto-compact on|off"
	usageMilestone     = "/milestone <note…>"
	usagePivot         = "/pivot <note…>"
	usageCapsule       = "/capsule [show [checkpointId] | list | create <title…> | export <checkpointId> <path> [--overwrite] | load <path>]"
	usageCapsuleShow   = "/capsule show [checkpointId]"
	usageCapsuleList   = "/capsule list"
	usageCapsuleCreate = "/capsule create <title…>"
	usageCapsuleExport = "/capsule export <checkpointId> <path> [--overwrite]"
	usageCapsuleLoad   = "/capsule load <path>"
	usageCancel        = "/cancel"
	usageSession       = "/session new|info|list|resume [sessionId]"
	usageSessionSimple = "/session new|info|list"
	usageSessionResume = "/session resume [sessionId]"
	usageRewind        = "/rewind [entryId]"
)

// Parse reads the text the user sends to the agent. A slash command is `/`
// and a command word (lowercase letters and `-`) at the start, after blanks,
// ended by a blank or the end of the text; anything else, like `/usr/bin is
// missing`, is a prompt as typed, and `//` sends the rest with one `/`
// removed.
func Parse(text string) Parsed {
	body := strings.TrimLeftFunc(text, unicode.IsSpace)
	if strings.HasPrefix(body, "//") {
		return Parsed{Kind: Prompt, Text: body[1:]}
	}
	word, ok := commandWord(body)
	if !ok {
		return Parsed{Kind: Prompt, Text: text}
	}
	l := &line{text: body, pos: 1 + len(word)}
	p, err := parseCommand(word, l)
	if err != nil {
		return Parsed{Kind: Usage, Err: err}
	}
	if p.Args == nil {
		p.Args = map[string]any{}
	}
	return p
}

// commandWord is the word after a leading `/` when the text starts with a
// slash command.
func commandWord(body string) (string, bool) {
	if !strings.HasPrefix(body, "/") {
		return "", false
	}
	i := 1
	for i < len(body) && (body[i] >= 'a' && body[i] <= 'z' || body[i] == '-') {
		i++
	}
	if i == 1 {
		return "", false
	}
	if i < len(body) {
		r, _ := utf8.DecodeRuneInString(body[i:])
		if !unicode.IsSpace(r) {
			return "", false
		}
	}
	return body[1:i], true
}

func command(id string, args map[string]any) Parsed {
	return Parsed{Kind: Command, Command: id, Args: args}
}

func parseCommand(word string, l *line) (Parsed, *UsageError) {
	switch word {
	case "help":
		return Parsed{Kind: Help}, l.end("/help", usageHelp)
	case "budget":
		return command("soba.budget", nil), l.end("/budget", usageBudget)
	case "cancel":
		return command("soba.cancel", nil), l.end("/cancel", usageCancel)
	case "compact":
		if t := l.freeText(); t != "" {
			return command("soba.compact", map[string]any{"instructions": t}), nil
		}
		return command("soba.compact", nil), nil
	case "auto-compact":
		v, err := l.required("/auto-compact", usageAutoCompact, "on or off")
		if err == nil {
			err = l.end("/auto-compact", usageAutoCompact)
		}
		if err != nil {
			return Parsed{}, err
		}
		switch v {
		case "on", "off":
			return command("soba.autoCompact", map[string]any{"enabled": v == "on"}), nil
		}
		return Parsed{}, &UsageError{"/auto-compact", fmt.Sprintf("expected on or off, not %q", v), usageAutoCompact}
	case "milestone", "pivot":
		kind, usage := "milestone", usageMilestone
		if word == "pivot" {
			kind, usage = "plan_pivot", usagePivot
		}
		note, err := l.requiredFreeText("/"+word, usage, "<note…>")
		if err != nil {
			return Parsed{}, err
		}
		return command("soba.checkpoint", map[string]any{"kind": kind, "note": note}), nil
	case "capsule":
		return parseCapsule(l)
	case "session":
		return parseSession(l)
	case "rewind":
		id, ok, err := l.word("/rewind", usageRewind)
		if err == nil {
			err = l.end("/rewind", usageRewind)
		}
		if err != nil {
			return Parsed{}, err
		}
		if !ok {
			// Without an id the user chooses from the points of the
			// current path (the editor may show a picker over the same
			// result).
			p := command("soba.session.history", nil)
			p.Hint = "rewind to before one with /rewind <entryId>, the id in its line; files are not reverted"
			return p, nil
		}
		return command("soba.session.rewind", map[string]any{"entryId": id}), nil
	}
	return Parsed{}, &UsageError{Command: "/" + word,
		Problem: fmt.Sprintf("unknown command /%s · /help lists the commands; //%s sends /%s to the model", word, word, word)}
}

func parseCapsule(l *line) (Parsed, *UsageError) {
	sub, ok, err := l.word("/capsule", usageCapsule)
	if err != nil {
		return Parsed{}, err
	}
	if !ok {
		return command("soba.capsule.show", nil), nil
	}
	switch sub {
	case "show":
		id, ok, err := l.word("/capsule show", usageCapsuleShow)
		if err == nil {
			err = l.end("/capsule show", usageCapsuleShow)
		}
		if err != nil {
			return Parsed{}, err
		}
		if ok {
			return command("soba.capsule.show", map[string]any{"checkpointId": id}), nil
		}
		return command("soba.capsule.show", nil), nil
	case "list":
		return command("soba.capsule.list", nil), l.end("/capsule list", usageCapsuleList)
	case "create":
		title, err := l.requiredFreeText("/capsule create", usageCapsuleCreate, "<title…>")
		if err != nil {
			return Parsed{}, err
		}
		return command("soba.capsule.create", map[string]any{"title": title}), nil
	case "export":
		const cmd, usage = "/capsule export", usageCapsuleExport
		id, err := l.required(cmd, usage, "<checkpointId>")
		if err != nil {
			return Parsed{}, err
		}
		path, err := l.required(cmd, usage, "<path>")
		if err != nil {
			return Parsed{}, err
		}
		flag, ok, err := l.word(cmd, usage)
		if err != nil {
			return Parsed{}, err
		}
		if ok && flag != "--overwrite" {
			return Parsed{}, &UsageError{cmd, fmt.Sprintf("unexpected argument %q", flag), usage}
		}
		if err := l.end(cmd, usage); err != nil {
			return Parsed{}, err
		}
		args := map[string]any{"checkpointId": id, "path": path}
		if ok {
			args["overwrite"] = true
		}
		return command("soba.capsule.export", args), nil
	case "load":
		path, err := l.required("/capsule load", usageCapsuleLoad, "<path>")
		if err == nil {
			err = l.end("/capsule load", usageCapsuleLoad)
		}
		if err != nil {
			return Parsed{}, err
		}
		return command("soba.capsule.load", map[string]any{"path": path}), nil
	}
	return Parsed{}, &UsageError{"/capsule", fmt.Sprintf("unknown subcommand %q", sub), usageCapsule}
}

func parseSession(l *line) (Parsed, *UsageError) {
	sub, err := l.required("/session", usageSession, "new, info, list or resume")
	if err != nil {
		return Parsed{}, err
	}
	switch sub {
	case "new", "info", "list":
		return command("soba.session."+sub, nil), l.end("/session "+sub, usageSessionSimple)
	case "resume":
		id, ok, err := l.word("/session resume", usageSessionResume)
		if err == nil {
			err = l.end("/session resume", usageSessionResume)
		}
		if err != nil {
			return Parsed{}, err
		}
		if !ok {
			// Without an id the user chooses from the list (the editor may
			// show a picker over the same result).
			p := command("soba.session.list", nil)
			p.Hint = "resume one with /session resume <sessionId>"
			return p, nil
		}
		return command("soba.session.resume", map[string]any{"sessionId": id}), nil
	}
	return Parsed{}, &UsageError{"/session", fmt.Sprintf("unknown subcommand %q", sub), usageSession}
}

// line reads a command's arguments left to right: words separated by blanks;
// a word in double quotes may hold blanks and `\"` inside quotes is a quote;
// a free-text argument is the rest of the line.
type line struct {
	text string
	pos  int
}

func (l *line) skipBlanks() {
	for l.pos < len(l.text) {
		r, n := utf8.DecodeRuneInString(l.text[l.pos:])
		if !unicode.IsSpace(r) {
			return
		}
		l.pos += n
	}
}

// word reads the next word; ok is false at the end of the line.
func (l *line) word(cmd, usage string) (w string, ok bool, err *UsageError) {
	l.skipBlanks()
	if l.pos >= len(l.text) {
		return "", false, nil
	}
	if l.text[l.pos] != '"' {
		from := l.pos
		for l.pos < len(l.text) {
			r, n := utf8.DecodeRuneInString(l.text[l.pos:])
			if unicode.IsSpace(r) {
				break
			}
			l.pos += n
		}
		return l.text[from:l.pos], true, nil
	}
	value, end, closed := quoted(l.text, l.pos)
	if !closed {
		return "", false, &UsageError{cmd, "unterminated quote", usage}
	}
	if end < len(l.text) {
		if r, _ := utf8.DecodeRuneInString(l.text[end:]); !unicode.IsSpace(r) {
			return "", false, &UsageError{cmd, "a closing quote must end the word", usage}
		}
	}
	l.pos = end
	return value, true, nil
}

// required reads the next word; its absence is an error naming what is missing.
func (l *line) required(cmd, usage, what string) (string, *UsageError) {
	w, ok, err := l.word(cmd, usage)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", &UsageError{cmd, "missing " + what, usage}
	}
	return w, nil
}

// end makes anything left on the line an error.
func (l *line) end(cmd, usage string) *UsageError {
	extra, ok, err := l.word(cmd, usage)
	if err != nil {
		return err
	}
	if ok {
		return &UsageError{cmd, fmt.Sprintf("unexpected argument %q", extra), usage}
	}
	return nil
}

// freeText is the rest of the line, trimmed; when it is one quoted word
// (`"handoff auth work"`) that pair of quotes is removed, otherwise quotes
// stay as typed (`say "hi" twice`).
func (l *line) freeText() string {
	rest := strings.TrimSpace(l.text[l.pos:])
	l.pos = len(l.text)
	if strings.HasPrefix(rest, `"`) {
		if v, end, closed := quoted(rest, 0); closed && end == len(rest) {
			return v
		}
	}
	return rest
}

// requiredFreeText is freeText that may not be empty.
func (l *line) requiredFreeText(cmd, usage, what string) (string, *UsageError) {
	if t := l.freeText(); t != "" {
		return t, nil
	}
	return "", &UsageError{cmd, "missing " + what, usage}
}

// quoted reads a double-quoted word starting at from: its value and the
// index after the closing quote; closed is false when no quote closes it.
func quoted(text string, from int) (value string, end int, closed bool) {
	var b strings.Builder
	for i := from + 1; i < len(text); i++ {
		switch c := text[i]; {
		case c == '\\' && i+1 < len(text) && text[i+1] == '"':
			b.WriteByte('"')
			i++
		case c == '"':
			return b.String(), i + 1, true
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, false
}
