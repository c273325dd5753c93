package compaction

import (
	"fmt"
	"strings"

	"github.com/soba-agent/soba-lsp/compaction/capsule"
)

// ModelText renders a capsule as the model sees it. TEMPORARY: replaced by
// capsule.RenderModelText once the capsule format lands.
func ModelText(st capsule.State) string {
	var b strings.Builder
	sec := func(h string, items []string) {
		if len(items) == 0 {
			return
		}
		b.WriteString("## " + h + "\n")
		for _, it := range items {
			b.WriteString("- " + it + "\n")
		}
	}
	if st.Goal != "" {
		b.WriteString("## Goal\n" + st.Goal + "\n")
	}
	sec("Constraints", st.Constraints)
	sec("Done", st.Done)
	sec("In progress", st.InProgress)
	sec("Pending", st.Pending)
	var ds []string
	for _, d := range st.Decisions {
		ds = append(ds, d.Decision+" — "+d.Rationale)
	}
	sec("Decisions", ds)
	sec("Blockers", st.Blockers)
	sec("Next steps", st.NextSteps)
	sec("Notes", st.Notes)
	sec("Files read", st.FilesRead)
	sec("Files modified", st.FilesModified)
	var vs []string
	for _, v := range st.Verification {
		vs = append(vs, fmt.Sprintf("`%s` — %s (exit %d)", v.Command, v.Outcome, v.ExitCode))
	}
	sec("Verification", vs)
	sec("Active skills", st.ActiveSkills)
	sec("User messages", st.UserMessages)
	return b.String()
}
