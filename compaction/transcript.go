package compaction

import (
	"fmt"

	"github.com/soba-agent/soba-lsp/session"
)

// Node is the header of one entry on the leaf path: what the engine needs to
// decide without loading the entry's payload.
type Node struct {
	ID     string
	Type   string
	Tokens int
	// Facts are the payload fields resume needs (settings, intents,
	// activated skills), from the store's index; nil for most entries.
	Facts *session.Facts
	// MayHaveUsage is false when the entry certainly carries no provider
	// usage.
	MayHaveUsage bool
}

// Transcript is the leaf path, root → leaf, as the engine reads it. Headers
// are cheap; payloads are loaded on demand, so the engine's cost follows the
// part of the path it looks at (the model input's tail), not the history.
type Transcript interface {
	// Len is the number of entries on the leaf path.
	Len() int
	// Node returns the header of the i-th entry on the path.
	Node(i int) Node
	// Entry loads the i-th entry on the path.
	Entry(i int) (*session.Entry, error)
	// LatestCapsule is the index of the newest capsule or capsule_load entry
	// on the path, or -1 when there is none.
	LatestCapsule() int
}

// LeanTranscript is a Transcript that can give a view of the same path
// whose entries leave out the content of tool results that succeeded,
// recorded their artifacts and ran no command (session.DecodeLineLean sets
// ContentOmitted on them): the one thing BuildDeterministic, which reads
// every entry of the range it summarises, never reads, and most of a long
// session's bytes.
type LeanTranscript interface {
	Transcript
	Lean() Transcript
}

// Entries is a Transcript over entries held in memory: a whole path, root
// first. It is what tests, the offline CLI and importers use.
type Entries []session.Entry

// Len implements Transcript.
func (es Entries) Len() int { return len(es) }

// Node implements Transcript.
func (es Entries) Node(i int) Node {
	return Node{ID: es[i].ID, Type: es[i].Type, Tokens: es[i].Tokens, Facts: session.FactsOf(&es[i]), MayHaveUsage: session.HasUsage(&es[i])}
}

// Entry implements Transcript.
func (es Entries) Entry(i int) (*session.Entry, error) { return &es[i], nil }

// LatestCapsule implements Transcript.
func (es Entries) LatestCapsule() int {
	for i := len(es) - 1; i >= 0; i-- {
		if t := es[i].Type; t == session.TypeCapsule || t == session.TypeCapsuleLoad {
			return i
		}
	}
	return -1
}

// isModelEntry reports whether an entry type is part of the model input as a
// message (user, assistant, tool result). Headers, capsules, checkpoints,
// settings and unknown types are not.
func isModelEntry(typ string) bool {
	switch typ {
	case session.TypeUser, session.TypeAssistant, session.TypeToolResult:
		return true
	}
	return false
}

// loadEntry loads an entry and names it in the error.
func loadEntry(t Transcript, i int) (*session.Entry, error) {
	e, err := t.Entry(i)
	if err != nil {
		return nil, fmt.Errorf("load entry %s: %w", t.Node(i).ID, err)
	}
	return e, nil
}
