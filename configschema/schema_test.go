package configschema

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDescriptionIsWellFormed(t *testing.T) {
	if _, err := build(Keys); err != nil {
		t.Fatal(err)
	}
}

func TestBuildRejects(t *testing.T) {
	obj := Key{Path: "a", Type: Object, Doc: "d"}
	tests := []struct {
		name string
		keys []Key
		want string
	}{
		{"twice", []Key{obj, obj}, "defined twice"},
		{"no parent", []Key{{Path: "a.b", Type: Bool, Doc: "d"}}, `its object "a" is not defined before it`},
		{"below a leaf", []Key{{Path: "a", Type: Bool, Doc: "d"}, {Path: "a.b", Type: Bool, Doc: "d"}}, "cannot be below"},
		{"no doc", []Key{{Path: "a", Type: Bool}}, "no Doc"},
		{"default of another type", []Key{{Path: "a", Type: Int, Default: "1", Doc: "d"}}, "default: want a whole number"},
		{"default out of range", []Key{{Path: "a", Type: Number, Rule: Ratio, Default: 1.5, Doc: "d"}}, "default: 1.5 is outside 0..1"},
		{"default not a choice", []Key{{Path: "a", Type: String, Enum: []Choice{{Value: "x"}}, Default: "y", Doc: "d"}}, `default: "y" is not one of x`},
		{"map without entries", []Key{{Path: "a", Type: Map, Doc: "d"}}, "has no"},
		{"like a leaf", []Key{{Path: "a", Type: Bool, Doc: "d"}, {Path: "b", Type: Object, Like: "a", Doc: "d"}}, "not a plain object"},
		{"deprecated for nothing", []Key{obj, {Path: "a.b", Type: Int, DeprecatedFor: "c", Doc: "d"}}, "unknown key c"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := build(tc.keys); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("build = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	for path, want := range map[string]string{
		"model.contextWindow":            "model.contextWindow",
		"summaryModel.contextWindow":     "summaryModel.contextWindow",
		"mcpServers.fs.command":          "mcpServers.*.command",
		"mcpServers.*":                   "mcpServers.*",
		"compaction.backgroundTimeoutMs": "compaction.backgroundTimeoutMs",
	} {
		n, ok := Lookup(path)
		if !ok || n.Path != want {
			t.Errorf("Lookup(%q) = %v, %v; want %s", path, n, ok, want)
		}
	}
	if n, _ := Lookup("summaryModel.contextWindow"); n.Default != nil {
		t.Errorf("summaryModel.contextWindow has the default %v; it must come from model", n.Default)
	}
	for _, path := range []string{"model.bogus", "theme", "model.name.x"} {
		if _, ok := Lookup(path); ok {
			t.Errorf("Lookup(%q) found a key", path)
		}
	}
}

// TestDefaultsOnce_RS1: the defaults of SPEC §6 and PROTOCOL.md, as the
// description holds them.
func TestDefaultsOnce_RS1(t *testing.T) {
	var all map[string]any
	if err := DecodeDefaults("", &all); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(all)
	want := `{"compaction":{"auto":true,"autoCompactThresholdRatio":0.8,"compactOnMilestone":true,"compactOnTurnComplete":true,"keepRecentTokens":20000,"minReclaimableTokens":12000,"minSavingsRatio":0.25,"minTokensForAutoCompact":32000,"safetyReserveTokens":8192,"timeoutMs":15000},` +
		`"model":{"apiKeyEnv":"OPENAI_API_KEY","baseURL":"http://127.0.0.1:11434","contextWindow":65000,"maxOutputTokens":8000,"name":"qwen2.5-coder:7b","nativeContinuation":true,"provider":"ollama"},` +
		`"sessionDir":".soba/sessions","sessionOnStart":"resume","tools":{"approval":"ask","autoApprovePaths":[],"maxResultTokens":0}}`
	if string(got) != want {
		t.Fatalf("defaults in use =\n%s\nwant\n%s", got, want)
	}
	if err := DecodeDefaults("model.name", &all); err == nil {
		t.Error("DecodeDefaults of a leaf succeeded")
	}
}

func TestValueSpan(t *testing.T) {
	doc := []byte("{\n  \"a\": [1, {\"configuration\": 0}],\n  \"contributes\": {\n    \"x\": \"}\",\n    \"configuration\":   {\"k\": [1]} ,\n    \"y\": 2\n  }\n}\n")
	start, end, indent, err := valueSpan(doc, "contributes", "configuration")
	if err != nil || string(doc[start:end]) != `{"k": [1]}` || indent != "    " {
		t.Fatalf("valueSpan = %q, indent %q, %v", doc[start:end], indent, err)
	}
	if _, _, _, err := valueSpan(doc, "contributes", "menus"); err == nil {
		t.Error("found a missing key")
	}
}

// TestRepositoryKeys_RW5: the editor settings a repository may not simply
// set, as the editors take them from the description (SPEC R-W5): every
// key that chooses where data or credentials go, starts a program, relaxes
// an approval or raises a limit is among them; compaction tuning and the
// session keys are not.
func TestRepositoryKeys_RW5(t *testing.T) {
	restricted := map[string]bool{}
	for _, name := range VSCodeRepositoryKeys() {
		restricted[name] = true
	}
	for _, name := range []string{"model.provider", "model.baseURL", "model.apiKeyEnv", "model.contextWindow",
		"model.maxOutputTokens", "summaryModel", "tools.approval", "mcpServers"} {
		if !restricted[name] {
			t.Errorf("%s is not a repository key; a workspace's value would reach the server as the user's", name)
		}
	}
	for _, name := range []string{"compaction", "sessionDir", "sessionOnStart"} {
		if restricted[name] {
			t.Errorf("%s is a repository key; a repository may set it", name)
		}
	}
}

// TestVSCodeRestrictedConfigurations_RW5: VS Code's Restricted Mode ignores
// the workspace's value of every setting that names the program the
// extension starts, and of every server key a repository may not simply
// set; those two program settings have machine scope (never a workspace's).
func TestVSCodeRestrictedConfigurations_RW5(t *testing.T) {
	got := VSCodeUntrustedWorkspaces()
	if got[0].Value != "limited" {
		t.Fatalf("supported = %v, want limited", got[0].Value)
	}
	restricted := got[2].Value.([]string)
	want := []string{"soba.serverPath", "soba.serverArgs"}
	for _, name := range VSCodeRepositoryKeys() {
		want = append(want, "soba."+name)
	}
	if strings.Join(restricted, " ") != strings.Join(want, " ") {
		t.Errorf("restrictedConfigurations = %v\nwant %v", restricted, want)
	}
	for _, k := range VSCodeOnly[:2] {
		if k.Scope != "machine" || k.Repository == RepoApplies {
			t.Errorf("soba.%s has scope %q and rule %d, want machine and not RepoApplies", k.Path, k.Scope, k.Repository)
		}
	}
}

// TestRepositoryKeyTable_RW5: the keys that choose where data and
// credentials go, start a program or relax an approval are never the
// repository's until trusted (SPEC R-W5); limits only go down; the user's
// own keys never come from a repository.
func TestRepositoryKeyTable_RW5(t *testing.T) {
	want := map[string]Repo{
		"model.provider": RepoIgnored, "model.baseURL": RepoIgnored, "model.apiKeyEnv": RepoIgnored, "model.name": RepoIgnored,
		"summaryModel": RepoIgnored, "mcpServers": RepoIgnored,
		"model.contextWindow": RepoLowerOnly, "model.maxOutputTokens": RepoLowerOnly,
		"tools.approval": RepoTighten, "model.nativeContinuation": RepoTighten,
		"tools.autoApprovePaths": RepoNever, "workspaceTrusted": RepoNever, "repositorySettings": RepoNever,
		"compaction.keepRecentTokens": RepoApplies, "sessionOnStart": RepoApplies,
	}
	for path, r := range want {
		n, ok := Lookup(path)
		if !ok {
			t.Fatalf("no key %s", path)
		}
		if n.Repository != r {
			t.Errorf("%s: rule %d (%s), want %d", path, n.Repository, n.RepositoryDoc(), r)
		}
	}
	if n, _ := Lookup("tools.approval"); n.Tighter != ApprovalAsk {
		t.Errorf("tools.approval may be tightened to %v, want ask", n.Tighter)
	}
}
