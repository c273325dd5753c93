package compaction

import (
	"fmt"
	"strings"

	"github.com/soba-agent/soba-lsp/capsule"
)

// MaxMirroredCapsuleBytes bounds a capsule mirrored to Project Memory.
const MaxMirroredCapsuleBytes = 256 << 10

// ShouldMirror is the Project Memory rule of R-C4: only an explicit user
// compact whose capsule passed validation and is not degraded is mirrored.
// Capsules of every other trigger belong to the session only.
func ShouldMirror(trigger, quality string, validationErr error) bool {
	return trigger == TriggerUser && quality == capsule.QualityFull && validationErr == nil
}

// ValidateForMemory checks a capsule before it may enter Project Memory:
// the schema is complete (a goal, and every artifact the session recorded is
// present in the capsule) and the rendered capsule is within size.
func ValidateForMemory(st capsule.State, recorded Extras, renderedBytes int) error {
	var missing []string
	if strings.TrimSpace(st.Goal) == "" {
		return fmt.Errorf("capsule has no goal")
	}
	has := func(list []string, x string) bool {
		for _, y := range list {
			if y == x {
				return true
			}
		}
		return false
	}
	for _, f := range recorded.FilesModified {
		if !has(st.FilesModified, f) {
			missing = append(missing, "modified file "+f)
		}
	}
	for _, f := range recorded.FilesRead {
		if !has(st.FilesRead, f) && !has(st.FilesModified, f) {
			missing = append(missing, "read file "+f)
		}
	}
	for _, s := range recorded.ActiveSkills {
		if !has(st.ActiveSkills, s) {
			missing = append(missing, "skill "+s)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("capsule lacks recorded artifacts: %s", strings.Join(missing, ", "))
	}
	if renderedBytes > MaxMirroredCapsuleBytes {
		return fmt.Errorf("capsule is %d bytes, over the %d-byte limit for Project Memory", renderedBytes, MaxMirroredCapsuleBytes)
	}
	return nil
}
