// Package session is the append-only JSONL transcript: the receipts of SPEC §1.
// One file per session, one entry per line; entries form a tree by parentId and
// the leaf is the entry the next one hangs from.
package session

import (
	"encoding/json"
	"time"

	"github.com/soba-agent/soba-lsp/capsule"
)

// Entry types written by SOBA (PROTOCOL.md "Fixed details"). Any other type
// found in a file is kept on disk and skipped (R-T3).
const (
	TypeSession     = "session"
	TypeUser        = "user"
	TypeAssistant   = "assistant"
	TypeToolResult  = "tool_result"
	TypeCapsule     = "capsule"
	TypeCheckpoint  = "checkpoint"
	TypeCapsuleLoad = "capsule_load"
	TypeSettings    = "settings"
)

// Entry is one line of the transcript. The four header fields come first on
// the line (struct order) so that resume can index a line without decoding
// its payload. Exactly one payload pointer is set, the one named by Type.
type Entry struct {
	ID        string    `json:"id"`
	ParentID  *string   `json:"parentId"`
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	// Tokens is the estimated token count of the entry as the model would see
	// it, written at append time so resume never re-tokenizes history.
	Tokens int `json:"tokens,omitempty"`

	Session     *SessionHeader `json:"session,omitempty"`
	User        *UserMessage   `json:"user,omitempty"`
	Assistant   *Assistant     `json:"assistant,omitempty"`
	ToolResult  *ToolResult    `json:"toolResult,omitempty"`
	Capsule     *Capsule       `json:"capsule,omitempty"`
	Checkpoint  *Checkpoint    `json:"checkpoint,omitempty"`
	CapsuleLoad *CapsuleLoad   `json:"capsuleLoad,omitempty"`
	Settings    *Settings      `json:"settings,omitempty"`

	// Raw holds the original line of an entry whose type this version does not
	// know, so it can be reported and kept; it is never written back.
	Raw json.RawMessage `json:"-"`
}

// Parent returns the parent id, or "" for the root.
func (e *Entry) Parent() string {
	if e.ParentID == nil {
		return ""
	}
	return *e.ParentID
}

// SessionHeader is the first entry of every session file.
type SessionHeader struct {
	Version   int    `json:"version"`
	SessionID string `json:"sessionId"`
	Workspace string `json:"workspace,omitempty"`
	// ImportedFrom names the foreign transcript an imported session came from.
	ImportedFrom string `json:"importedFrom,omitempty"`
}

// UserMessage is what the user typed.
type UserMessage struct {
	Text string `json:"text"`
}

// Assistant is one model response: text and tool calls, with the provider's
// usage report when there was one.
type Assistant struct {
	// Text is the answer alone (R-C9): what the next request sends and
	// what a capsule may read.
	Text string `json:"text,omitempty"`
	// Thinking is the model's reasoning, kept apart from the answer
	// however the server sent it (R-C9): shown folded, never read into a
	// capsule, never sent back as the assistant's text.
	Thinking   string     `json:"thinking,omitempty"`
	ToolCalls  []ToolCall `json:"toolCalls,omitempty"`
	Provider   string     `json:"provider,omitempty"`
	Model      string     `json:"model,omitempty"`
	StopReason string     `json:"stopReason,omitempty"`
	Usage      *Usage     `json:"usage,omitempty"`
	// Error is set when the inference failed (stream cut, provider error); such
	// an entry carries no tool calls.
	Error string `json:"error,omitempty"`
	// Native is provider-side continuation state returned with this response.
	Native *capsule.Native `json:"native,omitempty"`
}

// ToolCall is one call the model asked for.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Usage is the provider's count for one request, normalised across providers:
// InputTokens is the whole prompt (cached and cache-written tokens included).
type Usage struct {
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
	CachedTokens int `json:"cachedTokens,omitempty"`
}

// ToolResult is the outcome of one tool call, linked to it by ToolCallID.
type ToolResult struct {
	ToolCallID string `json:"toolCallId"`
	ToolName   string `json:"toolName"`
	OK         bool   `json:"ok"`
	Content    string `json:"content"`
	// Artifacts recorded by the tool for the capsule (R-C2).
	Artifacts *Artifacts `json:"artifacts,omitempty"`
	// ContentOmitted says that a lean decoding left a non-empty Content
	// out (DecodeLineLean); never written.
	ContentOmitted bool `json:"-"`
	// Summary is the one line the editors showed for the result ("exit 1 ·
	// 38 lines · FAIL ./x"), so a reopened session's tool card reads the
	// same; empty in sessions written before it was recorded.
	Summary string `json:"summary,omitempty"`
	// Approval is the user's answer when the call was asked about:
	// "once", "session" or "denied"; empty when it was not asked (a tool
	// that needs no approval, or one allowed for the session earlier).
	Approval string `json:"approval,omitempty"`
}

// Approval answers recorded on a ToolResult.
const (
	ApprovalOnce    = "once"
	ApprovalSession = "session"
	ApprovalDenied  = "denied"
)

// Artifacts are the exact facts a tool call left: files it read or modified,
// the verification command it ran and its exit code, the skill it activated.
type Artifacts struct {
	FilesRead     []string `json:"filesRead,omitempty"`
	FilesModified []string `json:"filesModified,omitempty"`
	Command       string   `json:"command,omitempty"`
	ExitCode      *int     `json:"exitCode,omitempty"`
	// Pipefail says the command ran with bash's pipefail (SOBA's bash tool
	// always does): a pipeline's exit status is then 0 only when every
	// stage succeeded.
	Pipefail bool   `json:"pipefail,omitempty"`
	Skill    string `json:"skill,omitempty"`
}

// Capsule is a completed compaction (R-C3).
type Capsule struct {
	CheckpointID     string `json:"checkpointId"`
	Trigger          string `json:"trigger"`
	FirstKeptEntryID string `json:"firstKeptEntryId"`
	TokensBefore     int    `json:"tokensBefore"`
	TokensAfter      int    `json:"tokensAfter"`
	Quality          string `json:"quality"`
	// SourceFrom and SourceTo are the first and last entry ids the capsule
	// summarises.
	SourceFrom string          `json:"sourceFrom,omitempty"`
	SourceTo   string          `json:"sourceTo,omitempty"`
	Title      string          `json:"title,omitempty"`
	State      capsule.State   `json:"state"`
	Native     *capsule.Native `json:"native,omitempty"`
}

// Checkpoint marks a milestone or a plan pivot (R-G7), or a capsule created for
// handoff by `capsule create` (Kind "capsule").
type Checkpoint struct {
	CheckpointID string `json:"checkpointId"`
	Kind         string `json:"kind"`
	Note         string `json:"note,omitempty"`
	Title        string `json:"title,omitempty"`
	Path         string `json:"path,omitempty"`
	// State is set for Kind "capsule": the portable state that was exported.
	State *capsule.State `json:"state,omitempty"`
	// Intent is the trigger intent this checkpoint recorded, if any
	// ("milestone" or "plan_pivot"); resume restores it while unconsumed.
	Intent string `json:"intent,omitempty"`
}

// CapsuleLoad records a .capsule.md loaded into the session (R-P1); the next
// model input carries its state as the newest capsule.
type CapsuleLoad struct {
	CheckpointID string        `json:"checkpointId"`
	Title        string        `json:"title,omitempty"`
	Path         string        `json:"path"`
	Warnings     []string      `json:"warnings,omitempty"`
	State        capsule.State `json:"state"`
}

// Settings records a change of session settings. RewindTo marks a rewind: the
// entry hangs from the rewind target, so it becomes the new leaf and survives
// resume, while the abandoned branch stays on disk (R-T1, R-T4).
type Settings struct {
	AutoCompact *bool `json:"autoCompact,omitempty"`
	// Approval is the session's approval policy ("ask" or "auto") as the
	// user set it from the editor (ACP's config options).
	Approval string `json:"approval,omitempty"`
	// Model and SummaryModel are the names, among the user's `models`, the
	// user picked from the editor (ACP's config options) for the session's
	// model and summary model; ModelFromSettings ("(settings)") puts back
	// the configured one.
	Model        string `json:"model,omitempty"`
	SummaryModel string `json:"summaryModel,omitempty"`
	RewindTo     string `json:"rewindTo,omitempty"`
	// ConsumedIntents lists intents consumed by a preflight, so resume does not
	// restore them.
	ConsumedIntents []string `json:"consumedIntents,omitempty"`
	// NativeRejected names the capsule (checkpoint id) whose native
	// continuation the provider refused: the portable capsule is used from
	// then on and the native one is never sent again (R-N2).
	NativeRejected string `json:"nativeRejected,omitempty"`
	// ReasoningRejected marks the provider's refusal of the native items
	// recorded with earlier answers (encrypted reasoning): those before this
	// entry are never sent again (R-N2).
	ReasoningRejected bool `json:"reasoningRejected,omitempty"`
}

// seenByModel are the entry types that reach the model input: each carries
// at least its message framing in tokens.
var seenByModel = map[string]bool{TypeUser: true, TypeAssistant: true, TypeToolResult: true,
	TypeCapsule: true, TypeCapsuleLoad: true}

// MissingEstimate reports whether an entry of type typ with tokens stored was
// written without a token estimate: a hand-written or foreign line, since
// every entry the model sees is worth at least its framing.
func MissingEstimate(typ string, tokens int) bool { return tokens == 0 && seenByModel[typ] }
