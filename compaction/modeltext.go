package compaction

import "github.com/soba-agent/soba-lsp/capsule"

// ModelText renders a capsule as the model sees it in its input (R-M1).
func ModelText(st capsule.State) string { return capsule.RenderModelText(st) }
