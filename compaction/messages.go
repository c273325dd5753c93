package compaction

import (
	"fmt"
	"time"

	"github.com/soba-agent/soba-lsp/internal/text"
)

// The reasons a compaction gives the user when it is skipped, fails or
// falls back to a degraded capsule, in one place: each says what happened,
// why, with the figure that matters, and the one thing to do. They end up
// in the R-B3 result line ("Failed: … · hard_limit"), the editors'
// notifications and markers; docs/messages.md lists each with its test.

// ReasonNotSmaller is why a capsule no smaller than the history it would
// replace is not used (R-C7).
func ReasonNotSmaller(after, before int) string {
	return fmt.Sprintf("the summary would take %s tokens, no fewer than the %s tokens of history it would replace, so the history was kept as is; lower `compaction.keepRecentTokens` to let more of it be summarised",
		text.Thousands(after), text.Thousands(before))
}

// ReasonTooLittleFreed is why a soft compaction is skipped when it would
// free too few tokens (R-R2).
func ReasonTooLittleFreed(freed, min int) string {
	return fmt.Sprintf("it would free only %s tokens, less than the %s (`compaction.minReclaimableTokens`) worth a summary; nothing to do, it runs again once more history builds up",
		text.Thousands(max(freed, 0)), text.Thousands(min))
}

// ReasonTooSmallShare is why a soft compaction is skipped when it would
// save too small a share of the context (R-R2).
func ReasonTooSmallShare(ratio, min float64) string {
	return fmt.Sprintf("it would save only %.0f%% of the context, less than the %.0f%% (`compaction.minSavingsRatio`) worth a summary; nothing to do, it runs again once more history builds up",
		100*ratio, 100*min)
}

// ReasonNothingOld is why a compaction is skipped when all of the history
// is in the recent part kept as is.
const ReasonNothingOld = "nothing old enough to compact (all of the history is in the recent part kept as is); nothing to do, it compacts once older history builds up"

// NoticeSummaryTimeout is what the user is told when the summary model did
// not answer in time and the capsule was built without it (R-F1).
func NoticeSummaryTimeout(timeout time.Duration) string {
	return fmt.Sprintf("The summary model did not answer within %s, so SOBA wrote the capsule from the session's own records (degraded: files, checks and your messages are exact, the narrative is brief). Raise `compaction.timeoutMs` or use a faster `summaryModel`.",
		seconds(timeout))
}

// NoticeSummaryFailed is what the user is told when the summary model
// failed and the capsule was built without it (R-F1).
func NoticeSummaryFailed(err string) string {
	return "The summary model failed (" + err + "), so SOBA wrote the capsule from the session's own records (degraded: files, checks and your messages are exact, the narrative is brief). Check `summaryModel` (or `model`) in the settings."
}

// seconds writes a duration as people read it: "15 s", "2.5 s", "500 ms".
func seconds(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d%time.Second == 0:
		return fmt.Sprintf("%d s", d/time.Second)
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}
