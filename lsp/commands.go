package lsp

import (
	"context"
	"encoding/json"

	"github.com/soba-agent/soba-lsp/compaction"
)

// Command IDs of PROTOCOL.md, answered through workspace/executeCommand.
const (
	CommandPrompt        = "soba.prompt"
	CommandRun           = "soba.run"
	CommandCancel        = "soba.cancel"
	CommandBudget        = "soba.budget"
	CommandCompact       = "soba.compact"
	CommandAutoCompact   = "soba.autoCompact"
	CommandCheckpoint    = "soba.checkpoint"
	CommandCapsuleCreate = "soba.capsule.create"
	CommandCapsuleExport = "soba.capsule.export"
	CommandCapsuleLoad   = "soba.capsule.load"
	CommandCapsuleList   = "soba.capsule.list"
	CommandCapsuleShow   = "soba.capsule.show"
	CommandSessionInfo   = "soba.session.info"
	CommandSessionList   = "soba.session.list"
	CommandSessionNew    = "soba.session.new"
	CommandSessionResume = "soba.session.resume"
	CommandSessionRewind = "soba.session.rewind"
)

// Commands lists every command of PROTOCOL.md in its order. The server
// advertises exactly these in executeCommandProvider.commands; the editor
// plugins' tests compare their declarations to this list.
var Commands = []string{
	CommandPrompt,
	CommandRun,
	CommandCancel,
	CommandBudget,
	CommandCompact,
	CommandAutoCompact,
	CommandCheckpoint,
	CommandCapsuleCreate,
	CommandCapsuleExport,
	CommandCapsuleLoad,
	CommandCapsuleList,
	CommandCapsuleShow,
	CommandSessionInfo,
	CommandSessionList,
	CommandSessionNew,
	CommandSessionResume,
	CommandSessionRewind,
}

// commandFunc runs one command: decode arguments[0], call the backend,
// return the result to encode.
type commandFunc func(ctx context.Context, b Backend, name string, arguments []json.RawMessage) (any, error)

// commandTable maps each command of Commands to its handler.
var commandTable = map[string]commandFunc{
	CommandPrompt:        withArgs(Backend.Prompt),
	CommandCancel:        noArgs(Backend.Cancel),
	CommandBudget:        noArgs(budgetOf(Backend.Budget)),
	CommandCompact:       withArgs(Backend.Compact),
	CommandAutoCompact:   withArgs(budgetWithArgs(Backend.SetAutoCompact)),
	CommandCheckpoint:    withArgs(Backend.Checkpoint),
	CommandCapsuleCreate: withArgs(Backend.CapsuleCreate),
	CommandCapsuleExport: withArgs(Backend.CapsuleExport),
	CommandCapsuleLoad:   withArgs(capsuleLoad),
	CommandCapsuleList:   noArgs(Backend.CapsuleList),
	CommandCapsuleShow:   withArgs(Backend.CapsuleShow),
	CommandSessionInfo:   noArgs(Backend.SessionInfo),
	CommandSessionList:   noArgs(Backend.SessionList),
	CommandSessionNew:    noArgs(Backend.SessionNew),
	CommandSessionResume: withArgs(Backend.SessionResume),
	CommandSessionRewind: withArgs(Backend.SessionRewind),
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
func budgetOf(call func(Backend, context.Context) (compaction.Budget, error)) func(Backend, context.Context) (compaction.Budget, error) {
	return func(b Backend, ctx context.Context) (compaction.Budget, error) {
		bud, err := call(b, ctx)
		return normalBudget(bud), err
	}
}

func budgetWithArgs[A any](call func(Backend, context.Context, A) (compaction.Budget, error)) func(Backend, context.Context, A) (compaction.Budget, error) {
	return func(b Backend, ctx context.Context, args A) (compaction.Budget, error) {
		bud, err := call(b, ctx, args)
		return normalBudget(bud), err
	}
}

// normalBudget makes `pending` an array even when nothing is pending.
func normalBudget(b compaction.Budget) compaction.Budget {
	if b.Pending == nil {
		b.Pending = []string{}
	}
	return b
}

func capsuleLoad(b Backend, ctx context.Context, args CapsuleLoadArgs) (CapsuleLoadResult, error) {
	r, err := b.CapsuleLoad(ctx, args)
	if r.Warnings == nil {
		r.Warnings = []string{}
	}
	return r, err
}
