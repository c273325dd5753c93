package lsp

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/soba-agent/soba-lsp/lsp/protocol"
)

// Commands lists every command of PROTOCOL.md in its order (one definition,
// in lsp/protocol). The server advertises exactly these in
// executeCommandProvider.commands.
var Commands = protocol.Commands

// knownCommands are the commands the server answers: PROTOCOL.md's, then
// the additions of docs/protocol.md, which are not advertised.
var knownCommands = append(slices.Clip(Commands), protocol.Additions...)

// commandFunc runs one command: decode arguments[0], call the backend,
// return the result to encode.
type commandFunc func(ctx context.Context, b Backend, name string, arguments []json.RawMessage) (any, error)

// commandTable maps each command of knownCommands to its handler.
var commandTable = map[string]commandFunc{
	protocol.CommandPrompt:            withArgs(Backend.Prompt),
	protocol.CommandCancel:            noArgs(Backend.Cancel),
	protocol.CommandBudget:            noArgs(budgetOf(Backend.Budget)),
	protocol.CommandCompact:           withArgs(Backend.Compact),
	protocol.CommandAutoCompact:       withArgs(budgetWithArgs(Backend.SetAutoCompact)),
	protocol.CommandCheckpoint:        withArgs(Backend.Checkpoint),
	protocol.CommandCapsuleCreate:     withArgs(Backend.CapsuleCreate),
	protocol.CommandCapsuleExport:     withArgs(Backend.CapsuleExport),
	protocol.CommandCapsuleLoad:       withArgs(capsuleLoad),
	protocol.CommandCapsuleList:       noArgs(Backend.CapsuleList),
	protocol.CommandCapsuleShow:       withArgs(Backend.CapsuleShow),
	protocol.CommandSessionInfo:       noArgs(Backend.SessionInfo),
	protocol.CommandSessionList:       noArgs(Backend.SessionList),
	protocol.CommandSessionNew:        noArgs(Backend.SessionNew),
	protocol.CommandSessionResume:     withArgs(Backend.SessionResume),
	protocol.CommandSessionRewind:     withArgs(Backend.SessionRewind),
	protocol.CommandSessionHistory:    noArgs(sessionHistory),
	protocol.CommandSessionTranscript: withArgs(sessionTranscript),
}

// withArgs adapts a backend method taking an argument struct A.
func withArgs[A, R any](call func(Backend, context.Context, A) (R, error)) commandFunc {
	return func(ctx context.Context, b Backend, name string, arguments []json.RawMessage) (any, error) {
		var args A
		if err := decodeArgs(name, arguments, &args); err != nil {
			return nil, err
		}
		return call(b, ctx, args)
	}
}

// noArgs adapts a backend method of a command whose arguments are {}.
func noArgs[R any](call func(Backend, context.Context) (R, error)) commandFunc {
	return func(ctx context.Context, b Backend, name string, arguments []json.RawMessage) (any, error) {
		if err := decodeArgs(name, arguments, &struct{}{}); err != nil {
			return nil, err
		}
		return call(b, ctx)
	}
}

// budgetOf and budgetWithArgs normalise the Budget on its way out.
func budgetOf(call func(Backend, context.Context) (protocol.Budget, error)) func(Backend, context.Context) (protocol.Budget, error) {
	return func(b Backend, ctx context.Context) (protocol.Budget, error) {
		bud, err := call(b, ctx)
		return normalBudget(bud), err
	}
}

func budgetWithArgs[A any](call func(Backend, context.Context, A) (protocol.Budget, error)) func(Backend, context.Context, A) (protocol.Budget, error) {
	return func(b Backend, ctx context.Context, args A) (protocol.Budget, error) {
		bud, err := call(b, ctx, args)
		return normalBudget(bud), err
	}
}

// normalBudget makes `pending` an array even when nothing is pending, and
// writes the status text from the figures, so no budget leaves the server
// without it.
func normalBudget(b protocol.Budget) protocol.Budget {
	if b.Pending == nil {
		b.Pending = []protocol.Trigger{}
	}
	b.Display = protocol.BudgetDisplay(b.EffectiveTokens, b.HardLimit)
	return b
}

func capsuleLoad(b Backend, ctx context.Context, args protocol.CapsuleLoadArgs) (protocol.CapsuleLoadResult, error) {
	r, err := b.CapsuleLoad(ctx, args)
	if r.Warnings == nil {
		r.Warnings = []string{}
	}
	return r, err
}

// sessionHistory makes every point's file list an array.
func sessionHistory(b Backend, ctx context.Context) ([]protocol.HistoryPoint, error) {
	list, err := b.SessionHistory(ctx)
	for i := range list {
		if list[i].FilesModifiedAfter == nil {
			list[i].FilesModifiedAfter = []string{}
		}
	}
	return list, err
}

// sessionTranscript makes the page's item list an array.
func sessionTranscript(b Backend, ctx context.Context, args protocol.SessionTranscriptArgs) (protocol.SessionTranscript, error) {
	page, err := b.SessionTranscript(ctx, args)
	if page.Items == nil {
		page.Items = []protocol.TranscriptItem{}
	}
	return page, err
}
