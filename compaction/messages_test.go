package compaction

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/soba-agent/soba-lsp/internal/msgtable"
)

// compactionMessages are the sentences a user reads about a compaction that
// was skipped, failed or fell back to a degraded capsule, as the code writes
// them (got) and as they should read (want); docs/messages.md quotes them.
func compactionMessages() []struct{ name, got, want string } {
	line := func(trigger, outcome, reason string, asked bool) string {
		return ResultLine(CompactionResult{Trigger: trigger, Outcome: outcome, Reason: reason, SummaryAsked: asked})
	}
	return []struct{ name, got, want string }{
		{"forced, not smaller", line(TriggerHardLimit, OutcomeFailed, ReasonNotSmaller(10251, 10065), true),
			"Failed: the summary would take 10,251 tokens, no fewer than the 10,065 tokens of history it would replace, so the history was kept as is; lower `compaction.keepRecentTokens` to let more of it be summarised · hard_limit"},
		{"asked for, not smaller", line(TriggerUser, OutcomeSkipped, "nothing worth compacting: "+ReasonNotSmaller(2100, 2050), true),
			"Skipped: nothing worth compacting: the summary would take 2,100 tokens, no fewer than the 2,050 tokens of history it would replace, so the history was kept as is; lower `compaction.keepRecentTokens` to let more of it be summarised · user · the summary model was asked"},
		{"soft, too little freed", line(TriggerAutoThreshold, OutcomeSkipped, ReasonTooLittleFreed(640, 1000), true),
			"Skipped: it would free only 640 tokens, less than the 1,000 (`compaction.minReclaimableTokens`) worth a summary; nothing to do, it runs again once more history builds up · auto_threshold · the summary model was asked"},
		{"soft, too small a share", line(TriggerTurnComplete, OutcomeSkipped, ReasonTooSmallShare(0.08, 0.2), true),
			"Skipped: it would save only 8% of the context, less than the 20% (`compaction.minSavingsRatio`) worth a summary; nothing to do, it runs again once more history builds up · turn_complete · the summary model was asked"},
		{"nothing old", line(TriggerUser, OutcomeSkipped, ReasonNothingOld, false),
			"Skipped: nothing old enough to compact (all of the history is in the recent part kept as is); nothing to do, it compacts once older history builds up · user · the summary model was not asked"},
		{"degraded, timeout", NoticeSummaryTimeout(15 * time.Second),
			"The summary model did not answer within 15 s, so SOBA wrote the capsule from the session's own records (degraded: files, checks and your messages are exact, the narrative is brief). Raise `compaction.timeoutMs` or use a faster `summaryModel`."},
		{"degraded, failed", NoticeSummaryFailed("openai: HTTP 500: upstream error"),
			"The summary model failed (openai: HTTP 500: upstream error), so SOBA wrote the capsule from the session's own records (degraded: files, checks and your messages are exact, the narrative is brief). Check `summaryModel` (or `model`) in the settings."},
	}
}

// TestCompactionMessages: the reasons of a skipped or failed compaction and
// the notices of a degraded capsule say what happened, why, the figure and
// the one thing to do (docs/messages.md), and each row of the table that
// names this package is one of them, word for word.
func TestCompactionMessages(t *testing.T) {
	msgs := compactionMessages()
	for _, m := range msgs {
		if m.got != m.want {
			t.Errorf("%s:\n got %q\nwant %q", m.name, m.got, m.want)
		}
	}
	rows, err := msgtable.Read(filepath.Join("..", "docs", "messages.md"))
	if err != nil {
		t.Fatal(err)
	}
	mine := msgtable.Of(rows, "compaction")
	if len(mine) < len(msgs) {
		t.Errorf("docs/messages.md has %d rows of compaction messages, want one for each of the %d", len(mine), len(msgs))
	}
	for _, r := range mine {
		found := false
		for _, m := range msgs {
			found = found || r.Matches(m.got)
		}
		if !found {
			t.Errorf("docs/messages.md:%d: no sentence the compaction writes reads %q", r.Line, r.Message)
		}
	}
}
