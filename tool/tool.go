// Package tool names the agent's tools as the model sees them (PROTOCOL.md
// "Agent tools") and the artifact a successful call of each leaves for the
// capsule (R-C2). The agent that runs the tools, the compaction engine that
// reads their results and the importers that map other agents' tools onto
// SOBA's all use this one list.
package tool

// Tool names the model sees.
const (
	ReadFile      = "read_file"
	WriteFile     = "write_file"
	EditFile      = "edit_file"
	ListFiles     = "list_files"
	Grep          = "grep"
	Bash          = "bash"
	Checkpoint    = "checkpoint"
	ActivateSkill = "activate_skill"
)

// Names lists every tool, in PROTOCOL.md's order.
var Names = []string{ReadFile, WriteFile, EditFile, ListFiles, Grep, Bash, Checkpoint, ActivateSkill}

// Artifact is the kind of exact fact a successful call leaves (R-C2).
type Artifact int

const (
	// NoArtifact: the call leaves nothing for the capsule (list_files, grep, checkpoint).
	NoArtifact Artifact = iota
	// FileRead: the call's path goes under "Files read".
	FileRead
	// FileModified: the call's path goes under "Files modified".
	FileModified
	// Skill: the call's skill name goes under "Active skills".
	Skill
	// Command: the call ran a shell command, which is a verification
	// when it checks the work (tests, build, lint).
	Command
)

// ArtifactOf says which artifact a call of the named tool leaves.
func ArtifactOf(name string) Artifact {
	switch name {
	case ReadFile:
		return FileRead
	case WriteFile, EditFile:
		return FileModified
	case ActivateSkill:
		return Skill
	case Bash:
		return Command
	}
	return NoArtifact
}

// Mutates reports whether a call of the named tool can change the
// workspace or run a program, so it needs the user's approval when
// tools.approval is "ask".
func Mutates(name string) bool {
	return name == WriteFile || name == EditFile || name == Bash
}
