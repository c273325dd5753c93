package agent

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/internal/id"
	"github.com/soba-agent/soba-lsp/internal/lazyregexp"
	"github.com/soba-agent/soba-lsp/internal/text"
	"github.com/soba-agent/soba-lsp/session"
)

// maxSavedOutput bounds the raw output a tool keeps for saving beside the
// session: beyond it, the saved file itself is cut and says so.
const maxSavedOutput = 16 << 20

// minResultShare is the smallest share a tool result gets, whatever the
// window: below it no result could say anything useful.
const minResultShare = 256

// resultShare is the most tokens one tool result may take in the model
// input: tools.maxResultTokens, by default a quarter of the hard limit
// (R-G4), so that no single result can make a turn fail closed (issue 26).
// A configured share above the hard limit is the hard limit: a result
// larger could never be sent.
func resultShare(cfg compaction.Config, configured int) int {
	h := cfg.HardLimit()
	share := h / 4
	if configured > 0 {
		share = min(configured, h)
	}
	return max(share, minResultShare)
}

// sizer fits tool results into their share: counted by the budget's own
// counter, shortened to their head and tail with the count left out, the
// whole output saved beside the session and named in the result, so
// nothing is lost.
type sizer struct {
	counter compaction.Counter
	share   int
	// maxBytes bounds a result in bytes as the model input does
	// (maxToolResultChars), so that what the transcript keeps is what the
	// model sees; 0 means no bound.
	maxBytes int
	// save writes a raw output beside the session and returns its path
	// relative to the workspace root.
	save func(callID, raw string) (string, error)
}

// fit shortens run's content to the share when it is over it, and saves
// the raw output when the tool (or fit) left part of it out.
func (z sizer) fit(call session.ToolCall, run toolRun) toolRun {
	if z.counter == nil || z.share <= 0 || run.skill != "" {
		// An activated skill's body is instructions the model must see
		// whole (the model input keeps it whole too, until the next
		// capsule moves it into the system prompt); the door bounds it.
		return run
	}
	over := z.counter.Count(run.content) > z.share || (z.maxBytes > 0 && len(run.content) > z.maxBytes)
	if !over && run.raw == "" {
		return run
	}
	raw := run.raw
	if raw == "" {
		raw = run.content
	}
	run.raw = ""
	where := ""
	if z.save != nil {
		p, err := z.save(call.ID, raw)
		if err != nil {
			where = fmt.Sprintf("; the whole output could not be saved: %v", err)
		} else {
			where = fmt.Sprintf("; the whole output (%s) is saved in %s: read_file it with offset to see the rest", text.Count(strings.Count(raw, "\n")+1, "line", "lines"), p)
		}
	}
	if !over {
		run.content += "\n[" + strings.TrimPrefix(where, "; ") + "]"
		return run
	}
	note := fmt.Sprintf("\n[this result is shortened to its share of the context, %d tokens%s]", z.share, where)
	budget := z.share - z.counter.Count(note) - 32
	for range 4 {
		fitted := headTail(z.counter, run.content, budget)
		if z.maxBytes <= 0 || len(fitted)+len(note) <= z.maxBytes {
			run.content = fitted + note
			return run
		}
		// Over the byte bound: fewer tokens, in proportion.
		budget = budget * (z.maxBytes - len(note)) / (len(fitted) + 1) * 9 / 10
	}
	run.content = validUTF8(run.content[:max(0, z.maxBytes-len(note))], false) + note
	return run
}

// headTail keeps whole lines from the start and the end of s within budget
// tokens, half each, with a line in between that says how many lines and
// bytes were left out. A single line longer than its half is cut inside.
func headTail(c compaction.Counter, s string, budget int) string {
	budget = max(budget, 16)
	lines := strings.SplitAfter(s, "\n")
	half := budget / 2
	var head, tail []string
	used := 0
	for _, l := range lines {
		n := c.Count(l)
		if used+n > half {
			if len(head) == 0 {
				head = append(head, cutToTokens(c, l, half, false))
			}
			break
		}
		head = append(head, l)
		used += n
	}
	used = 0
	for i := len(lines) - 1; i >= len(head); i-- {
		n := c.Count(lines[i])
		if used+n > half {
			if len(tail) == 0 && lines[i] != "" {
				tail = append(tail, cutToTokens(c, lines[i], half, true))
			}
			break
		}
		tail = append(tail, lines[i])
		used += n
	}
	slices.Reverse(tail)
	h, t := strings.Join(head, ""), strings.Join(tail, "")
	if len(h)+len(t) >= len(s) {
		return s
	}
	left := s[len(h) : len(s)-len(t)]
	omitted := strings.Count(left, "\n")
	if !strings.HasSuffix(h, "\n") {
		h += "\n"
	}
	return fmt.Sprintf("%s[… %s (%d bytes) left out …]\n%s", h, text.Count(omitted, "line", "lines"), len(left), t)
}

// cutToTokens is the start (or, with fromEnd, the end) of one long line
// within n tokens, cut on a UTF-8 boundary.
func cutToTokens(c compaction.Counter, l string, n int, fromEnd bool) string {
	if n <= 0 {
		return ""
	}
	k := min(len(l), n*4)
	for range 8 {
		part := l[:k]
		if fromEnd {
			part = l[len(l)-k:]
		}
		got := c.Count(part)
		if got <= n || k == 0 {
			return validUTF8(part, fromEnd)
		}
		k = k * n / got * 9 / 10
	}
	return ""
}

// validUTF8 drops a rune cut in two at the edge of a cut.
func validUTF8(s string, fromEnd bool) string {
	if fromEnd {
		for len(s) > 0 && s[0]&0xC0 == 0x80 {
			s = s[1:]
		}
		return s
	}
	return strings.ToValidUTF8(s, "")
}

// unsafeFileName matches what a call id may not bring into a file name.
var unsafeFileName = lazyregexp.New(`[^A-Za-z0-9_-]+`)

// outputsDir is where a session's saved tool outputs go, relative to the
// workspace root: beside the session file, inside the session directory,
// which the tools never write (R-W2).
func outputsDir(root, sessionDir, sessionID string) (string, bool) {
	rel, err := filepath.Rel(root, sessionDir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return path.Join(filepath.ToSlash(rel), sessionID+".outputs"), true
}

// sizer is the agent's: its counter, its share, and outputs saved beside
// the current session.
func (a *Agent) sizer() sizer {
	sid := ""
	_ = a.do(func(st *state) { sid = st.sessionID })
	return sizer{counter: a.opt.Counter, share: a.tools.share, maxBytes: maxToolResultChars, save: func(callID, raw string) (string, error) {
		return a.saveOutput(sid, callID, raw)
	}}
}

// saveOutput writes a raw tool output beside the session, through the
// workspace's door (R-W1), and returns its path relative to the root.
func (a *Agent) saveOutput(sessionID, callID, raw string) (string, error) {
	if a.opt.Resolver == nil {
		return "", fmt.Errorf("no workspace")
	}
	dir, ok := outputsDir(a.opt.Root, a.opt.SessionDir, sessionID)
	if !ok {
		return "", fmt.Errorf("the session directory is outside the workspace")
	}
	if err := a.opt.Resolver.MkdirAllInside(dir); err != nil {
		return "", err
	}
	name := unsafeFileName.ReplaceAllString(callID, "_")
	if len(name) > 64 {
		name = name[:64]
	}
	// The id of a call may repeat (Ollama numbers its calls per answer):
	// the file takes a fresh suffix.
	rel := path.Join(dir, strings.TrimPrefix(id.Operation(), "op_")+"-"+name+".txt")
	if len(raw) > maxSavedOutput {
		raw = raw[:maxSavedOutput] + fmt.Sprintf("\n[saved output cut at %d bytes of %d]\n", maxSavedOutput, len(raw))
	}
	if err := a.opt.Resolver.WriteFile(rel, []byte(raw), 0o600); err != nil {
		return "", err
	}
	return rel, nil
}
