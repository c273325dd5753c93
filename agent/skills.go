package agent

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/internal/lazyregexp"
	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/workspace"
)

// promptSkills are the skills whose bodies the system prompt carries: those
// active at the model input's base (its capsule's), none before the first
// capsule. A skill activated since is carried by its activate_skill result,
// already in the history, so the system prompt does not change between
// compactions and each request extends the one before it byte for byte
// (prompt caches keep their prefix); the next capsule lists the skill and
// moves it into the system prompt. The request builder, the budget's
// system figure, resume and the offline commands all ask this one function.
func promptSkills(base compaction.Base) []string {
	if base.State == nil {
		return nil
	}
	return base.State.ActiveSkills
}

// activeSkillsOn are the skills active at the end of path: the base's and
// those activated in the model input since, in that order, without repeats
// (from the headers, O(tail)).
func activeSkillsOn(path compaction.Transcript, base compaction.Base) []string {
	out := slices.Clone(promptSkills(base))
	for i := max(base.Start, 0); i < path.Len(); i++ {
		if n := path.Node(i); n.Type == session.TypeToolResult && n.Facts != nil && n.Facts.Skill != "" {
			out = appendUnique(out, n.Facts.Skill)
		}
	}
	return out
}

// Skill is one `.soba/skills/<name>/SKILL.md`.
type Skill struct {
	Name        string
	Description string
	Body        string
}

// skillSet reads the workspace's skills on demand, so a skill added during
// the session can be activated. Every read goes through the workspace's
// door (R-W1): a SKILL.md that links outside, to /dev/zero or is a FIFO is
// refused, and its size is bounded. A nil root has no skills.
type skillSet struct {
	root *workspace.Root
}

// skillsDir is where skills live, relative to the workspace root.
const skillsDir = ".soba/skills"

var skillName = lazyregexp.New(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

func (s *skillSet) load(name string) (Skill, error) {
	if !skillName.MatchString(name) {
		return Skill{}, fmt.Errorf("bad skill name %q", name)
	}
	if s == nil || s.root == nil {
		return Skill{}, fmt.Errorf("no skill %q (no workspace)", name)
	}
	rel := skillsDir + "/" + name + "/SKILL.md"
	data, err := s.root.ReadFile(rel, workspace.MaxSkillBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return Skill{}, fmt.Errorf("no skill %q (looked for %s)", name, rel)
	}
	if err != nil {
		return Skill{}, fmt.Errorf("skill %q: %w", name, err)
	}
	sk := parseSkill(string(data))
	sk.Name = name // the directory names the skill; front matter may not rename it
	return sk, nil
}

// list returns the skills with their descriptions, sorted by name.
func (s *skillSet) list() []Skill {
	if s == nil || s.root == nil {
		return nil
	}
	ents, err := s.root.ReadDir(skillsDir)
	if err != nil {
		return nil
	}
	var out []Skill
	for _, e := range ents {
		if !e.IsDir() || !skillName.MatchString(e.Name()) {
			continue
		}
		if sk, err := s.load(e.Name()); err == nil {
			sk.Body = ""
			out = append(out, sk)
		}
	}
	slices.SortFunc(out, func(a, b Skill) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// parseSkill reads simple `key: value` front matter between --- lines.
func parseSkill(text string) Skill {
	var sk Skill
	text = strings.ReplaceAll(text, "\r\n", "\n")
	if rest, ok := strings.CutPrefix(text, "---\n"); ok {
		if fm, body, ok := strings.Cut(rest, "\n---"); ok {
			for _, line := range strings.Split(fm, "\n") {
				k, v, ok := strings.Cut(line, ":")
				if !ok {
					continue
				}
				v = strings.Trim(strings.TrimSpace(v), `"'`)
				switch strings.TrimSpace(k) {
				case "name":
					sk.Name = v
				case "description":
					sk.Description = v
				}
			}
			text = strings.TrimLeft(strings.TrimPrefix(body, "\n"), "-\n")
		}
	}
	sk.Body = strings.TrimSpace(text)
	return sk
}
