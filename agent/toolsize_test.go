package agent

import (
	"fmt"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/session"
)

// TestResultShareIsAQuarterOfTheHardLimit_RG4: one tool result may take a
// quarter of the hard limit unless tools.maxResultTokens says otherwise,
// never more than the hard limit.
func TestResultShareIsAQuarterOfTheHardLimit_RG4(t *testing.T) {
	c := compaction.DefaultConfig()
	c.ContextWindow, c.MaxOutputTokens, c.SafetyReserveTokens = 20000, 1000, 2000 // hard limit 17000
	tests := []struct{ configured, want int }{
		{0, 4250},
		{3000, 3000},
		{50000, 17000},
		{10, minResultShare},
	}
	for _, tt := range tests {
		if got := resultShare(c, tt.configured); got != tt.want {
			t.Errorf("resultShare(%d) = %d, want %d", tt.configured, got, tt.want)
		}
	}
}

// TestFitKeepsHeadAndTail: a result over its share keeps whole lines from
// its start and its end, says how many lines and bytes were left out, and
// names the saved whole; a result within its share is untouched.
func TestFitKeepsHeadAndTail(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&b, "match %d\n", i)
	}
	long := b.String()
	var saved string
	z := sizer{counter: quarterCounter{}, share: 500, save: func(id, raw string) (string, error) {
		saved = raw
		return ".soba/sessions/s.outputs/x-" + id + ".txt", nil
	}}
	tests := []struct {
		name, content, raw string
		wantSaved          bool
	}{
		{"within its share", "short\n", "", false},
		{"over its share", long, "", true},
		{"within its share, cut by the tool", "head\n[…]\ntail", long, true},
		{"one long line", strings.Repeat("x", 100000), "", true},
	}
	for _, tt := range tests {
		saved = ""
		got := z.fit(session.ToolCall{ID: "c1"}, toolRun{ok: true, content: tt.content, raw: tt.raw})
		if n := (quarterCounter{}).Count(got.content); n > z.share {
			t.Errorf("%s: %d tokens, over the share of %d", tt.name, n, z.share)
		}
		if (saved != "") != tt.wantSaved {
			t.Errorf("%s: saved %d bytes, want saved %v", tt.name, len(saved), tt.wantSaved)
		}
		if !tt.wantSaved && got.content != tt.content {
			t.Errorf("%s: changed to %q", tt.name, got.content)
		}
		if tt.wantSaved && !strings.Contains(got.content, "saved in .soba/sessions/s.outputs/x-c1.txt") {
			t.Errorf("%s: the saved file is not named: %q", tt.name, got.content)
		}
	}
	got := z.fit(session.ToolCall{ID: "c1"}, toolRun{ok: true, content: long})
	if !strings.HasPrefix(got.content, "match 1\n") || !strings.Contains(got.content, "match 5000\n") ||
		!strings.Contains(got.content, " lines (") || saved != long {
		t.Errorf("head and tail: %q", got.content)
	}
}

// TestSavedOutputsAreTheSessions_RW2: the outputs lie in the session
// directory, which no tool may write.
func TestSavedOutputsAreTheSessions_RW2(t *testing.T) {
	dir, ok := outputsDir("/w", "/w/.soba/sessions", "s_1")
	if !ok || dir != ".soba/sessions/s_1.outputs" {
		t.Fatalf("outputsDir = %q, %v", dir, ok)
	}
	if err := protectedPaths("/w", "/w/.soba/sessions", "").check(dir + "/x-c1.txt"); err == nil {
		t.Error("a tool may write a saved output")
	}
	if _, ok := outputsDir("/w", "/elsewhere", "s_1"); ok {
		t.Error("outputs outside the workspace")
	}
}

// TestFitKeepsWhatTheModelSees: a result within its token share but over
// the model input's byte bound is fitted to the bound here, so the
// transcript keeps exactly what the model is sent.
func TestFitKeepsWhatTheModelSees(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&b, "match %d\n", i)
	}
	z := sizer{counter: quarterCounter{}, share: 100000, maxBytes: maxToolResultChars, save: func(string, string) (string, error) {
		return ".soba/sessions/s.outputs/x.txt", nil
	}}
	got := z.fit(session.ToolCall{ID: "c1"}, toolRun{ok: true, content: b.String()})
	if len(got.content) > maxToolResultChars {
		t.Fatalf("%d bytes, over the model input's bound of %d", len(got.content), maxToolResultChars)
	}
	if !strings.HasPrefix(got.content, "match 1\n") || !strings.Contains(got.content, "match 5000\n") || !strings.Contains(got.content, "left out") {
		t.Errorf("head and tail: %q…", got.content[:200])
	}
}
