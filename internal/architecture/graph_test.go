package architecture

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// buildTags are the tags under which every package of the module is listed:
// the Neovim suite's scripted server is built only with sobascripted.
const buildTags = "sobascripted"

// testSupport are the packages that exist for tests only: fakes and harnesses
// that product code never imports. They are drawn apart in the graph and
// TestLayering checks that no product package imports them.
var testSupport = []string{
	"acp/conformance",
	"agent/provider/providertest",
	"agent/provider/providertest/fakemodel",
	"editors/neovim/tests/scriptedlsp",
	"internal/architecture",
	"lsp/conformance",
	"lsp/lsptest",
}

// pkg is one package of the module as `go list` sees it, with paths relative
// to the module path ("agent/provider").
type pkg struct {
	Path     string   // relative import path
	Name     string   // package name
	Imports  []string // the module's packages imported by non-test files, sorted
	External []string // the other modules whose packages it imports, sorted
	Support  bool     // a test support package
}

// graph is the module's import graph.
type graph struct {
	Module string
	Root   string // the module root directory
	Pkgs   []pkg  // sorted by Path
}

func (g *graph) pkg(path string) *pkg {
	i, ok := slices.BinarySearchFunc(g.Pkgs, path, func(p pkg, s string) int { return strings.Compare(p.Path, s) })
	if !ok {
		return nil
	}
	return &g.Pkgs[i]
}

// importedBy lists the packages that import path, sorted.
func (g *graph) importedBy(path string) []string {
	var out []string
	for _, p := range g.Pkgs {
		if slices.Contains(p.Imports, path) {
			out = append(out, p.Path)
		}
	}
	return out
}

var (
	graphOnce sync.Once
	graphVal  *graph
	graphErr  error
)

// loadGraph lists the module's packages once per test binary.
func loadGraph(t *testing.T) *graph {
	t.Helper()
	graphOnce.Do(func() { graphVal, graphErr = listGraph() })
	if graphErr != nil {
		t.Fatal(graphErr)
	}
	return graphVal
}

// moduleRoot walks up from the working directory to the directory of go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// listGraph runs `go list` from the module root. Only the imports of
// non-test files count: a test may reach anything.
func listGraph() (*graph, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	// -deps lists the imported packages too, so each import outside the
	// module is named by its module.
	cmd := exec.Command("go", "list", "-e", "-deps", "-tags", buildTags,
		"-json=ImportPath,Name,Imports,Error,Module,Standard", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, errors.New("go list: " + err.Error() + "\n" + stderr.String())
	}
	type listed struct {
		ImportPath string
		Name       string
		Imports    []string
		Standard   bool
		Error      *struct{ Err string }
		Module     *struct {
			Path string
			Main bool
		}
	}
	var mine []listed
	moduleOf := map[string]string{} // import path → module path, outside the standard library
	g := &graph{Root: root}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var l listed
		if err := dec.Decode(&l); err == io.EOF {
			break
		} else if err != nil {
			return nil, errors.New("go list output: " + err.Error())
		}
		switch {
		case l.Standard:
		case l.Module != nil && l.Module.Main:
			g.Module = l.Module.Path
			mine = append(mine, l)
		case l.Module != nil:
			moduleOf[l.ImportPath] = l.Module.Path
		}
	}
	if g.Module == "" {
		return nil, errors.New("go list: no package of the main module")
	}
	var problems []string
	for _, l := range mine {
		if l.Error != nil {
			problems = append(problems, l.ImportPath+": "+l.Error.Err)
			continue
		}
		rel, _ := relPath(g.Module, l.ImportPath)
		p := pkg{Path: rel, Name: l.Name, Support: slices.Contains(testSupport, rel)}
		for _, imp := range l.Imports {
			if r, ok := relPath(g.Module, imp); ok {
				p.Imports = append(p.Imports, r)
			} else if m, ok := moduleOf[imp]; ok && !slices.Contains(p.External, m) {
				p.External = append(p.External, m)
			}
		}
		slices.Sort(p.Imports)
		slices.Sort(p.External)
		g.Pkgs = append(g.Pkgs, p)
	}
	if len(problems) > 0 {
		return nil, errors.New("go list reports broken packages:\n" + strings.Join(problems, "\n"))
	}
	slices.SortFunc(g.Pkgs, func(a, b pkg) int { return strings.Compare(a.Path, b.Path) })
	return g, nil
}

// relPath is importPath relative to the module path, if it is in the module.
func relPath(module, importPath string) (string, bool) {
	if importPath == module {
		return ".", true
	}
	rest, ok := strings.CutPrefix(importPath, module+"/")
	return rest, ok
}

// TestTestSupportListed keeps the test support list honest: every entry is a
// package of the module.
func TestTestSupportListed(t *testing.T) {
	g := loadGraph(t)
	for _, s := range testSupport {
		if g.pkg(s) == nil {
			t.Errorf("testSupport lists %s, which is not a package of %s", s, g.Module)
		}
	}
}
