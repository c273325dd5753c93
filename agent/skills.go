package agent

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Skill is one `.soba/skills/<name>/SKILL.md`.
type Skill struct {
	Name        string
	Description string
	Body        string
}

// skillSet reads the workspace's skills on demand, so a skill added during
// the session can be activated.
type skillSet struct {
	dir string // <root>/.soba/skills
}

var skillName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// maxSkillBytes bounds a SKILL.md.
const maxSkillBytes = 256 << 10

func (s *skillSet) load(name string) (Skill, error) {
	if !skillName.MatchString(name) {
		return Skill{}, fmt.Errorf("bad skill name %q", name)
	}
	p := filepath.Join(s.dir, name, "SKILL.md")
	info, err := os.Stat(p)
	if err != nil {
		return Skill{}, fmt.Errorf("no skill %q (looked for .soba/skills/%s/SKILL.md)", name, name)
	}
	if info.Size() > maxSkillBytes {
		return Skill{}, fmt.Errorf("skill %q is %d bytes, over the %d-byte limit", name, info.Size(), maxSkillBytes)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return Skill{}, err
	}
	sk := parseSkill(string(data))
	if sk.Name == "" {
		sk.Name = name
	}
	sk.Name = name // the directory names the skill; front matter may not rename it
	return sk, nil
}

// list returns the skills with their descriptions, sorted by name.
func (s *skillSet) list() []Skill {
	ents, err := os.ReadDir(s.dir)
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
