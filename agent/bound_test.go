package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
	"github.com/soba-agent/soba-lsp/compaction/tokens"
	"github.com/soba-agent/soba-lsp/session"
)

// TestPromptSizeDecision_RW7: a text of the user's fits when its tokens and
// the system prompt's are within the hard limit; it is counted only when
// its bytes do not settle it (bytes within the room always fit, since a
// token is at least a byte; more than room×128 bytes never does, since no
// token is longer than 128 bytes), and a refusal names both sizes.
func TestPromptSizeDecision_RW7(t *testing.T) {
	const system, hard = 1000, 11000                                                  // room: 10,000 tokens
	prose := strings.Repeat("Keep functions short and named for what they do. ", 600) // ~30 KB, ~6k tokens
	dense := strings.Repeat("☃", 8000)                                                // 24 KB, 8k+ tokens beyond the room once doubled
	for _, tc := range []struct {
		name    string
		text    string
		counted bool
		refused string // in the error, "" when it fits
	}{
		{"bytes within the room: not counted", strings.Repeat("x", 10000), false, ""},
		{"bytes over the room, tokens within", prose, true, ""},
		{"tokens over the room", dense + dense, true, "tokens (48,000 bytes); with the system prompt's 1,000 tokens that is over the hard limit of 11,000 tokens"},
		{"bytes over room×128: not counted", strings.Repeat("y", 10000*128+1), false, "is at least 10,001 tokens (1,280,001 bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			count := func(s string) int { calls++; return tokens.Default().Count(s) }
			err := checkFits("the prompt", tc.text, system, hard, count)
			if (calls > 0) != tc.counted {
				t.Errorf("counted %d times, want counted=%v", calls, tc.counted)
			}
			var big *PromptTooLargeError
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && (!errors.As(err, &big) || !strings.Contains(err.Error(), tc.refused) || !strings.Contains(err.Error(), "can never be sent")):
				t.Fatalf("error %v, want one saying %q", err, tc.refused)
			}
		})
	}
}

// TestOverHardLimitNeverStored_RW7: a prompt or a loaded capsule that can
// never be sent is refused at once, before anything is stored: the
// transcript is unchanged and the session still takes a prompt that fits.
func TestOverHardLimitNeverStored_RW7(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Counter = tokens.Default() }, providertest.Text("hi"))
	hard := f.agent.opt.Compaction.HardLimit()
	huge := strings.Repeat("word ", hard+10)
	capsuleDoc := "---\nformat: soba-capsule/1\n---\n## Notes\n\n- " + strings.Repeat("note ", hard+10) + "\n"
	if err := os.WriteFile(filepath.Join(f.dir, "big.capsule.md"), []byte(capsuleDoc), 0o644); err != nil {
		t.Fatal(err)
	}
	before := len(f.entries(t))
	for _, tc := range []struct {
		name string
		do   func() error
		what string
	}{
		{"prompt", func() error { _, _, err := f.agent.Prompt(huge); return err }, "the prompt is"},
		{"capsule.load", func() error { _, _, _, err := f.agent.CapsuleLoad("big.capsule.md"); return err }, "the capsule is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			err := tc.do()
			var big *PromptTooLargeError
			if !errors.As(err, &big) || !strings.Contains(err.Error(), tc.what) || big.HardLimit != hard || big.Tokens <= hard-big.System {
				t.Fatalf("error %v, want a PromptTooLargeError over the hard limit %d", err, hard)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("refusal took %v", d)
			}
			if n := len(f.entries(t)); n != before {
				t.Fatalf("the transcript grew from %d to %d entries", before, n)
			}
		})
	}
	turnID, _, err := f.agent.Prompt("hello")
	if err != nil {
		t.Fatalf("a prompt that fits: %v", err)
	}
	f.rec.turnEnd(t, turnID)
	var users int
	for _, e := range f.entries(t) {
		if e.Type == session.TypeUser {
			users++
		}
	}
	if users != 1 {
		t.Fatalf("%d user messages stored, want the one that fits", users)
	}
}
