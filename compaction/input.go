package compaction

import (
	"container/list"
	"encoding/json"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/session"
)

// Message roles of the model input.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one message of the model input, provider-neutral.
type Message struct {
	Role       string
	Text       string
	ToolCalls  []session.ToolCall
	ToolCallID string
	ToolName   string
	IsError    bool
	// EntryID is the transcript entry the message comes from; "" for a
	// message the view made (the capsule, an "interrupted" result).
	EntryID string
	// Native is the provider's own items recorded with an assistant answer
	// (encrypted reasoning), set only when they belong to the requesting
	// provider and model; they go before the message, verbatim.
	Native json.RawMessage
}

// Input is the model input after the system prompt and tool schemas (R-M1):
// the capsule (native continuation or portable text), then the kept tail and
// everything appended since, with tool calls and results paired.
type Input struct {
	// CheckpointID of the capsule in use, "" without one.
	CheckpointID string
	// Native is set when the newest capsule's native continuation is
	// compatible with the requesting provider and model; CapsuleText is then
	// empty.
	Native *capsule.Native
	// CapsuleText is the rendered portable capsule, the first message's text.
	CapsuleText string
	Messages    []Message
	// Repairs describes what the view fixed so the provider never sees an
	// orphan: results synthesised for interrupted calls, results dropped
	// whose call is not in the input.
	Repairs []string
}

// InputOptions tune the view.
type InputOptions struct {
	// Provider and Model of the request, to pick a compatible native
	// continuation (R-M1).
	Provider, Model string
	// MaxToolResultChars shortens long tool results in the model input (the
	// transcript keeps them whole); 0 means no limit.
	MaxToolResultChars int
	// MaxTokens, when positive, bounds the input by the entries' recorded
	// token estimates: when the messages from the base on add up to more,
	// BuildInput fails with an *InputTooLargeError before decoding any of
	// them, so an input that could never be sent costs only its headers.
	MaxTokens int
	// Cache, when set, keeps recently decoded entries across calls: the
	// requests of a turn differ by a few entries, so each decodes only
	// those.
	Cache *EntryCache
}

// InputTooLargeError is BuildInput's error when the recorded estimates of the
// messages exceed InputOptions.MaxTokens.
type InputTooLargeError struct {
	Tokens, Max int
}

func (e *InputTooLargeError) Error() string {
	return fmt.Sprintf("the model input's messages are estimated at %d tokens, over the bound of %d; nothing was decoded", e.Tokens, e.Max)
}

// CapsulePreamble introduces the portable capsule in the model input.
const CapsulePreamble = "The earlier part of this session was compacted. This Context Capsule holds its working state; the messages after it continue the session.\n\n"

// InterruptedResult is the text of a result the view supplies for a tool
// call that has none in the transcript.
const InterruptedResult = "interrupted: this tool call was interrupted and produced no result"

// BuildInput builds the model input of the leaf path (R-M1, R-M2): only the
// newest capsule and its kept tail. It costs O(tail): nothing before the
// newest capsule's first kept entry is read.
func BuildInput(t Transcript, opt InputOptions) (Input, error) {
	b, err := FindBase(t)
	if err != nil {
		return Input{}, err
	}
	if opt.MaxTokens > 0 {
		// Walk back from the leaf over the headers only, and stop as soon
		// as the estimates pass the bound.
		sum := 0
		for i := t.Len() - 1; i >= b.Start; i-- {
			if n := t.Node(i); i != b.CapsuleIndex && isModelEntry(n.Type) {
				if sum += n.Tokens; sum > opt.MaxTokens {
					return Input{}, &InputTooLargeError{Tokens: sum, Max: opt.MaxTokens}
				}
			}
		}
	}
	return buildInput(t, b, t.Len(), opt)
}

func buildInput(t Transcript, b Base, end int, opt InputOptions) (Input, error) {
	var in Input
	if b.State != nil {
		in.CheckpointID = b.CheckpointID
		if compatible(b.Native, opt) {
			in.Native = b.Native
		} else {
			in.CapsuleText = CapsulePreamble + ModelText(*b.State)
		}
	}
	if b.Problem != "" {
		in.Repairs = append(in.Repairs, b.Problem)
	}
	msgs := make([]Message, 0, end-b.Start+1)
	open := map[string]string{} // call id → tool name, calls awaiting a result
	var openOrder []string
	closeOpen := func() {
		for _, id := range openOrder {
			if name, ok := open[id]; ok {
				msgs = append(msgs, Message{Role: RoleTool, ToolCallID: id, ToolName: name, Text: InterruptedResult, IsError: true})
				in.Repairs = append(in.Repairs, fmt.Sprintf("tool call %s (%s) had no result: marked interrupted", id, name))
				delete(open, id)
			}
		}
		openOrder = openOrder[:0]
	}
	// Answers' native items recorded before a refusal of them are never
	// sent again (R-N2).
	refusedBefore := -1
	if opt.Provider != "" {
		for i := end - 1; i >= b.Start; i-- {
			if t.Node(i).Type != session.TypeSettings {
				continue
			}
			e, err := loadEntry(t, i)
			if err != nil {
				return Input{}, err
			}
			if e.Settings != nil && e.Settings.ReasoningRejected {
				refusedBefore = i
				break
			}
		}
	}
	answered := map[string]bool{}
	for i := b.Start; i < end; i++ {
		if i == b.CapsuleIndex || !isModelEntry(t.Node(i).Type) {
			continue
		}
		e, err := opt.Cache.load(t, i)
		if err != nil {
			return Input{}, err
		}
		switch {
		case e.User != nil:
			closeOpen()
			msgs = append(msgs, Message{Role: RoleUser, Text: e.User.Text, EntryID: e.ID})
		case e.Assistant != nil:
			closeOpen()
			a := e.Assistant
			if a.Error != "" && a.Text == "" && len(a.ToolCalls) == 0 {
				continue // a failed inference left nothing for the model to see
			}
			m := Message{Role: RoleAssistant, Text: a.Text, ToolCalls: a.ToolCalls, EntryID: e.ID}
			if compatible(a.Native, opt) && i > refusedBefore {
				m.Native = a.Native.Items
			}
			msgs = append(msgs, m)
			for _, c := range a.ToolCalls {
				open[c.ID] = c.Name
				openOrder = append(openOrder, c.ID)
			}
		case e.ToolResult != nil:
			r := e.ToolResult
			if _, ok := open[r.ToolCallID]; !ok {
				what := "its call is not in the model input"
				if answered[r.ToolCallID] {
					what = "its call was already answered"
				}
				in.Repairs = append(in.Repairs, fmt.Sprintf("tool result %s for call %s dropped: %s", e.ID, r.ToolCallID, what))
				continue
			}
			delete(open, r.ToolCallID)
			answered[r.ToolCallID] = true
			limit := opt.MaxToolResultChars
			if r.Artifacts != nil && r.Artifacts.Skill != "" {
				// An activated skill's body is whole here until the next
				// capsule moves it into the system prompt; the workspace
				// door bounds it (workspace.MaxSkillBytes).
				limit = 0
			}
			msgs = append(msgs, Message{Role: RoleTool, Text: shorten(r.Content, limit), ToolCallID: r.ToolCallID, ToolName: r.ToolName, IsError: !r.OK, EntryID: e.ID})
		}
	}
	closeOpen()
	in.Messages = msgs
	return in, nil
}

// compatible says whether a native continuation belongs to the requesting
// provider and model (R-M1, R-N2).
func compatible(n *capsule.Native, opt InputOptions) bool {
	return n != nil && opt.Provider != "" && n.Provider == opt.Provider && n.Model == opt.Model && len(n.Items) > 0
}

// shorten keeps the head and tail of a long text with a note of what was
// left out, cutting on rune boundaries.
func shorten(s string, limit int) string {
	if limit <= 0 || len(s) <= limit {
		return s
	}
	head := limit * 2 / 3
	tail := limit - head
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	ts := len(s) - tail
	for ts < len(s) && !utf8.RuneStart(s[ts]) {
		ts++
	}
	return fmt.Sprintf("%s\n[… %d characters omitted from the model input; the transcript keeps the whole output …]\n%s", s[:head], ts-head, s[ts:])
}

// EntryCache keeps the most recently decoded entries of a session for the
// model input (InputOptions.Cache), bounded by a number of entries and by
// their recorded tokens (a tool result can weigh as much as a hundred
// messages). Entries are immutable once appended, so a cached entry is
// never stale; callers must not modify what BuildInput gives them. It is
// safe for concurrent use; the zero value is not: use NewEntryCache.
type EntryCache struct {
	mu                    sync.Mutex
	maxEntries, maxTokens int
	tokens                int
	order                 *list.List // front = most recent; values are *cachedEntry
	byID                  map[string]*list.Element
}

type cachedEntry struct {
	e      *session.Entry
	tokens int
}

// NewEntryCache returns a cache of at most maxEntries entries and
// maxTokens recorded tokens.
func NewEntryCache(maxEntries, maxTokens int) *EntryCache {
	return &EntryCache{maxEntries: maxEntries, maxTokens: maxTokens, order: list.New(), byID: map[string]*list.Element{}}
}

// load returns entry i of t from the cache or, decoded, through t (and
// keeps it). A nil cache only loads.
func (c *EntryCache) load(t Transcript, i int) (*session.Entry, error) {
	if c == nil {
		return loadEntry(t, i)
	}
	n := t.Node(i)
	c.mu.Lock()
	if el, ok := c.byID[n.ID]; ok {
		c.order.MoveToFront(el)
		e := el.Value.(*cachedEntry).e
		c.mu.Unlock()
		return e, nil
	}
	c.mu.Unlock()
	e, err := loadEntry(t, i)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byID[n.ID]; ok || n.Tokens > c.maxTokens {
		return e, nil
	}
	c.byID[n.ID] = c.order.PushFront(&cachedEntry{e: e, tokens: n.Tokens})
	c.tokens += n.Tokens
	for c.order.Len() > c.maxEntries || c.tokens > c.maxTokens {
		el := c.order.Back()
		ce := el.Value.(*cachedEntry)
		c.order.Remove(el)
		delete(c.byID, ce.e.ID)
		c.tokens -= ce.tokens
	}
	return e, nil
}

// Len is the number of cached entries.
func (c *EntryCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
