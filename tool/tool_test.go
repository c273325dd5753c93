package tool

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestNamesMatchProtocol: the tool list is PROTOCOL.md's "Agent tools", in
// its order.
func TestNamesMatchProtocol(t *testing.T) {
	doc, err := os.ReadFile("../../shared/PROTOCOL.md")
	if err != nil {
		t.Skipf("PROTOCOL.md is not next to the repository: %v", err)
	}
	text := string(doc)
	i := strings.Index(text, "## Agent tools")
	if i < 0 {
		t.Fatal(`PROTOCOL.md has no "## Agent tools" section`)
	}
	section := text[i:]
	if j := strings.Index(section[3:], "\n## "); j >= 0 {
		section = section[:j+3]
	}
	var want []string
	for _, m := range regexp.MustCompile("`([a-z_]+) \\{").FindAllStringSubmatch(section, -1) {
		want = append(want, m[1])
	}
	if !slices.Equal(Names, want) {
		t.Errorf("Names = %v, PROTOCOL.md lists %v", Names, want)
	}
}

// TestArtifactOf_RC2: each tool leaves the artifact R-C2 says, and only
// the tools that change the workspace or run a program ask for approval.
func TestArtifactOf_RC2(t *testing.T) {
	tests := []struct {
		name     string
		artifact Artifact
		mutates  bool
	}{
		{ReadFile, FileRead, false},
		{WriteFile, FileModified, true},
		{EditFile, FileModified, true},
		{ListFiles, NoArtifact, false},
		{Grep, NoArtifact, false},
		{Bash, Command, true},
		{Checkpoint, NoArtifact, false},
		{ActivateSkill, Skill, false},
	}
	for _, tt := range tests {
		if got := ArtifactOf(tt.name); got != tt.artifact {
			t.Errorf("ArtifactOf(%s) = %v, want %v", tt.name, got, tt.artifact)
		}
		if got := Mutates(tt.name); got != tt.mutates {
			t.Errorf("Mutates(%s) = %v, want %v", tt.name, got, tt.mutates)
		}
	}
}
