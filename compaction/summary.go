package compaction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/internal/lazyregexp"
	"github.com/soba-agent/soba-lsp/session"
)

// Summarizer asks the summary model for a capsule's narrative sections. The
// barrier calls it; the agent implements it over a real provider. stream
// receives the answer's text as it arrives, each piece once and in order
// (nil: nobody listens); the returned text is the whole answer.
type Summarizer interface {
	Summarize(ctx context.Context, req SummaryRequest, stream func(delta string)) (string, error)
}

// SummaryRequest is one request to the summary model.
type SummaryRequest struct {
	System string
	Prompt string
	// MaxOutputTokens bounds the answer.
	MaxOutputTokens int
}

// SummarySystemPrompt tells the summary model what a capsule is for.
const SummarySystemPrompt = `You compact the history of a coding-agent session into a Context Capsule: the working state another model needs to continue the task without the old messages. Be exact and brief. Keep file paths, commands, error messages, identifiers and numbers verbatim. Record decisions with their rationale. Never invent work that did not happen.`

// summarySections are the headings the model must answer with (PROTOCOL.md
// "Fixed details"); artifacts are written by the engine, not the model.
var summarySections = []string{"Goal", "Constraints", "Done", "In progress", "Pending", "Decisions", "Blockers", "Next steps", "Notes"}

// sectionGuide says what each section holds, as the summary prompt tells
// the model: the next model acts on In progress and Next steps first, so
// those must name the exact step, not the topic.
var sectionGuide = map[string]string{
	"Goal":        "what the user wants from the whole session, in one or two sentences; it changes only when the user changes it",
	"Constraints": "the user's rules and preferences, in their words (tools, style, what not to touch)",
	"Done":        "finished and verified work, one result per bullet",
	"In progress": "what was being done when the history ends, down to the exact step, file and function",
	"Pending":     "work the user asked for that has not started",
	"Decisions":   "choices made and why, so they are not reopened",
	"Blockers":    "what currently fails or is missing, with the exact error text",
	"Next steps":  "the next concrete actions, in order",
	"Notes":       "anything else the next model needs: facts found about the code, conventions, pitfalls",
}

// SummaryPromptOptions shape one summary request.
type SummaryPromptOptions struct {
	// Previous is the state so far: the previous capsule rolled with the
	// summaries of earlier chunks (R-M4).
	Previous *capsule.State
	// History is the rendered history to summarise (see RenderHistory).
	History string
	// Instructions are the user's focus instructions for an explicit compact.
	Instructions string
	// Part and Parts number the chunk when the history is summarised in
	// several requests.
	Part, Parts int
}

// SummaryPrompt builds the user prompt of a summary request.
func SummaryPrompt(o SummaryPromptOptions) string {
	var b strings.Builder
	b.WriteString("Update the Context Capsule of this session.\n\n")
	if o.Previous != nil {
		b.WriteString("<previous-capsule>\n")
		b.WriteString(ModelText(*o.Previous))
		b.WriteString("\n</previous-capsule>\n\nCarry over everything in the previous capsule that still holds: goal, constraints, decisions, blockers and pending work are dropped only when the history below resolves them.\n\n")
	}
	if o.Parts > 1 {
		fmt.Fprintf(&b, "The history is long and comes in parts; this is part %d of %d.\n\n", o.Part, o.Parts)
	}
	b.WriteString("<history>\n")
	b.WriteString(o.History)
	b.WriteString("\n</history>\n\n")
	if strings.TrimSpace(o.Instructions) != "" {
		b.WriteString("Focus of this compaction, as the user asked: ")
		b.WriteString(strings.TrimSpace(o.Instructions))
		b.WriteString("\n\n")
	}
	b.WriteString("Answer in Markdown with exactly these headings, in this order, each followed by a paragraph (Goal) or a list of `- ` bullets (the others); write `- none` for an empty section:\n")
	for _, s := range summarySections {
		b.WriteString("## ")
		b.WriteString(s)
		b.WriteByte('\n')
	}
	b.WriteString("\nWhat goes where:\n")
	for _, s := range summarySections {
		fmt.Fprintf(&b, "- %s: %s\n", s, sectionGuide[s])
	}
	b.WriteString("Under Decisions write each bullet as `- decision — rationale`. Do not list files read or modified, commands run or skills: the engine records those exactly.\n")
	return b.String()
}

// History rendering limits for the summarizer's view: long tool outputs are
// shortened there (the transcript keeps them whole).
const (
	summaryToolResultChars = 1500
	summaryArgumentsChars  = 600
	summaryTextChars       = 6000
)

// RenderHistory renders path entries [from, to) as the summarizer's view,
// split into chunks of at most chunkChars characters each (one chunk when
// chunkChars ≤ 0), so a history larger than the summary model's window is
// summarised in parts and merged.
func RenderHistory(t Transcript, from, to, chunkChars int) ([]string, error) {
	var chunks []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			chunks = append(chunks, b.String())
			b.Reset()
		}
	}
	for i := from; i < to; i++ {
		nd := t.Node(i)
		if !isModelEntry(nd.Type) && nd.Type != session.TypeCheckpoint {
			continue
		}
		e, err := loadEntry(t, i)
		if err != nil {
			return nil, err
		}
		item := renderHistoryItem(e)
		if item == "" {
			continue
		}
		if chunkChars > 0 && b.Len() > 0 && b.Len()+len(item) > chunkChars {
			flush()
		}
		if chunkChars > 0 && len(item) > chunkChars {
			item = shorten(item, chunkChars)
		}
		b.WriteString(item)
	}
	flush()
	return chunks, nil
}

func renderHistoryItem(e *session.Entry) string {
	switch {
	case e.User != nil:
		return "[user] " + shorten(e.User.Text, summaryTextChars) + "\n\n"
	case e.Assistant != nil:
		var b strings.Builder
		if e.Assistant.Text != "" {
			b.WriteString("[assistant] " + shorten(e.Assistant.Text, summaryTextChars) + "\n")
		}
		for _, c := range e.Assistant.ToolCalls {
			b.WriteString("[tool call " + c.Name + "] " + shorten(string(c.Arguments), summaryArgumentsChars) + "\n")
		}
		if e.Assistant.Error != "" {
			b.WriteString("[assistant error] " + e.Assistant.Error + "\n")
		}
		if b.Len() == 0 {
			return ""
		}
		b.WriteByte('\n')
		return b.String()
	case e.ToolResult != nil:
		status := "ok"
		if !e.ToolResult.OK {
			status = "error"
		}
		return "[tool result " + e.ToolResult.ToolName + ", " + status + "] " + shorten(e.ToolResult.Content, summaryToolResultChars) + "\n\n"
	case e.Checkpoint != nil:
		return "[checkpoint " + e.Checkpoint.Kind + "] " + e.Checkpoint.Note + "\n\n"
	}
	return ""
}

// ErrUnusableSummary is returned for an empty answer or one with none of the
// expected sections; the barrier turns it into the deterministic fallback.
var ErrUnusableSummary = errors.New("the summary model's answer has none of the capsule's sections")

// Headings of a summary: a Markdown heading; a bold line that stands alone
// (`**Next steps**`, `**Next steps:**`); a numbered line that is only a
// title and a colon, as Claude Code numbers its nine sections ("7. Pending
// Tasks:"). The last two count only when they name a section.
var (
	headingPattern     = lazyregexp.New(`^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$`)
	boldHeadingPattern = lazyregexp.New(`^\s{0,3}\*\*([^*]{2,60}?)\s*:?\s*\*\*\s*:?\s*$`)
	numberedHeading    = lazyregexp.New(`^\s{0,3}\d{1,2}\.\s+([A-Z][^:]{2,60}):\s*$`)
	// A title alone on its line with a colon ("Remaining work:"), as a
	// Codex handoff may head its parts.
	plainHeading = lazyregexp.New(`^\s{0,3}([A-Z][A-Za-z /&,()-]{2,60}):\s*$`)
)

// CodexSummaryPrefix opens the handoff summary Codex puts in a compacted
// history, before the summary itself: the other model's instructions, not
// the summary (R-C8).
const CodexSummaryPrefix = "Another language model started to solve this problem and produced a summary of its thinking process."

// Claude Code wraps its summary: a continuation line before it, the
// model's "Analysis:" scratchpad before "Summary:", and an instruction to
// continue after it. None of that is the summary.
const (
	claudeContinued = "This session is being continued from a previous conversation"
	claudeContinue  = "Please continue the conversation from where we left"
	// claudeTranscriptHint points the model at Claude Code's own transcript
	// file, which a SOBA session does not have.
	claudeTranscriptHint = "If you need specific details from before compaction"
)

// withoutWrappers is a foreign summary without the text its agent wraps
// around it (Codex's prefix, Claude Code's continuation lines and analysis).
func withoutWrappers(md string) string {
	md = withoutCodexPrefix(md)
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	start, analysis := 0, false
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, claudeContinued):
			start = i + 1
		case t == "Analysis:" && !analysis:
			analysis = true
		case t == "Summary:" && analysis:
			start = i + 1
		}
	}
	out := slices.DeleteFunc(slices.Clone(lines[start:]), func(l string) bool {
		return strings.HasPrefix(strings.TrimSpace(l), claudeTranscriptHint)
	})
	for i, l := range out {
		if strings.HasPrefix(strings.TrimSpace(l), claudeContinue) {
			out = out[:i]
			break
		}
	}
	return strings.Join(out, "\n")
}

// withoutCodexPrefix is a Codex handoff without its opening paragraph.
func withoutCodexPrefix(md string) string {
	t := strings.TrimSpace(md)
	if !strings.HasPrefix(t, CodexSummaryPrefix) {
		return md
	}
	// The prefix is one paragraph ending in "…your own analysis:".
	if _, rest, ok := strings.Cut(t, "analysis:"); ok {
		return rest
	}
	if _, rest, ok := strings.Cut(t, "\n"); ok {
		return rest
	}
	return ""
}

var bulletPattern = lazyregexp.New(`^\s*([-*+]|\d+[.)])\s+(.*)$`)

// ParseSummary reads the summary model's Markdown into the narrative fields
// of a capsule. It is tolerant: headings in any level or bold, bullets of any
// kind; text it cannot place goes under Notes. An answer with no recognised
// section is ErrUnusableSummary.
func ParseSummary(md string) (capsule.State, error) {
	var st capsule.State
	section := ""
	found := 0
	var goal []string
	lines := strings.Split(withoutWrappers(md), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if isTableRow(line) {
			if i+1 < len(lines) && tableSeparator.MatchString(lines[i+1]) {
				i++ // a header row and its separator: column names, not items
				continue
			}
			line = tableItem(line)
		}
		if m := headingPattern.FindStringSubmatch(line); m != nil {
			if name, ok := sectionName(m[2]); ok {
				section = name
				found++
			} else {
				section = "" // an unknown heading: its text goes under notes
			}
			continue
		}
		if m := boldHeadingPattern.FindStringSubmatch(line); m != nil {
			if name, ok := sectionName(m[1]); ok {
				section = name
				found++
				continue
			}
		}
		if m := numberedHeading.FindStringSubmatch(line); m != nil {
			if name, ok := sectionName(m[1]); ok {
				section = name
				found++
				continue
			}
		}
		if m := plainHeading.FindStringSubmatch(line); m != nil {
			if name, ok := sectionName(m[1]); ok {
				section = name
				found++
				continue
			}
		}
		text := strings.TrimSpace(line)
		if fence, ok := fenceOpen(text); ok {
			// A code block or a tree is one item, as it was written.
			var block []string
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), fence); i++ {
				block = append(block, lines[i])
			}
			text = strings.Trim(strings.Join(block, "\n"), "\n")
			if strings.TrimSpace(text) == "" {
				continue
			}
			if section == "Goal" {
				goal = append(goal, text)
			} else {
				st = appendItem(st, section, text)
			}
			continue
		}
		if text == "" {
			continue
		}
		if m := bulletPattern.FindStringSubmatch(line); m != nil {
			text = strings.TrimSpace(m[2])
		}
		if isNone(text) {
			continue
		}
		if section == "Goal" {
			goal = append(goal, text)
			continue
		}
		st = appendItem(st, section, text)
	}
	if found == 0 {
		return capsule.State{}, ErrUnusableSummary
	}
	st.Goal = strings.Join(goal, " ")
	return st, nil
}

// fenceOpen reports whether a trimmed line opens a code fence, and the
// fence that closes it.
func fenceOpen(t string) (string, bool) {
	for _, f := range []string{"```", "~~~"} {
		if strings.HasPrefix(t, f) {
			n := len(t) - len(strings.TrimLeft(t, f[:1]))
			return t[:n], true
		}
	}
	return "", false
}

// appendItem adds one item of a summary's section to st; text outside the
// capsule's sections goes under Notes.
func appendItem(st capsule.State, section, text string) capsule.State {
	switch section {
	case "Constraints":
		st.Constraints = append(st.Constraints, text)
	case "Done":
		st.Done = append(st.Done, text)
	case "In progress":
		st.InProgress = append(st.InProgress, text)
	case "Pending":
		st.Pending = append(st.Pending, text)
	case "Decisions":
		st.Decisions = append(st.Decisions, parseDecision(text))
	case "Blockers":
		st.Blockers = append(st.Blockers, text)
	case "Next steps":
		st.NextSteps = append(st.NextSteps, text)
	default: // Notes, an unknown heading's text, or text before any heading
		st.Notes = append(st.Notes, text)
	}
	return st
}

// Markdown tables, which models (and pi's own summaries) use for work
// packages: each body row is one item, its cells joined by " · ".
var tableSeparator = lazyregexp.New(`^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$`)

func isTableRow(line string) bool {
	t := strings.TrimSpace(line)
	return len(t) > 2 && t[0] == '|' && t[len(t)-1] == '|'
}

// tableItem turns a table row into an item; a separator row becomes blank.
func tableItem(line string) string {
	if tableSeparator.MatchString(line) {
		return ""
	}
	var cells []string
	for _, c := range strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|") {
		if c = strings.TrimSpace(c); c != "" {
			cells = append(cells, c)
		}
	}
	return strings.Join(cells, " · ")
}

func sectionName(h string) (string, bool) {
	h = strings.TrimSpace(strings.Trim(strings.TrimSpace(h), "*_:"))
	for _, s := range summarySections {
		if strings.EqualFold(h, s) {
			return s, true
		}
	}
	// Models (and other agents' summaries) word their headings freely:
	// "Key Decisions Made", "Current Work", "Open Blockers", "TODO".
	l := strings.ToLower(h)
	for _, alias := range sectionAliases {
		if strings.Contains(l, alias.word) {
			return alias.section, true
		}
	}
	return "", false
}

// sectionAliases map words in a free heading to a section, most specific
// first.
var sectionAliases = []struct{ word, section string }{
	// Codex's handoff ("Current progress and key decisions made", "Important
	// context, constraints, or user preferences", "What remains to be done
	// (clear next steps)", "Any critical data, examples, or references").
	{"progress and key decision", "Done"}, {"user preference", "Constraints"}, {"critical data", "Notes"},
	{"reference", "Notes"}, {"remains to be done", "Next steps"},
	// Claude Code's nine numbered sections and pi's headings.
	{"primary request", "Goal"}, {"intent", "Goal"},
	{"key technical concept", "Notes"}, {"files and code", "Notes"}, {"errors and fix", "Notes"},
	{"problem solving", "Notes"}, {"all user messages", "Notes"}, {"critical context", "Notes"},
	{"blocked", "Blockers"},
	// opencode's compaction sections.
	{"discoveries", "Notes"}, {"relevant files", "Notes"}, {"instructions", "Constraints"},
	{"next step", "Next steps"}, {"next", "Next steps"},
	{"in progress", "In progress"}, {"in-progress", "In progress"}, {"current work", "In progress"}, {"progress", "In progress"},
	{"pending", "Pending"}, {"todo", "Pending"}, {"remaining", "Pending"},
	{"decision", "Decisions"},
	{"blocker", "Blockers"}, {"open issue", "Blockers"}, {"problem", "Blockers"},
	{"constraint", "Constraints"}, {"requirement", "Constraints"},
	{"done", "Done"}, {"completed", "Done"}, {"accomplished", "Done"},
	{"goal", "Goal"}, {"objective", "Goal"}, {"task", "Goal"},
	{"note", "Notes"}, {"context", "Notes"},
}

func isNone(s string) bool {
	switch strings.ToLower(strings.Trim(s, "_*. ")) {
	case "none", "n/a", "nothing", "-", "none yet", "none so far":
		return true
	}
	return false
}

func parseDecision(s string) capsule.Decision {
	for _, sep := range []string{" — ", " -- ", " – ", "; because ", " because "} {
		if i := strings.Index(s, sep); i > 0 {
			return capsule.Decision{Decision: strings.TrimSpace(s[:i]), Rationale: strings.TrimSpace(s[i+len(sep):])}
		}
	}
	return capsule.Decision{Decision: s}
}

// MergeSummary combines the model's narrative with the deterministic
// capsule: the narrative fields come from the summary where it gave them,
// the artifacts always from the recorded state (R-C2), and the user's own
// messages stay verbatim. Constraints and decisions of the deterministic
// state that the summary left out are kept (nothing silently dropped).
func MergeSummary(det, summary capsule.State) capsule.State {
	out := det
	out.Goal = firstNonEmpty(summary.Goal, det.Goal)
	out.Constraints = union(summary.Constraints, det.Constraints)
	out.Done = orElse(summary.Done, det.Done)
	out.InProgress = orElse(summary.InProgress, det.InProgress)
	out.Pending = union(summary.Pending, nil)
	out.Blockers = orElse(summary.Blockers, det.Blockers)
	out.NextSteps = orElse(summary.NextSteps, det.NextSteps)
	// The notes about checks come from the recorded runs (R-C5), like the
	// Verification lines they explain: they stay next to a model's notes.
	out.Notes = union(summary.Notes, slices.DeleteFunc(slices.Clone(det.Notes), func(n string) bool { return !strings.HasPrefix(n, verificationNote) }))
	out.Decisions = append([]capsule.Decision(nil), summary.Decisions...)
	for _, d := range det.Decisions {
		found := false
		for _, x := range out.Decisions {
			if x.Decision == d.Decision {
				found = true
				break
			}
		}
		if !found {
			out.Decisions = append(out.Decisions, d)
		}
	}
	return out
}
