package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/soba-agent/soba-lsp/agent/provider"
	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/internal/text"
	"github.com/soba-agent/soba-lsp/session"
)

// nativeCompactor is the barrier's door to the model client's native
// compaction (SPEC §11): the history before the cut, in the provider's
// terms, goes to provider.Compactor.
type nativeCompactor struct {
	a *Agent
	c provider.Compactor
}

func (n nativeCompactor) NativeTarget() (string, string) {
	return n.a.opt.ProviderName, n.a.opt.ModelName
}

func (n nativeCompactor) CompactNative(ctx context.Context, history compaction.Input, tokens int) (capsule.Native, error) {
	if min := provider.MinCompactTokens(n.a.opt.ProviderName); tokens < min {
		return capsule.Native{}, &compaction.NativeSkip{Reason: fmt.Sprintf("history of about %s tokens is below the provider's minimum compaction trigger of %s", text.Thousands(tokens), text.Thousands(min))}
	}
	var system string
	if err := n.a.do(func(st *state) { system = n.a.systemPrompt(promptSkills(st.base)) }); err != nil {
		return capsule.Native{}, err
	}
	req := provider.Request{Model: n.a.opt.ModelName, System: system, Messages: requestMessages(history)}
	out, err := n.c.Compact(ctx, req)
	if err != nil {
		return capsule.Native{}, err
	}
	return capsule.Native{Items: out.Items, Tokens: out.Tokens}, nil
}

// cacheKey is the prompt-cache key of a session's requests: the same for
// all of them, so a provider that routes by key keeps them on one cache.
func cacheKey(sessionID string) string { return "soba-" + sessionID }

// requestMessages is a model input in the provider's terms: the native
// continuation (as the first message's native items) or the portable
// capsule's text, marked as the end of the stable prefix, then the
// messages with the native items recorded with them.
func requestMessages(in compaction.Input) []provider.Message {
	var out []provider.Message
	switch {
	case in.Native != nil:
		out = append(out, provider.Message{Role: provider.RoleUser, Native: in.Native.Items, StablePrefix: true})
	case in.CapsuleText != "":
		out = append(out, provider.Message{Role: provider.RoleUser, Text: in.CapsuleText, StablePrefix: true})
	}
	for _, m := range in.Messages {
		pm := provider.Message{Role: m.Role, Text: m.Text, ToolCallID: m.ToolCallID, ToolName: m.ToolName, IsError: m.IsError, Native: m.Native}
		for _, c := range m.ToolCalls {
			pm.ToolCalls = append(pm.ToolCalls, provider.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		out = append(out, pm)
	}
	return out
}

// markNativeRejected records that the provider refused the native items
// a request carried — the native continuation of capsule checkpoint (when
// not ""), the answers' encrypted reasoning (when reasoning) — so neither
// this session nor a resume sends them again; the model input falls back to
// the portable capsule and plain answers.
func (a *Agent) markNativeRejected(checkpoint string, reasoning bool, cause error) error {
	var err error
	if e := a.do(func(st *state) {
		if _, err = a.appendEntry(st, session.Entry{Type: session.TypeSettings, Settings: &session.Settings{NativeRejected: checkpoint, ReasoningRejected: reasoning}}); err != nil {
			return
		}
		a.refreshPath(st)
		err = a.recomputeInput(st)
		what := "The provider refused the native items of earlier answers"
		if checkpoint != "" {
			what = "The provider refused the native continuation of " + checkpoint
		}
		a.opt.Notifier.Log(what + " (" + firstLineOf(cause.Error(), 200) + "); they are not sent again and the request is retried once without them")
		a.publishBudget(st)
	}); e != nil {
		return e
	}
	return err
}

// nativeRejected says whether a failed request's error is the provider
// refusing a native item it was sent: a 4xx that names the encrypted
// content or the compaction item (R-N2).
func nativeRejected(err error) bool {
	var br *provider.BadRequestError
	if !errors.As(err, &br) {
		return false
	}
	m := strings.ToLower(br.Message)
	return strings.Contains(m, "encrypted") || strings.Contains(m, "compaction")
}
