package compaction

import (
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/capsule"
	"github.com/soba-agent/soba-lsp/session"
)

// TestNativeItemsOnlyForTheirModel_RN2: the model input carries a
// capsule's native continuation and an answer's native items only to the
// provider and model they belong to, never after a recorded refusal, and
// Base.For drops a continuation of another model.
func TestNativeItemsOnlyForTheirModel_RN2(t *testing.T) {
	b := longSession(8)
	if _, _, err := b.compact(TriggerAutoThreshold, smallConfig(), "ck_n"); err != nil {
		t.Fatal(err)
	}
	b.es[len(b.es)-1].Capsule.Native = &capsule.Native{Provider: "openai-responses", Model: "m1", Items: []byte(`[{"type":"compaction","encrypted_content":"c"}]`), Tokens: 40}
	b.user("next", 10)
	b.add(session.Entry{Type: session.TypeAssistant, Assistant: &session.Assistant{Text: "answer",
		Native: &capsule.Native{Provider: "openai-responses", Model: "m1", Items: []byte(`[{"type":"reasoning","encrypted_content":"r"}]`)}}}, 10)
	reasoningOf := func(in Input) string {
		for _, m := range in.Messages {
			if len(m.Native) > 0 {
				return string(m.Native)
			}
		}
		return ""
	}
	for _, tc := range []struct {
		name, provider, model string
		native, reasoning     bool
	}{
		{"same provider and model", "openai-responses", "m1", true, true},
		{"other model", "openai-responses", "m2", false, false},
		{"other provider", "anthropic", "m1", false, false},
		{"no provider named", "", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := BuildInput(b.es, InputOptions{Provider: tc.provider, Model: tc.model})
			if err != nil {
				t.Fatal(err)
			}
			if (in.Native != nil) != tc.native || (in.CapsuleText == "") != tc.native {
				t.Errorf("native %v, capsule text %d bytes", in.Native, len(in.CapsuleText))
			}
			if got := reasoningOf(in); (got != "") != tc.reasoning {
				t.Errorf("reasoning %q", got)
			}
			base, err := FindBase(b.es)
			if err != nil {
				t.Fatal(err)
			}
			if (base.For(tc.provider, tc.model).Native != nil) != tc.native {
				t.Errorf("Base.For kept %v", base.For(tc.provider, tc.model).Native)
			}
		})
	}
	// A refusal of the continuation, then of the reasoning: neither is sent
	// again.
	b.add(session.Entry{Type: session.TypeSettings, Settings: &session.Settings{NativeRejected: "ck_n"}}, 0)
	in, _ := BuildInput(b.es, InputOptions{Provider: "openai-responses", Model: "m1"})
	if in.Native != nil || !strings.HasPrefix(in.CapsuleText, CapsulePreamble) || reasoningOf(in) == "" {
		t.Fatalf("after refusing the continuation: native %v, reasoning %q", in.Native, reasoningOf(in))
	}
	b.add(session.Entry{Type: session.TypeSettings, Settings: &session.Settings{ReasoningRejected: true}}, 0)
	in, _ = BuildInput(b.es, InputOptions{Provider: "openai-responses", Model: "m1"})
	if reasoningOf(in) != "" {
		t.Fatalf("after refusing the reasoning: %q", reasoningOf(in))
	}
}

// TestResultLineSaysNative_RN1: a completed compaction with a native
// continuation says so at the end of its line, also as a resumed capsule.
func TestResultLineSaysNative_RN1(t *testing.T) {
	r := CompactionResult{Outcome: OutcomeCompleted, Trigger: TriggerUser, TokensBefore: 45210, TokensAfter: 14870, ReclaimedRatio: 0.671, CheckpointID: "ck_8f2a1c", Native: true}
	if got, want := ResultLine(r), "Compacted context · user · 45,210 → 14,870 tokens (67% reclaimed) · ck_8f2a1c · native"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	c := &session.Capsule{CheckpointID: "ck_8f2a1c", Trigger: TriggerUser, TokensBefore: 45210, TokensAfter: 14870, Quality: capsule.QualityFull,
		Native: &capsule.Native{Provider: "anthropic", Model: "m", Items: []byte(`[{"type":"compaction","content":"s"}]`)}}
	if got := CapsuleResult(c).Line; !strings.HasSuffix(got, " · native") {
		t.Errorf("resumed line %q", got)
	}
}
