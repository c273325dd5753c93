package compaction

import (
	"encoding/json"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/internal/lazyregexp"
	"github.com/soba-agent/soba-lsp/internal/text"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/tool"
)

// Bounds that keep a capsule's narrative small. Artifacts are never capped:
// they are exact facts (R-C2).
const (
	maxListItems        = 24
	maxItemChars        = 240
	maxGoalChars        = 600
	maxUserMessageChars = 2000
	// UserMessagesBudget bounds the verbatim user messages kept in a capsule
	// (characters, newest first).
	UserMessagesBudget = 6000
)

// Extras are artifacts known outside the transcript: the editor's documents
// and the file watcher (R-C2), and the skills active now.
type Extras struct {
	FilesRead     []string
	FilesModified []string
	ActiveSkills  []string
}

// constraintWords mark the user's rules in their own words.
var constraintWords = []string{"must", "never", "always", "do not", "don't", "dont", "only", "without", "avoid", "keep",
	"make sure", "should not", "shouldn't", "no more than", "at most", "at least"}

// isConstraint reports whether a sentence states a rule: it holds one of
// constraintWords as a whole word (a plain scan; a regexp was the
// capsule builder's hottest spot).
func isConstraint(s string) bool {
	l := strings.ToLower(s)
	for _, w := range constraintWords {
		for off := 0; ; {
			i := strings.Index(l[off:], w)
			if i < 0 {
				break
			}
			i += off
			end := i + len(w)
			if (i == 0 || !isWordByte(l[i-1])) && (end == len(l) || !isWordByte(l[end])) {
				return true
			}
			off = i + 1
		}
	}
	return false
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c >= 0x80
}

// BuildDeterministic builds the best capsule it can from the entries alone,
// with no model: the goal from the user's messages, work and blockers from
// the turns and failed commands, all artifacts exact. It summarises the path
// entries in [from, to) and rolls the result into prev (R-M4). It is the
// degraded fallback of R-F1 and the base a model summary is merged into.
//
// Its Done holds only work with evidence (workOnly).
func BuildDeterministic(t Transcript, from, to int, prev *capsule.State, extras Extras) (capsule.State, error) {
	st, err := buildDeterministic(t, from, to, prev, extras)
	return workOnly(st), err
}

// buildDeterministic is BuildDeterministic with the "Answered: …" markers
// still in Done, for a Roll that follows (BuildCapsule).
func buildDeterministic(t Transcript, from, to int, prev *capsule.State, extras Extras) (capsule.State, error) {
	if l, ok := t.(LeanTranscript); ok {
		t = l.Lean() // the content it leaves out is read nowhere below
	}
	arts := newArtifactSet()
	calls := map[string]*session.ToolCall{}
	var (
		users       []string // the requests
		said        []string // every user message, commands included
		done        []string
		decisions   []capsule.Decision
		failures    []toolFailureItem
		lastReply   string
		turnPending bool
		turnEdits   int        // arts.edits when the latest request came
		plan        []planItem // the latest todo list or plan the model wrote
	)
	for i := from; i < to; i++ {
		nd := t.Node(i)
		switch nd.Type {
		case session.TypeUser, session.TypeAssistant, session.TypeToolResult, session.TypeCheckpoint:
		case session.TypeCapsule:
			// The kept tail of the capsule being rolled into comes before
			// it: an answer there is older than that capsule's state.
			done = slices.DeleteFunc(done, isEarlier)
			turnEdits = arts.edits
			continue
		default:
			continue
		}
		e, err := loadEntry(t, i)
		if err != nil {
			return capsule.State{}, err
		}
		var words string
		if e.User != nil {
			words = userWords(e.User.Text)
		}
		switch {
		case e.User != nil && words == "":
			// Context only: an editor's selection, an interrupt marker,
			// another agent's command output (R-C8).
		case e.User != nil && isAgentCommand(words):
			// A command to the agent itself (`/model`, `/theme`), recorded by
			// another agent: the user's words, not a request for the work.
			said = append(said, words)
		case e.User != nil:
			said = append(said, words)
			if turnPending && len(users) > 0 && !isChatter(users[len(users)-1]) {
				done = appendTurn(done, users[len(users)-1], arts.edits-turnEdits)
			}
			users = append(users, words)
			turnPending = true
			turnEdits = arts.edits
			// A tool failure of an earlier turn was followed by more
			// work and a new request: history, not a blocker (R-C8).
			failures = failures[:0]
		case e.Assistant != nil:
			for j := range e.Assistant.ToolCalls {
				c := &e.Assistant.ToolCalls[j]
				calls[c.ID] = c
				if items, ok := planOf(c.Name, c.Arguments); ok {
					plan = items
				}
			}
			if e.Assistant.Text != "" {
				lastReply = e.Assistant.Text
			}
			if len(e.Assistant.ToolCalls) == 0 && e.Assistant.Error == "" && len(users) > 0 && turnPending {
				if !isChatter(users[len(users)-1]) {
					done = appendTurn(done, users[len(users)-1], arts.edits-turnEdits)
				}
				turnPending = false
			}
			if len(e.Assistant.ToolCalls) == 0 && e.Assistant.Error == "" && len(users) == 0 && from > 0 && !slices.ContainsFunc(done, isEarlier) {
				// The final answer to a request made before this range
				// (there is none before the session's start): a roll
				// names that request (R-M4).
				if arts.edits > turnEdits {
					done = append(done, workedEarlier)
				} else {
					done = append(done, answeredEarlier)
				}
			}
		case e.ToolResult != nil:
			r := e.ToolResult
			call := calls[r.ToolCallID]
			arts.addResult(r, call)
			target := callPath(r, call)
			switch {
			case !r.OK && isDenial(r.Content):
				// The user's decision, not a failure (R-C6).
				d := "The user denied `" + r.ToolName + "`"
				if target != "" {
					d += " on `" + target + "`"
				} else if cmd := callCommand(call); cmd != "" {
					d += ": `" + text.Clip(cmd, maxItemChars) + "`"
				}
				decisions = append(decisions, capsule.Decision{Decision: d, Rationale: "denied in the approval prompt; not done"})
			case r.ToolName == tool.Bash, r.Artifacts != nil && r.Artifacts.Command != "":
				// A command: its outcome is in Verification or, when it
				// is consequential, in Blockers (R-C5).
			case !r.OK:
				failures = append(failures, toolFailureItem{text: "`" + r.ToolName + "` failed: " + firstLine(r.Content, maxItemChars), tool: r.ToolName, path: target})
			case target != "":
				// A later success on the same file resolves its failures.
				failures = slices.DeleteFunc(failures, func(f toolFailureItem) bool {
					return f.path != "" && (f.path == target || strings.HasPrefix(target, strings.TrimSuffix(f.path, "/")+"/"))
				})
			}
		case e.Checkpoint != nil:
			ck := e.Checkpoint
			switch ck.Kind {
			case TriggerMilestone:
				done = append(done, "Milestone: "+text.Clip(ck.Note, maxItemChars))
			case TriggerPlanPivot:
				decisions = append(decisions, capsule.Decision{Decision: "Plan pivot: " + text.Clip(ck.Note, maxItemChars), Rationale: "recorded as a plan-pivot checkpoint"})
			}
		}
	}
	for _, p := range extras.FilesRead {
		arts.addRead(p)
	}
	for _, p := range extras.FilesModified {
		arts.addModified(p)
	}
	for _, s := range extras.ActiveSkills {
		arts.addSkill(s)
	}

	var st capsule.State
	st.Goal = goalOf(users)
	st.Constraints = constraintsFrom(users)
	st.Done = lastN(done, maxListItems)
	latest := latestRequest(users)
	if latest != "" {
		st.InProgress = []string{"Latest request: " + latest}
	}
	// The final plan state (TodoWrite, update_plan, todowrite) says what
	// was under way, what was left and what was finished.
	var planDone []string
	for _, it := range plan {
		switch it.status {
		case "in_progress", "in-progress", "active":
			st.InProgress = append(st.InProgress, text.Clip(it.text, maxItemChars))
		case "pending", "todo", "not_started":
			st.Pending = append(st.Pending, text.Clip(it.text, maxItemChars))
		case "completed", "done":
			// The model's own record of what it finished: a roll drops
			// the item from what was open (R-C8).
			planDone = append(planDone, planDoneItem+text.Clip(it.text, maxItemChars))
		}
	}
	st.Done = append(st.Done, lastN(planDone, maxListItems)...)
	if lastReply != "" {
		st.Notes = append(st.Notes, lastReplyNote+text.Clip(strings.TrimSpace(lastReply), maxLastReplyChars))
	}
	st.Decisions = decisions
	verification := arts.checks.list()
	for _, v := range verification {
		if !conclusive(v) {
			continue // inconclusive or interrupted: it says nothing (R-C5)
		}
		switch v.Outcome {
		case OutcomeFailedCmd:
			st.Blockers = append(st.Blockers, "`"+v.Command+"` fails")
			st.NextSteps = append(st.NextSteps, "Make `"+v.Command+"` pass")
		case OutcomePassed:
			if n := arts.checks.editsSince(v.Command, arts.edits); n > 0 {
				// Not "passes": the work changed since (R-C5 stale).
				st.Done = append(st.Done, "`"+v.Command+"` passed before "+plural(n, "later edit"))
			} else {
				st.Done = append(st.Done, "`"+v.Command+"` passes")
			}
		}
	}
	st.Notes = append(st.Notes, arts.checks.notes(arts.edits)...)
	for _, cmd := range arts.checks.unsure() {
		st.NextSteps = append(st.NextSteps, "Run `"+cmd+"` with its own exit status: it failed, and later runs hid theirs")
	}
	outcome := map[string]string{}
	for _, v := range verification {
		outcome[v.Command] = v.Outcome
	}
	for _, c := range arts.chains {
		if !c.failed {
			continue
		}
		// Resolved once each check of the chain passed on its own since;
		// a blocker only while the chain's failure is the latest word on
		// one of them (later runs with hidden status make it unknown, and
		// the check's next step says so).
		open := false
		for _, g := range checkGroups(parsedLine(c.display), false) {
			if outcome[g.display] != OutcomePassed && arts.checks.latestIsChainFailure(g.display) {
				open = true
			}
		}
		if open {
			st.Blockers = append(st.Blockers, "`"+text.Clip(c.display, maxItemChars)+"` failed (exit "+strconv.Itoa(c.exit)+"); which of its checks failed, the status does not say")
		}
	}
	for _, c := range arts.consequential {
		if c.failed {
			b := "`" + text.Clip(c.display, maxItemChars) + "` failed (exit " + strconv.Itoa(c.exit) + ")"
			if c.step != "" {
				b += " in its `" + c.step + "` step"
			}
			if c.line != "" {
				b += ": " + text.Clip(c.line, maxItemChars)
			}
			st.Blockers = append(st.Blockers, b)
		}
	}
	for _, f := range lastNItems(failures, 5) {
		st.Blockers = append(st.Blockers, f.text)
	}
	if latest != "" && turnPending {
		st.NextSteps = append(st.NextSteps, continueWith+latest)
	}
	st.FilesRead = foldPaths(arts.read, MaxFileItems)
	st.FilesModified = foldPaths(arts.modified, MaxFileItems)
	st.Verification = verification
	st.ActiveSkills = arts.skills
	st.UserMessages = boundUserMessages(reversed(said), UserMessagesBudget)
	if prev != nil {
		return rollKeepingGoal(*prev, st), nil
	}
	return st, nil
}

// appendTurn adds the item of a finished turn. Done holds work with
// evidence (files changed, checks passed, a checkpoint): a turn that changed
// files is "Worked on: …"; a request the assistant only answered is an
// "Answered: …" marker, which tells a roll how many requests came since
// (R-M4) and which workOnly removes before the capsule is written — the
// request stays in User messages.
func appendTurn(done []string, request string, edits int) []string {
	if edits <= 0 {
		return append(done, answered+firstLine(request, maxItemChars))
	}
	return append(done, workedOn+firstLine(request, maxItemChars)+" ("+plural(edits, "file change")+")")
}

// workOnly drops the "Answered: …" items from Done: markers of turns
// without evidence of work, and such items of capsules written before
// Done held only work with evidence.
func workOnly(st capsule.State) capsule.State {
	if slices.ContainsFunc(st.Done, isAnswered) {
		st.Done = slices.DeleteFunc(slices.Clone(st.Done), isAnswered)
	}
	return st
}

func isEarlier(d string) bool { return d == answeredEarlier || d == workedEarlier }

func isAnswered(d string) bool { return strings.HasPrefix(d, answered) }

// planItem is one entry of a todo list or plan the model wrote.
type planItem struct{ text, status string }

// planOf reads a call of a todo or plan tool — Claude Code's TodoWrite and
// opencode's todowrite ({"todos": [{"content", "status"}]}), Codex's
// update_plan ({"plan": [{"step", "status"}]}) — as the list it sets.
func planOf(name string, args json.RawMessage) ([]planItem, bool) {
	switch strings.ToLower(name) {
	case "todowrite", "update_plan", "todo_write":
	default:
		return nil, false
	}
	var a struct {
		Todos []struct{ Content, Status string } `json:"todos"`
		Plan  []struct{ Step, Status string }    `json:"plan"`
	}
	if json.Unmarshal(args, &a) != nil {
		return nil, false
	}
	var out []planItem
	for _, t := range a.Todos {
		out = append(out, planItem{strings.TrimSpace(t.Content), t.Status})
	}
	for _, p := range a.Plan {
		out = append(out, planItem{strings.TrimSpace(p.Step), p.Status})
	}
	return out, true
}

// goalOf is what the user asked for overall (R-C8): the first request
// without its leading reading steps ("read X in full, then Y. we still need
// to port Z" is about Z), amended by later requests that add to it ("also
// …", "now …").
func goalOf(users []string) string {
	if len(users) == 0 {
		return ""
	}
	goal := strings.TrimSpace(users[0])
	ss := sentences(goal)
	if len(ss) > 1 && len(goal) <= 4*maxGoalChars {
		i := 0
		for i < len(ss)-1 && isReadingStep(ss[i]) {
			i++
		}
		if i > 0 {
			goal = strings.Join(ss[i:], " ")
		}
	}
	for _, u := range users[1:] {
		t := strings.TrimSpace(u)
		for _, p := range []string{"and also, ", "and also ", "also, ", "also ", "now, ", "now "} {
			if len(t) > len(p) && strings.EqualFold(t[:len(p)], p) {
				goal += " Also: " + firstLine(t[len(p):], maxItemChars)
				break
			}
		}
	}
	return text.Clip(goal, maxGoalChars)
}

// isReadingStep reports whether a sentence only asks to read or look at
// something first.
func isReadingStep(s string) bool {
	l := strings.ToLower(strings.TrimSpace(s))
	for _, p := range []string{"read ", "look at ", "have a look at ", "check out ", "open ", "study ", "familiarize ", "review the "} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// maxLastReplyChars bounds the model's last reply kept in the notes: whole
// up to this size, so a list it announced is not cut after its first line.
const maxLastReplyChars = 600

// toolFailureItem is a failed tool call that may be a blocker: its text,
// the tool and the file it was about.
type toolFailureItem struct {
	text, tool, path string
}

func lastNItems[T any](xs []T, n int) []T {
	if len(xs) > n {
		return xs[len(xs)-n:]
	}
	return xs
}

// callPath is the file a file tool's call was about: from its recorded
// artifacts, else its arguments.
func callPath(r *session.ToolResult, call *session.ToolCall) string {
	if a := r.Artifacts; a != nil {
		if len(a.FilesModified) > 0 {
			return a.FilesModified[0]
		}
		if len(a.FilesRead) > 0 {
			return a.FilesRead[0]
		}
	}
	if call == nil {
		return ""
	}
	var args toolArgs
	_ = json.Unmarshal(call.Arguments, &args)
	return args.Path
}

// callCommand is the command line of a shell call, or "".
func callCommand(call *session.ToolCall) string {
	if call == nil {
		return ""
	}
	var args struct {
		Command string `json:"command"`
	}
	_ = json.Unmarshal(call.Arguments, &args)
	return strings.TrimSpace(args.Command)
}

// isDenial reports whether a tool result is the user's refusal of the call
// in the approval prompt.
func isDenial(content string) bool { return IsDenial(content) }

// denialTexts open the result other agents record for a call the user
// refused: Claude Code, Codex (a command, a patch), opencode (asked, or
// refused by a rule the user set).
var denialTexts = []string{
	"The user doesn't want to proceed with this tool use",
	"exec command rejected by user",
	"patch rejected by user",
	"The user rejected permission to use this specific tool call",
	"The user has specified a rule which prevents you from using this specific tool call",
}

// IsDenial reports whether a tool result is the user's refusal of the call,
// as SOBA ("denied: …") or another agent records it: the user's decision,
// not a failure, and nothing ran (R-C6).
func IsDenial(content string) bool {
	t := strings.TrimSpace(content)
	if strings.HasPrefix(t, "denied: ") {
		return true
	}
	for _, d := range denialTexts {
		if strings.HasPrefix(t, d) {
			return true
		}
	}
	return false
}

// isChatter reports whether a user message is an acknowledgement or an
// aside ("ok", "wow", "yes please") rather than a request: one line of at
// most two words. It stays among the user's words but is not a piece of
// work, and it does not replace the request it answers as the latest one.
func isChatter(text string) bool {
	t := strings.TrimSpace(text)
	return len(t) <= 20 && !strings.Contains(t, "\n") && len(strings.Fields(t)) <= 2
}

// latestRequest describes the newest request: the last user message that is
// not chatter, followed by the chatter that came after it ("ok" after a
// proposal means: go ahead with it).
func latestRequest(users []string) string {
	i := len(users) - 1
	for i >= 0 && isChatter(users[i]) {
		i--
	}
	switch {
	case len(users) == 0:
		return ""
	case i < 0:
		return firstLine(users[len(users)-1], maxItemChars)
	case i == len(users)-1:
		return firstLine(users[i], maxItemChars)
	}
	var then []string
	for _, u := range users[i+1:] {
		then = append(then, quoted(u))
	}
	return firstLine(users[i], maxItemChars) + " (then: " + strings.Join(then, ", ") + ")"
}

// quoted quotes a short user message for latestRequest.
func quoted(s string) string { return `"` + strings.TrimSpace(s) + `"` }

// isAgentCommand reports whether a user message is a command to an agent
// rather than a request: one short line that is a slash word with at most a
// few arguments (`/model gpt-4o`, `/theme`), as other agents record them.
// Paths (`/usr/bin is missing`) are not: the word has no further slash.
func isAgentCommand(text string) bool {
	t := strings.TrimSpace(text)
	if len(t) > 40 || strings.ContainsAny(t, "\n") {
		return false
	}
	if !agentCommand.MatchString(t) {
		return false
	}
	// A command that asks for work (/review URL, a project's own command)
	// is a request: only the agents' own commands are not.
	name, _, _ := strings.Cut(t[1:], " ")
	return harnessCommands[name]
}

var agentCommand = lazyregexp.New(`^/[a-z][a-z0-9-]*(\s+\S+){0,2}$`)

// rollKeepingGoal rolls a capsule built without a model into prev: the
// deterministic goal is only the range's first request, so the goal that
// the session already had stays.
func rollKeepingGoal(prev, next capsule.State) capsule.State {
	if prev.Goal != "" {
		next.Goal = ""
	}
	return Roll(prev, next)
}

// Roll merges the previous capsule's portable state with what happened
// since (R-M4): nothing the previous one held is silently dropped — files,
// decisions, constraints and verification runs carry over; a blocker
// survives unless it is resolved (listed as done, or its command now
// passes); the newer goal, in-progress work and next steps win when set.
func Roll(prev, next capsule.State) capsule.State {
	out := capsule.State{
		Goal:        firstNonEmpty(next.Goal, prev.Goal),
		Constraints: lastN(dedupeFold(union(prev.Constraints, next.Constraints)), maxListItems),
		Done:        lastN(keepRecentTurns(union(prev.Done, next.Done), maxTurnItems), 2*maxListItems),
		InProgress:  orElse(next.InProgress, stillOpen(prev.InProgress, next)),
		Notes:       boundNotes(union(notesBefore(prev.Notes, next.Notes), next.Notes), maxNotes),
	}
	// The request under way at prev's cut: answered in next, or replaced by
	// next's own request, its "Continue with" is no longer a step.
	prevNext := stillOpen(prev.NextSteps, next)
	if i := slices.IndexFunc(next.Done, isEarlier); i >= 0 {
		for _, s := range prevNext {
			if req, ok := strings.CutPrefix(s, continueWith); ok {
				next.Done = slices.Clone(next.Done)
				prefix := answered
				if next.Done[i] == workedEarlier {
					prefix = workedOn
				}
				next.Done[i] = prefix + req
				out.Done = lastN(keepRecentTurns(union(prev.Done, next.Done), maxTurnItems), 2*maxListItems)
				break
			}
		}
	}
	if slices.ContainsFunc(next.Done, isEarlier) || slices.ContainsFunc(next.Done, isTurnItem) ||
		slices.ContainsFunc(next.NextSteps, func(s string) bool { return strings.HasPrefix(s, continueWith) }) {
		prevNext = slices.DeleteFunc(prevNext, func(s string) bool { return strings.HasPrefix(s, continueWith) })
	}
	if slices.ContainsFunc(next.Done, isEarlier) {
		// The turn under way at prev's cut ended with its answer: its steps
		// and its work in progress are history. A step about a check stays
		// until the check passes (its blocker stays too).
		prevNext = slices.DeleteFunc(prevNext, func(s string) bool { return !namesCheck(s) })
		out.InProgress = orElse(next.InProgress, slices.DeleteFunc(stillOpen(prev.InProgress, next), func(s string) bool { return !namesCheck(s) }))
	}
	out.Done = slices.DeleteFunc(out.Done, isEarlier)
	if turns := countFunc(next.Done, isTurnItem); turns >= laterRequests {
		// The user has moved on through several requests since prev: its
		// steps are not confirmed open any more. They are kept as one note,
		// not as steps (nothing dropped without saying, R-C7); a step about
		// a check stays until the check passes.
		var earlier []string
		prevNext = slices.DeleteFunc(prevNext, func(s string) bool {
			if namesCheck(s) {
				return false
			}
			earlier = append(earlier, s)
			return true
		})
		if len(earlier) > 0 {
			out.Notes = append(out.Notes, text.Clip(earlierSteps+"("+plural(turns, "later request")+" since): "+strings.Join(earlier, "; "), 2*maxItemChars))
		}
	}
	out.NextSteps = lastN(union(prevNext, next.NextSteps), maxListItems)
	doneSet := setOf(out.Done)
	for _, d := range next.Done {
		doneSet[d] = true
	}
	// An item is done when Done holds it, as it is or marked done in the
	// model's plan.
	isDone := func(s string) bool { return doneSet[s] || doneSet[planDoneItem+s] }
	out.Pending = slices.DeleteFunc(union(stillOpen(prev.Pending, next), next.Pending), isDone)
	out.InProgress = slices.DeleteFunc(out.InProgress, isDone)
	out.Decisions = slices.Clone(prev.Decisions)
	for _, d := range next.Decisions {
		if !slices.ContainsFunc(out.Decisions, func(x capsule.Decision) bool { return x.Decision == d.Decision }) {
			out.Decisions = append(out.Decisions, d)
		}
	}
	// Verification: one line per check with its latest outcome.
	var runs checkRuns
	for _, v := range prev.Verification {
		runs.add(v)
	}
	// A check that failed in next and then ran only with its status
	// hidden is unknown, whatever prev said (its note says so).
	unsure := map[string]bool{}
	for _, n := range next.Notes {
		if rest, ok := strings.CutPrefix(n, verificationNote+"`"); ok && strings.Contains(n, "then ran") {
			if cmd, _, ok := strings.Cut(rest, "`"); ok {
				unsure[cmd] = true
			}
		}
	}
	for _, v := range next.Verification {
		if unsure[v.Command] {
			runs.replace(v)
			continue
		}
		runs.add(v)
	}
	out.Verification = runs.list()
	out.Notes = verificationNotes(out.Notes, prev, next, out.Verification)
	passing := map[string]bool{} // checks whose latest conclusive run passed
	for _, v := range out.Verification {
		if v.Outcome == OutcomePassed && conclusive(v) {
			check, _ := CheckOf(v.Command)
			passing[check] = true
		}
	}
	// An item about a check (its command in the first code span: "`X`
	// fails", "Make `X` pass") is resolved once the check passes.
	resolved := func(item string) bool {
		_, rest, ok := strings.Cut(item, "`")
		if !ok {
			return false
		}
		cmd, _, ok := strings.Cut(rest, "`")
		if !ok {
			return false
		}
		check, _ := CheckOf(cmd)
		return passing[check]
	}
	// A tool that failed before the previous capsule was followed by more
	// work: it is history, not a current blocker.
	prevBlockers := slices.DeleteFunc(slices.Clone(prev.Blockers), func(s string) bool { return toolFailure.MatchString(s) })
	out.Blockers = slices.DeleteFunc(union(prevBlockers, next.Blockers), func(s string) bool { return isDone(s) || resolved(s) })
	out.NextSteps = slices.DeleteFunc(out.NextSteps, resolved)
	// "`X` passes" holds only while X's rolled outcome is a pass and no
	// newer item says it passed before later edits (R-C5).
	stale := map[string]bool{}
	for _, d := range next.Done {
		if sp := codeSpans(d); len(sp) > 0 && strings.Contains(d, "` passed before ") {
			stale[sp[0]] = true
		}
	}
	// A pass carried from prev that the roll's notes call stale (next
	// changed files) is not said to pass either; Done says it passed
	// before those changes.
	staleNote := map[string]bool{}
	for _, n := range out.Notes {
		if rest, ok := strings.CutPrefix(n, verificationNote+"`"); ok {
			if cmd, tail, ok := strings.Cut(rest, "`"); ok && strings.HasPrefix(tail, " is stale") {
				staleNote[cmd] = true
			}
		}
	}
	rolledOutcome := map[string]string{}
	for _, v := range out.Verification {
		rolledOutcome[v.Command] = v.Outcome
	}
	var passedBefore []string
	out.Done = slices.DeleteFunc(out.Done, func(d string) bool {
		if cmd, _, ok := strings.Cut(strings.TrimPrefix(d, "`"), "` passed before "); ok && strings.HasPrefix(d, "`") {
			// A pass from before later edits, carried from an older
			// capsule: gone once a later run of the check says otherwise.
			o, known := rolledOutcome[cmd]
			return known && o != OutcomePassed
		}
		cmd, ok := strings.CutSuffix(strings.TrimPrefix(d, "`"), "` passes")
		if !ok || !strings.HasPrefix(d, "`") {
			return false
		}
		o, known := rolledOutcome[cmd]
		if !stale[cmd] && staleNote[cmd] && (!known || o == OutcomePassed) {
			passedBefore = append(passedBefore, "`"+cmd+"` passed before later changes")
			return true
		}
		return stale[cmd] || known && o != OutcomePassed
	})
	out.Done = append(out.Done, passedBefore...)
	out.InProgress = slices.DeleteFunc(out.InProgress, resolved)
	out.FilesRead = foldPaths(union(prev.FilesRead, next.FilesRead), MaxFileItems)
	out.FilesModified = foldPaths(replayModified(prev.FilesModified, next.FilesModified), MaxFileItems)
	out.ActiveSkills = union(prev.ActiveSkills, next.ActiveSkills)
	out.UserMessages = boundUserMessages(union(next.UserMessages, prev.UserMessages), UserMessagesBudget)
	return out
}

// replayModified is prev's files modified followed by next's, a deletion in
// next replacing the file's earlier entry and a write after a deletion
// replacing the deletion (R-C6).
func replayModified(prev, next []string) []string {
	a := newArtifactSet()
	for _, p := range prev {
		a.addModified(p)
	}
	for _, p := range next {
		a.addModified(p)
	}
	return a.modified
}

// maxNotes bounds the notes a rolled capsule keeps; the oldest beyond it
// are counted, not silently dropped (R-C7).
const maxNotes = 40

// moreNotes starts the note that counts the notes left out.
const moreNotes = "… "

// boundNotes keeps the first and the newest notes within max, with one note
// saying how many between them are left to the transcript: the first notes
// of a session carry its layout and branch, the newest what happened last.
func boundNotes(notes []string, max int) []string {
	left := 0 // notes an earlier roll left to the transcript
	notes = slices.DeleteFunc(slices.Clone(notes), func(n string) bool {
		num, ok := strings.CutSuffix(strings.TrimPrefix(n, moreNotes), " more notes are in the transcript")
		if !ok || !strings.HasPrefix(n, moreNotes) {
			return false
		}
		if k, err := strconv.Atoi(num); err == nil {
			left += k
		}
		return true
	})
	if len(notes)+min(left, 1) <= max {
		if left == 0 {
			return notes
		}
		head := min(max/4, len(notes))
		out := slices.Clone(notes[:head])
		out = append(out, moreNotes+strconv.Itoa(left)+" more notes are in the transcript")
		return append(out, notes[head:]...)
	}
	head := max / 4
	tail := max - head - 1
	out := slices.Clone(notes[:head])
	out = append(out, moreNotes+strconv.Itoa(left+len(notes)-head-tail)+" more notes are in the transcript")
	return append(out, notes[len(notes)-tail:]...)
}

// stillOpen is prev's in-progress or next-step items that what happened
// since did not resolve (R-C8): an item about a check that has run since, or
// whose files (its code spans that name paths) have all been changed since,
// is done.
func stillOpen(items []string, next capsule.State) []string {
	if len(items) == 0 {
		return nil
	}
	ran := map[string]bool{}
	for _, v := range next.Verification {
		check, _ := CheckOf(v.Command)
		ran[check] = true
	}
	// The files next changed, each side of a rename and a deleted file by
	// its path; a folded directory by its directory.
	var files []string
	for _, f := range next.FilesModified {
		f = strings.TrimSuffix(f, DeletedSuffix)
		if dir, _, ok := parseFolded(f); ok {
			f = dir
		}
		if from, to, ok := strings.Cut(f, RenameSep); ok {
			files = append(files, from, to)
			continue
		}
		files = append(files, f)
	}
	changed := func(p string) bool {
		p = strings.TrimPrefix(p, "./")
		dir := "/" + strings.TrimSuffix(p, "/") + "/"
		for _, f := range files {
			// The file itself, under any prefix, or a file under the
			// directory it names, wherever that directory is.
			if f == p || strings.HasSuffix(f, "/"+p) || strings.Contains("/"+f, dir) {
				return true
			}
		}
		return false
	}
	return slices.DeleteFunc(slices.Clone(items), func(item string) bool {
		spans := codeSpans(item)
		paths, allChanged := 0, true
		for _, sp := range spans {
			if check, _ := CheckOf(sp); IsVerificationCommand(sp) && ran[check] {
				return true
			}
			if strings.ContainsAny(sp, "/.") && !strings.ContainsAny(sp, " \t") {
				paths++
				allChanged = allChanged && changed(sp)
			}
		}
		for _, w := range pathWords(item) {
			paths++
			allChanged = allChanged && changed(w)
		}
		return paths > 0 && allChanged
	})
}

// laterRequests is the number of requests worked on since a capsule after
// which its remaining next steps are no longer taken as open.
const laterRequests = 3

// earlierSteps starts the note that keeps such steps.
const earlierSteps = "Next steps of an earlier capsule, not confirmed "

func countFunc[T any](xs []T, f func(T) bool) int {
	n := 0
	for _, x := range xs {
		if f(x) {
			n++
		}
	}
	return n
}

// namesCheck reports whether an item names a check in a code span ("Make
// `go test ./...` pass").
func namesCheck(item string) bool {
	return slices.ContainsFunc(codeSpans(item), IsVerificationCommand)
}

// pathWords are the words of an item that name a path outside code spans
// ("Create directories src/core and src/modes"): a slash inside, no URL.
func pathWords(item string) []string {
	var out []string
	for _, w := range strings.Fields(item) {
		w = strings.Trim(w, ",.;:()[]\"'*")
		if strings.Count(w, "/") > 0 && !strings.Contains(w, "://") && !strings.Contains(w, "`") && len(w) > 2 && !strings.HasPrefix(w, "/") {
			out = append(out, w)
		}
	}
	return out
}

// codeSpans returns the `code spans` of a Markdown line.
func codeSpans(s string) []string {
	var out []string
	for {
		_, rest, ok := strings.Cut(s, "`")
		if !ok {
			return out
		}
		span, after, ok := strings.Cut(rest, "`")
		if !ok {
			return out
		}
		out = append(out, span)
		s = after
	}
}

// verificationNotes keeps the notes about checks true after a roll: a note
// about a run whose status was unknown goes when the rolled outcome of its
// check is conclusive, and a pass carried from prev while next changed
// files is said to be stale (R-C5).
func verificationNotes(notes []string, prev, next capsule.State, rolled []capsule.Verification) []string {
	outcome := map[string]string{}
	for _, v := range rolled {
		check, _ := CheckOf(v.Command)
		outcome[check] = v.Outcome
	}
	// The newest note about a check replaces older ones.
	seen := map[string]bool{}
	for i := len(notes) - 1; i >= 0; i-- {
		rest, ok := strings.CutPrefix(notes[i], verificationNote+"`")
		if !ok {
			continue
		}
		cmd, _, _ := strings.Cut(rest, "`")
		if seen[cmd] {
			notes = slices.Delete(slices.Clone(notes), i, i+1)
			continue
		}
		seen[cmd] = true
	}
	out := slices.DeleteFunc(slices.Clone(notes), func(n string) bool {
		rest, ok := strings.CutPrefix(n, verificationNote+"`")
		if !ok {
			return false
		}
		cmd, why, ok := strings.Cut(rest, "`")
		if !ok {
			return false
		}
		check, _ := CheckOf(cmd)
		o := outcome[check]
		return strings.Contains(why, "status is unknown") && (o == OutcomePassed || o == OutcomeFailedCmd)
	})
	if len(next.FilesModified) == 0 {
		return out
	}
	ranNext := map[string]bool{}
	for _, v := range next.Verification {
		if conclusive(v) {
			check, _ := CheckOf(v.Command)
			ranNext[check] = true
		}
	}
	for _, v := range prev.Verification {
		check, _ := CheckOf(v.Command)
		if v.Outcome == OutcomePassed && !ranNext[check] && outcome[check] == OutcomePassed {
			n := verificationNote + "`" + v.Command + "` is stale: passed before later changes to " + plural(len(next.FilesModified), "file")
			if !slices.ContainsFunc(out, func(x string) bool { return strings.HasPrefix(x, verificationNote+"`"+v.Command+"` is stale") }) {
				out = append(out, n)
			}
		}
	}
	return out
}

// The Done items BuildDeterministic writes for a turn: the request, as the
// user put it, of a turn that changed files.
const (
	workedOn = "Worked on: "
	// answered marks a request the assistant answered without changing a
	// file; workOnly drops it (a reply is not work done).
	answered = "Answered: "
	// answeredEarlier marks a final answer to a request made before the
	// range: it tells a roll the turn under way at the previous cut ended,
	// and never stays in Done.
	answeredEarlier = answered + "the request made before this part of the session"
	// workedEarlier is answeredEarlier for a turn that changed files in
	// the range before its answer: a roll names the request as worked on.
	workedEarlier = workedOn + "the request made before this part of the session"
	// planDoneItem starts the Done item of a plan step the model marked
	// completed.
	planDoneItem = "Marked done in the plan: "
	// continueWith starts the next step of a request still under way.
	continueWith = "Continue with: "
)

// maxTurnItems bounds the turn items a rolled capsule keeps: they record
// what was asked, not what holds now, and a long session would otherwise
// fill Done with old questions at the expense of milestones and checks.
const maxTurnItems = 12

// keepRecentTurns drops all but the newest max turn items from done,
// keeping every other item in order.
func keepRecentTurns(done []string, max int) []string {
	turns := 0
	for _, d := range done {
		if isTurnItem(d) {
			turns++
		}
	}
	if turns <= max {
		return done
	}
	out := make([]string, 0, len(done)-(turns-max))
	for _, d := range done {
		if isTurnItem(d) && turns > max {
			turns--
			continue
		}
		out = append(out, d)
	}
	return out
}

func isTurnItem(d string) bool {
	return strings.HasPrefix(d, workedOn) || strings.HasPrefix(d, answered)
}

// toolFailure matches the blockers BuildDeterministic writes for a failed
// tool call ("`edit_file` failed: …"), and not a summary's own ("build
// failed: …").
var toolFailure = lazyregexp.New("^`[^`]+` failed: ")

// lastReplyNote starts the note BuildDeterministic writes about the
// model's last reply.
const lastReplyNote = "Last reply: "

// notesBefore is prev's notes that still hold next to next's: a newer
// "Last reply" replaces the older one.
func notesBefore(prev, next []string) []string {
	if !slices.ContainsFunc(next, func(n string) bool { return strings.HasPrefix(n, lastReplyNote) }) {
		return prev
	}
	return slices.DeleteFunc(slices.Clone(prev), func(n string) bool { return strings.HasPrefix(n, lastReplyNote) })
}

func constraintsFrom(users []string) []string {
	// Each message is read alone, so a long history is split into one run
	// of messages a core and the runs' findings joined in order: the same
	// list, sooner (every request of the range is read: dedupeFold keeps
	// first occurrences, so the newest items depend on the oldest).
	parts := 1
	if len(users) >= parallelConstraintsFrom {
		parts = runtime.GOMAXPROCS(0)
	}
	found := make([][]string, parts)
	var wg sync.WaitGroup
	for k := range parts {
		run := users[k*len(users)/parts : (k+1)*len(users)/parts]
		wg.Go(func() {
			for _, u := range run {
				for _, s := range sentences(ownWords(u)) {
					if s = leadingAside.ReplaceAllString(s, ""); isConstraint(s) && !hasOpaqueID(s) && !isQuestionOrComplaint(s) {
						s = strings.TrimRight(s, ".")
						found[k] = append(found[k], text.Clip(s, maxItemChars))
					}
				}
			}
		})
	}
	wg.Wait()
	return lastN(dedupeFold(slices.Concat(found...)), maxListItems/2)
}

// parallelConstraintsFrom is the number of requests from which
// constraintsFrom reads on all cores.
const parallelConstraintsFrom = 256

// isTerminalCopy reports whether a message's lines are a copy of a
// terminal's screen rather than typed: most of at least four lines padded
// with trailing blanks to the terminal's width, or carrying a diff's line
// gutter ("+ 12 ", "- 3 ").
func isTerminalCopy(lines []string) bool {
	if len(lines) < 4 {
		return false
	}
	copied := 0
	for _, l := range lines {
		if strings.HasSuffix(l, "   ") || diffGutter.MatchString(l) {
			copied++
		}
	}
	return copied*2 > len(lines)
}

// pointsAtPaste reports whether a message's introduction points at what
// follows it ("fix this", "see the review", "…, right") rather than
// heading the user's own text ("Goal", "Note").
func pointsAtPaste(intro string) bool {
	l := strings.ToLower(strings.TrimSpace(intro))
	if strings.Contains(" "+l+" ", " this ") || strings.HasSuffix(l, " this") {
		return true
	}
	for _, w := range []string{"right", "here", "following", "says", "said", "comment", "review", "error", "output", "log"} {
		if strings.HasSuffix(l, w) {
			return true
		}
	}
	return false
}

// reviewSeverity is the severity line of a code-review bot's comment.
var reviewSeverity = lazyregexp.New(`^\s*(Low|Medium|High|Critical) Severity\s*$`)

var diffGutter = lazyregexp.New(`^\s*[+-]\s+\d+\b`)

// ownWords is a user message without what it pastes: fenced code blocks and
// quoted lines. A rule is in the user's words; "must" in a pasted error or
// log line is not one.
func ownWords(msg string) string {
	msg = withoutPaste(msg)
	if !strings.Contains(msg, "```") && !strings.Contains(msg, "\n>") && !strings.HasPrefix(msg, ">") {
		return msg
	}
	var b strings.Builder
	fenced := false
	for _, line := range strings.Split(msg, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "```"):
			fenced = !fenced
		case fenced, strings.HasPrefix(t, ">"):
		default:
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// minPasteChars is the size from which text after an introducing line is
// taken as pasted.
const minPasteChars = 200

// withoutPaste is a message without what it pastes (R-C8): the text after an
// introducing line that ends with ":" and a blank line ("fix this:\n\n<a
// review comment>"), and a pasted document — everything from its first
// Markdown heading when it has two or more.
func withoutPaste(msg string) string {
	lines := strings.Split(msg, "\n")
	if isTerminalCopy(lines) || slices.ContainsFunc(lines, func(l string) bool { return reviewSeverity.MatchString(l) }) {
		// A screen copy, or a code-review bot's comment ("Medium
		// Severity" on a line of its own): not typed by the user.
		return ""
	}
	// "I think this was just fixed, right: <a pasted comment>": a short
	// introduction ending in a colon, then the pasted text on the same line.
	if intro, rest, ok := strings.Cut(lines[0], ": "); ok && len(intro) <= 60 && pointsAtPaste(intro) &&
		len(rest)+len(strings.Join(lines[1:], "\n")) >= minPasteChars {
		return intro + ":"
	}
	for i := 0; i < len(lines)-2 && i < 3; i++ {
		if strings.HasSuffix(strings.TrimSpace(lines[i]), ":") && strings.TrimSpace(lines[i+1]) == "" &&
			len(strings.Join(lines[i+2:], "\n")) >= minPasteChars {
			return strings.Join(lines[:i+1], "\n")
		}
	}
	first, headings := -1, 0
	for i, l := range lines {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "#") && strings.HasPrefix(strings.TrimLeft(t, "#"), " ") {
			headings++
			if first < 0 {
				first = i
			}
		}
	}
	if headings >= 2 {
		return strings.Join(lines[:first], "\n")
	}
	return msg
}

// hasOpaqueID reports whether s holds a machine identifier (20 or more
// letters, digits and _- with both letters and digits, such as
// toolu_019tYDrbzifrra2KYzmYqWvk): the mark of a pasted error message.
func hasOpaqueID(s string) bool {
	run, letters, digits := 0, false, false
	for i := 0; i <= len(s); i++ {
		if i < len(s) {
			c := s[i]
			isL, isD := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z', c >= '0' && c <= '9'
			if isL || isD || c == '_' || c == '-' {
				run++
				letters, digits = letters || isL, digits || isD
				continue
			}
		}
		if run >= 20 && letters && digits {
			return true
		}
		run, letters, digits = 0, false, false
	}
	return false
}

// leadingAside matches parenthesised asides that open a sentence, such as
// "(step 3)", so a rule repeated across messages is recognised as one.
var leadingAside = lazyregexp.New(`^(\([^)]{0,40}\)\s*)+`)

// dedupeFold removes later duplicates that differ only in case and
// surrounding space or punctuation, keeping the first spelling.
func dedupeFold(xs []string) []string {
	seen := make(map[string]bool, len(xs))
	out := xs[:0:0]
	for _, x := range xs {
		k := strings.ToLower(strings.Trim(x, " .;:!"))
		if !seen[k] {
			seen[k] = true
			out = append(out, x)
		}
	}
	return out
}

// boundUserMessages keeps messages in order (newest first) while they fit
// the budget; a single oversized message is clipped with a marker.
func boundUserMessages(msgs []string, budget int) []string {
	var out []string
	used := 0
	for _, m := range msgs {
		if strings.TrimSpace(m) == "" {
			continue
		}
		if len(m) > maxUserMessageChars {
			m = text.Clip(m, maxUserMessageChars)
		}
		if used+len(m) > budget {
			break
		}
		used += len(m)
		out = append(out, m)
	}
	return out
}

func firstLine(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return text.Clip(s, n)
}

func lastN(xs []string, n int) []string {
	if len(xs) > n {
		return xs[len(xs)-n:]
	}
	return xs
}

func reversed(xs []string) []string {
	out := slices.Clone(xs)
	slices.Reverse(out)
	return out
}

func union(a, b []string) []string {
	if len(b) == 0 {
		return slices.Clone(a)
	}
	seen := make(map[string]bool, len(a)+len(b))
	out := make([]string, 0, len(a)+len(b))
	for _, x := range a {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	for _, x := range b {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func setOf(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func orElse(a, b []string) []string {
	if len(a) > 0 {
		return a
	}
	return slices.Clone(b)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
