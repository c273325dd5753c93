package architecture

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// specRule is one numbered rule of SPEC.md.
type specRule struct {
	ID      string // "R-G4"
	Section string // "5. Triggers"
	Title   string // the rule's first words
}

var (
	// ruleLine is a rule's definition: a list item that starts with its id.
	ruleLine   = regexp.MustCompile(`^- (R-[A-Z]+[0-9]+) (.*)$`)
	ruleID     = regexp.MustCompile(`\bR-[A-Z]+[0-9]+\b`)
	testSuffix = regexp.MustCompile(`_R([A-Z]+)([0-9]+)`)
)

// parseSpec reads the rule ids of SPEC.md in the order they are defined.
func parseSpec(text string) []specRule {
	var rules []specRule
	section := ""
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section = h
			continue
		}
		m := ruleLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rules = append(rules, specRule{ID: m[1], Section: section, Title: ruleTitle(m[2])})
	}
	return rules
}

// ruleTitle is the first sentence of a rule's first line, clipped to a
// table cell.
func ruleTitle(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSuffix(strings.TrimSpace(s), ".")
	const max = 64
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = strings.TrimSpace(string(r[:max-1])) + "…"
		if strings.Count(s, "`")%2 == 1 {
			s += "`"
		}
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

// citations says where the rule ids are cited in the module's Go files.
type citations struct {
	// Code maps a rule id to the packages whose non-test files cite it.
	Code map[string][]string
	// Tests maps a rule id to the test functions that cite it, in their
	// name (the _RG4 suffix), their doc comment or their body, as
	// "package.TestName".
	Tests map[string][]string
}

// scanCitations walks the module's Go files (as go does: no testdata,
// vendor, node_modules, or directories starting with "." or "_") and
// collects the rule ids they cite. Files of test support packages count as
// tests, never as code.
func scanCitations(root string) (*citations, error) {
	c := &citations{Code: map[string][]string{}, Tests: map[string][]string{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || name == "node_modules" ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		isTest := strings.HasSuffix(name, "_test.go")
		if !isTest && !slices.Contains(testSupport, rel) {
			for _, id := range idsIn(f, f.FileStart, f.FileEnd) {
				add(c.Code, id, rel)
			}
			return nil
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !isTestFunc(fn.Name.Name) {
				continue
			}
			ids := idsIn(f, fn.Pos(), fn.End())
			if fn.Doc != nil {
				ids = append(ids, idsIn(f, fn.Doc.Pos(), fn.Doc.End())...)
			}
			for _, m := range testSuffix.FindAllStringSubmatch(fn.Name.Name, -1) {
				ids = append(ids, "R-"+m[1]+m[2])
			}
			for _, id := range ids {
				add(c.Tests, id, rel+"."+fn.Name.Name)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, m := range []map[string][]string{c.Code, c.Tests} {
		for id := range m {
			slices.Sort(m[id])
			m[id] = slices.Compact(m[id])
		}
	}
	return c, nil
}

func isTestFunc(name string) bool {
	for _, prefix := range []string{"Test", "Fuzz", "Benchmark", "Example"} {
		if rest, ok := strings.CutPrefix(name, prefix); ok {
			r, _ := utf8.DecodeRuneInString(rest)
			return rest == "" || r == '_' || !('a' <= r && r <= 'z')
		}
	}
	return false
}

// idsIn lists the rule ids cited in the comments and string literals of f
// between from and to.
func idsIn(f *ast.File, from, to token.Pos) []string {
	var ids []string
	for _, cg := range f.Comments {
		if cg.Pos() >= from && cg.End() <= to {
			for _, cm := range cg.List {
				ids = append(ids, ruleID.FindAllString(cm.Text, -1)...)
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil || n.End() < from || n.Pos() > to {
			return false
		}
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && lit.Pos() >= from && lit.End() <= to {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				ids = append(ids, ruleID.FindAllString(s, -1)...)
			}
		}
		return true
	})
	return ids
}

func add(m map[string][]string, id, where string) {
	m[id] = append(m[id], where)
}

// renderRuleMap writes the table of where each SPEC rule lives.
func renderRuleMap(rules []specRule, c *citations) string {
	var b strings.Builder
	defined := map[string]bool{}
	var inCode, onlyTests, tested, nowhere int
	for _, r := range rules {
		defined[r.ID] = true
		switch {
		case len(c.Code[r.ID]) > 0:
			inCode++
		case len(c.Tests[r.ID]) > 0:
			onlyTests++
		default:
			nowhere++
		}
		if len(c.Tests[r.ID]) > 0 {
			tested++
		}
	}
	fmt.Fprintf(&b, "Generated by `go test ./internal/architecture/` from SPEC.md's rule list and the citations (`R-G4` in a\n")
	fmt.Fprintf(&b, "comment or string, or a test name's `_RG4` suffix) in the module's `.go` files. \"Code\" is the packages whose\n")
	fmt.Fprintf(&b, "non-test files cite the rule; \"Tests\" is the test functions that cite it in their name, doc comment or body.\n\n")
	fmt.Fprintf(&b, "Of %d rules, %d are cited in code, %d only in tests and %d nowhere; %d are named by at least one test.\n",
		len(rules), inCode, onlyTests, nowhere, tested)
	section := ""
	for _, r := range rules {
		if r.Section != section {
			section = r.Section
			fmt.Fprintf(&b, "\n**§%s**\n\n", section)
			b.WriteString("| rule | | code | tests |\n| --- | --- | --- | --- |\n")
		}
		code := "not cited"
		if ps := c.Code[r.ID]; len(ps) > 0 {
			code = "`" + strings.Join(ps, "`, `") + "`"
		}
		tests := "—"
		if ts := c.Tests[r.ID]; len(ts) > 0 {
			tests = groupTests(ts)
		} else if len(c.Code[r.ID]) == 0 {
			tests = "not cited"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.ID, r.Title, code, tests)
	}
	var unknown []string
	for _, m := range []map[string][]string{c.Code, c.Tests} {
		for id := range m {
			if !defined[id] && !slices.Contains(unknown, id) {
				unknown = append(unknown, id)
			}
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		fmt.Fprintf(&b, "\nCited but not defined in SPEC.md: %s.\n", strings.Join(unknown, ", "))
	}
	return b.String()
}

// groupTests writes "pkg.TestA", "pkg.TestB", "other.TestC" as
// "`pkg`: TestA, TestB; `other`: TestC".
func groupTests(ts []string) string {
	var parts []string
	last := ""
	var names []string
	flush := func() {
		if last != "" {
			parts = append(parts, "`"+last+"`: "+strings.Join(names, ", "))
		}
	}
	for _, t := range ts {
		i := strings.LastIndex(t, ".")
		p, n := t[:i], t[i+1:]
		if p != last {
			flush()
			last, names = p, nil
		}
		names = append(names, n)
	}
	flush()
	return strings.Join(parts, "; ")
}
