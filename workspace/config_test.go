package workspace

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/configschema"
)

// wsWith creates a workspace root whose .soba/config.json holds content
// ("" for no file) and returns the root and the file's path.
func wsWith(t *testing.T, content string) (root, file string) {
	t.Helper()
	root = t.TempDir()
	file = WorkspaceConfigFile(root)
	if content != "" {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root, file
}

// trusted are layers whose editor trusts the workspace, so its
// .soba/config.json applies in full (SPEC R-W5) as a layer like any other.
var trusted = Layers{InitOptions: json.RawMessage(`{"workspaceTrusted":true}`)}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestDefaults_RS1(t *testing.T) {
	want := Config{
		Model: ModelConfig{Provider: "ollama", BaseURL: "http://127.0.0.1:11434", Name: "qwen2.5-coder:7b",
			APIKeyEnv: "OPENAI_API_KEY", ContextWindow: 65000, MaxOutputTokens: 8000, NativeContinuation: true},
		Compaction: CompactionConfig{Auto: true, CompactOnTurnComplete: true, CompactOnMilestone: true,
			MinTokensForAutoCompact: 32000, MinReclaimableTokens: 12000, MinSavingsRatio: 0.25, KeepRecentTokens: 20000,
			SafetyReserveTokens: 8192, AutoCompactThresholdRatio: 0.8, TimeoutMs: 15000},
		Tools:      ToolsConfig{Approval: "ask", AutoApprovePaths: []string{}},
		SessionDir: ".soba/sessions", SessionOnStart: "resume",
	}
	if got := DefaultConfig(); !reflect.DeepEqual(got, want) {
		t.Fatalf("DefaultConfig() =\n%+v\nwant\n%+v", got, want)
	}
	root, _ := wsWith(t, "")
	got, warns, err := LoadConfig(root, Layers{UserFile: filepath.Join(root, "no-such.json")})
	if err != nil || len(warns) != 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("LoadConfig with no layers = %+v, %v, %v; want the defaults", got, warns, err)
	}
	// The compaction keys are exactly SPEC §6's: the JSON of the defaults
	// has those names and no others.
	b, _ := json.Marshal(want.Compaction)
	var keys map[string]any
	_ = json.Unmarshal(b, &keys)
	spec := `{"auto":true,"compactOnTurnComplete":true,"compactOnMilestone":true,"minTokensForAutoCompact":32000,"minReclaimableTokens":12000,"minSavingsRatio":0.25,"keepRecentTokens":20000,"safetyReserveTokens":8192,"autoCompactThresholdRatio":0.8,"timeoutMs":15000}`
	var specKeys map[string]any
	_ = json.Unmarshal([]byte(spec), &specKeys)
	if !reflect.DeepEqual(keys, specKeys) {
		t.Fatalf("compaction defaults as JSON = %s, want SPEC §6 %s", b, spec)
	}
}

// TestDefaultsMatchEngine: the engine's own defaults agree with the
// configuration's.
func TestDefaultsMatchEngine(t *testing.T) {
	if got, want := DefaultConfig().EngineConfig(), compaction.DefaultConfig(); got != want {
		t.Fatalf("EngineConfig() = %+v, compaction.DefaultConfig() = %+v", got, want)
	}
}

func TestTimeoutAlias_RS1(t *testing.T) {
	tests := []struct {
		name        string
		user, ws    string
		didChange   string
		want        int
		wantWarning []string
	}{
		{name: "alias alone is accepted", ws: `{"compaction":{"backgroundTimeoutMs":30000}}`, want: 30000,
			wantWarning: []string{"compaction.backgroundTimeoutMs is deprecated; use compaction.timeoutMs"}},
		{name: "timeoutMs wins in one layer", ws: `{"compaction":{"backgroundTimeoutMs":30000,"timeoutMs":5000}}`, want: 5000,
			wantWarning: []string{"deprecated", "ignored: compaction.timeoutMs is set"}},
		{name: "timeoutMs in an earlier layer still wins", user: `{"compaction":{"timeoutMs":7000}}`,
			didChange: `{"compaction":{"backgroundTimeoutMs":30000}}`, want: 7000,
			wantWarning: []string{LayerDidChange + ": compaction.backgroundTimeoutMs is deprecated", "ignored"}},
		{name: "no alias no warning", ws: `{"compaction":{"timeoutMs":9000}}`, want: 9000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root, _ := wsWith(t, tc.ws)
			l := Layers{DidChange: json.RawMessage(tc.didChange)}
			if tc.user != "" {
				l.UserFile = writeFile(t, tc.user)
			}
			c, warns, err := LoadConfig(root, l)
			if err != nil {
				t.Fatal(err)
			}
			if c.Compaction.TimeoutMs != tc.want {
				t.Errorf("timeoutMs = %d, want %d", c.Compaction.TimeoutMs, tc.want)
			}
			all := strings.Join(warns, "\n")
			if len(tc.wantWarning) == 0 && len(warns) != 0 {
				t.Errorf("unexpected warnings: %q", warns)
			}
			for _, w := range tc.wantWarning {
				if !strings.Contains(all, w) {
					t.Errorf("warnings %q lack %q", warns, w)
				}
			}
		})
	}
}

// TestBadValues_RS1: every kind of bad value is an error naming the layer,
// the key path and the problem, and nothing is returned with it.
func TestBadValues_RS1(t *testing.T) {
	tests := []struct {
		name    string
		ws      string
		key     string // the key path named
		problem string // part of the message
	}{
		{"negative", `{"compaction":{"minReclaimableTokens":-5}}`, "compaction.minReclaimableTokens", "-5 is negative"},
		{"ratio above 1", `{"compaction":{"minSavingsRatio":1.5}}`, "compaction.minSavingsRatio", "1.5 is outside 0..1"},
		{"ratio below 0", `{"compaction":{"autoCompactThresholdRatio":-0.1}}`, "compaction.autoCompactThresholdRatio", "outside 0..1"},
		{"zero context window", `{"model":{"contextWindow":0}}`, "model.contextWindow", "must be greater than 0"},
		{"zero timeout", `{"compaction":{"timeoutMs":0}}`, "compaction.timeoutMs", "must be greater than 0"},
		{"output not below window", `{"model":{"contextWindow":8000,"maxOutputTokens":8000}}`, "model.maxOutputTokens", "must be less than model.contextWindow 8000"},
		{"summary output not below window", `{"summaryModel":{"maxOutputTokens":70000}}`, "summaryModel.maxOutputTokens", "must be less than summaryModel.contextWindow 65000"},
		{"hard limit not positive", `{"compaction":{"safetyReserveTokens":57005}}`, "compaction.safetyReserveTokens", "hard limit -5 = model.contextWindow 65000 - model.maxOutputTokens 8000 - compaction.safetyReserveTokens 57005 must be greater than 0"},
		{"keep not below hard limit", `{"compaction":{"keepRecentTokens":48808}}`, "compaction.keepRecentTokens", "48808 must be less than the hard limit 48808"},
		{"keep blamed on the window that shrank", `{"model":{"contextWindow":30000}}`, "model.contextWindow", "compaction.keepRecentTokens 20000 must be less than the hard limit 13808"},
		{"bad provider", `{"model":{"provider":"gemini"}}`, "model.provider", `"gemini" is not one of ollama, openai, anthropic`},
		{"bad approval", `{"tools":{"approval":"always"}}`, "tools.approval", `"always" is not one of ask, auto`},
		{"string for a number", `{"compaction":{"keepRecentTokens":"20000"}}`, "compaction.keepRecentTokens", `want a whole number, got a string "20000"`},
		{"fraction for a count", `{"compaction":{"keepRecentTokens":20000.5}}`, "compaction.keepRecentTokens", "want a whole number"},
		{"string for a bool", `{"compaction":{"auto":"yes"}}`, "compaction.auto", "want true or false"},
		{"array for an object", `{"compaction":[]}`, "compaction", "want an object, got an array"},
		{"number for a string", `{"sessionDir":5}`, "sessionDir", "want a string"},
		{"empty session dir", `{"sessionDir":" "}`, "sessionDir", "must not be empty"},
		{"bad base URL", `{"model":{"baseURL":"127.0.0.1:11434"}}`, "model.baseURL", "not an http:// or https:// URL"},
		{"key instead of variable", `{"model":{"apiKeyEnv":"sk-proj-abcdef123456"}}`, "model.apiKeyEnv", "not an environment variable name"},
		{"unknown top-level key", `{"theme":"dark"}`, "theme", "unknown key; known keys: compaction, mcpServers, model, models, sessionDir, sessionOnStart, summaryModel, tools"},
		{"unknown nested key", `{"compaction":{"keepRecntTokens":100}}`, "compaction.keepRecntTokens", `unknown key (did you mean "keepRecentTokens"?)`},
		{"unknown deep key", `{"model":{"options":{"temperature":0}}}`, "model.options", "unknown key"},
		{"not an object", `[1,2]`, "", "must be a JSON object, got an array"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root, file := wsWith(t, tc.ws)
			// Trusted, so the relations of keys a repository may not set
			// untrusted (summaryModel) are checked too.
			c, warns, err := LoadConfig(root, trusted)
			if err == nil {
				t.Fatalf("LoadConfig accepted %s: %+v", tc.ws, c)
			}
			if !reflect.DeepEqual(c, Config{}) || warns != nil {
				t.Errorf("LoadConfig returned a config with its error: %+v %q", c, warns)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *ConfigError", err)
			}
			if ce.Layer != file || ce.Key != tc.key || !strings.Contains(ce.Problem, tc.problem) {
				t.Errorf("error = %q\nwant layer %s, key %q, problem containing %q", err, file, tc.key, tc.problem)
			}
			prefix := file + ": "
			if tc.key != "" {
				prefix += tc.key + ": "
			}
			if !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("message %q does not start with %q", err, prefix)
			}
		})
	}
}

// TestErrorMessageExample_RS1 is the message form of the brief and docs.
func TestErrorMessageExample_RS1(t *testing.T) {
	root, file := wsWith(t, `{"compaction":{"minSavingsRatio":1.5}}`)
	_, _, err := LoadConfig(root, Layers{})
	if want := file + ": compaction.minSavingsRatio: 1.5 is outside 0..1"; err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %q", err, want)
	}
}

// TestEveryProblemListed_RS1: one load reports every bad value of a file.
func TestEveryProblemListed_RS1(t *testing.T) {
	file := "../testdata/config/bad-values.json"
	_, _, err := LoadConfig(t.TempDir(), Layers{UserFile: file})
	if err == nil {
		t.Fatal("bad-values.json was accepted")
	}
	for _, want := range []string{
		file + ": compaction.keepRecntTokens: unknown key",
		file + ": compaction.minSavingsRatio: 1.5 is outside 0..1",
		file + ": compaction.safetyReserveTokens: -1 is negative",
		file + ": theme: unknown key",
		file + ": tools.approval: \"always\" is not one of ask, auto",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestMalformedJSON_RS1(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"trailing comma", "", "malformed JSON: invalid character '}' looking for beginning of object key string at line 5, column 3"},
		{"cut short", `{"compaction": {"auto": tru`, "malformed JSON: unexpected end of input at line 1, column 28"},
		{"two values", `{} {}`, "malformed JSON: unexpected data after the top-level value at line 1, column 4"},
		{"bare word", `auto: true`, "malformed JSON: invalid character 'a' looking for beginning of value at line 1, column 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := "../testdata/config/malformed.json"
			if tc.text != "" {
				file = writeFile(t, tc.text)
			}
			_, _, err := LoadConfig(t.TempDir(), Layers{UserFile: file})
			if err == nil || !strings.HasPrefix(err.Error(), file+": ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v\nwant %s: …%s", err, file, tc.want)
			}
		})
	}
	// The editor layers are named too.
	_, _, err := LoadConfig(t.TempDir(), Layers{InitOptions: json.RawMessage(`{"model":`)})
	if err == nil || !strings.HasPrefix(err.Error(), LayerInitOptions+": malformed JSON") {
		t.Fatalf("error = %v, want one naming %s", err, LayerInitOptions)
	}
}

// TestBadLaterLayerLeavesNothing_RS1: a valid stack with one bad later layer
// gives no config at all, not the valid part.
func TestBadLaterLayerLeavesNothing_RS1(t *testing.T) {
	root, _ := wsWith(t, `{"compaction":{"keepRecentTokens":8000}}`)
	l := Layers{UserFile: "../testdata/config/user.json",
		InitOptions: json.RawMessage(`{"tools":{"approval":"ask"}}`),
		DidChange:   json.RawMessage(`{"compaction":{"auto":true,"minSavingsRatio":2}}`)}
	c, warns, err := LoadConfig(root, l)
	if err == nil || !strings.Contains(err.Error(), LayerDidChange+": compaction.minSavingsRatio: 2 is outside 0..1") {
		t.Fatalf("error = %v, want the didChange layer's minSavingsRatio named", err)
	}
	if !reflect.DeepEqual(c, Config{}) || warns != nil {
		t.Fatalf("half-applied config returned: %+v", c)
	}
	l.DidChange = nil
	if c, _, err = LoadConfig(root, l); err != nil || c.Compaction.KeepRecentTokens != 8000 || c.Compaction.Auto {
		t.Fatalf("without the bad layer: %+v, %v", c, err)
	}
}

// TestLayerOrder: defaults → user file → workspace file → initializationOptions
// → didChangeConfiguration, each overriding the previous key by key.
func TestLayerOrder(t *testing.T) {
	layers := func(user, ws, init, change string) (string, Layers) {
		root, _ := wsWith(t, ws)
		l := Layers{InitOptions: json.RawMessage(init), DidChange: json.RawMessage(change)}
		if user != "" {
			l.UserFile = writeFile(t, user)
		}
		return root, l
	}
	set := func(n int) string { return `{"compaction":{"keepRecentTokens":` + string(rune('0'+n)) + `000}}` }
	tests := []struct {
		name                 string
		user, ws, init, chng string
		want                 int
	}{
		{"defaults", "", "", "", "", 20000},
		{"user over defaults", set(1), "", "", "", 1000},
		{"workspace over user", set(1), set(2), "", "", 2000},
		{"init options over workspace", set(1), set(2), set(3), "", 3000},
		{"didChange over init options", set(1), set(2), set(3), set(4), 4000},
		{"didChange over user only", set(1), "", "", set(4), 4000},
		{"null resets to the default", set(1), `{"compaction":{"keepRecentTokens":null}}`, "", "", 20000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root, l := layers(tc.user, tc.ws, tc.init, tc.chng)
			c, _, err := LoadConfig(root, l)
			if err != nil {
				t.Fatal(err)
			}
			if c.Compaction.KeepRecentTokens != tc.want {
				t.Errorf("keepRecentTokens = %d, want %d", c.Compaction.KeepRecentTokens, tc.want)
			}
		})
	}
}

// TestLayersMergeKeyByKey: objects merge deeply; a later layer changes only
// the keys it names.
func TestLayersMergeKeyByKey(t *testing.T) {
	root, _ := wsWith(t, "")
	l := Layers{UserFile: "../testdata/config/user.json", WorkspaceFile: "../testdata/config/workspace.json",
		InitOptions: json.RawMessage(`{"model":{"maxOutputTokens":2048},"workspaceTrusted":true}`),
		DidChange:   json.RawMessage(`null`)}
	c, warns, err := LoadConfig(root, l)
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	want.Model = ModelConfig{Provider: "openai", BaseURL: "http://127.0.0.1:8080/v1", Name: "llama3.1:8b",
		APIKeyEnv: "OPENAI_API_KEY", ContextWindow: 32768, MaxOutputTokens: 2048, NativeContinuation: true}
	want.Compaction.Auto = false
	want.Compaction.KeepRecentTokens = 8000
	want.Compaction.TimeoutMs = 20000 // user's timeoutMs beats the workspace's alias
	want.Tools.Approval = "auto"
	want.SessionDir = "transcripts"
	want.WorkspaceTrusted = true
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("merged =\n%+v\nwant\n%+v", c, want)
	}
	if len(warns) != 2 {
		t.Errorf("warnings = %q, want the alias deprecation and its being ignored", warns)
	}
}

func TestSummaryModelDefaultsToModel(t *testing.T) {
	root, _ := wsWith(t, `{"model":{"name":"qwen2.5-coder:32b","contextWindow":128000,"maxOutputTokens":16000},
		"summaryModel":{"name":"qwen2.5-coder:1.5b","contextWindow":32000}}`)
	c, _, err := LoadConfig(root, trusted)
	if err != nil {
		t.Fatal(err)
	}
	want := ModelConfig{Provider: "ollama", BaseURL: "http://127.0.0.1:11434", Name: "qwen2.5-coder:1.5b",
		APIKeyEnv: "OPENAI_API_KEY", ContextWindow: 32000, MaxOutputTokens: 16000, NativeContinuation: true}
	if c.SummaryModel == nil || *c.SummaryModel != want || c.Summary() != want {
		t.Fatalf("summaryModel = %+v, want %+v (unset keys from model)", c.SummaryModel, want)
	}
	if d := DefaultConfig(); d.SummaryModel != nil || d.Summary() != d.Model {
		t.Fatalf("default summary model = %+v, want the model", d.Summary())
	}
}

func TestHardLimitExample_RG4(t *testing.T) {
	tests := []struct{ window, output, reserve, want int }{
		{65000, 8000, 8192, 48808},
		{128000, 16000, 8192, 103808},
		{32768, 4096, 0, 28672},
	}
	for _, tc := range tests {
		c := DefaultConfig()
		c.Model.ContextWindow, c.Model.MaxOutputTokens, c.Compaction.SafetyReserveTokens = tc.window, tc.output, tc.reserve
		if got := c.HardLimit(); got != tc.want {
			t.Errorf("HardLimit(%d/%d/%d) = %d, want %d", tc.window, tc.output, tc.reserve, got, tc.want)
		}
		if got := c.EngineConfig().HardLimit(); got != tc.want {
			t.Errorf("engine HardLimit(%d/%d/%d) = %d, want %d", tc.window, tc.output, tc.reserve, got, tc.want)
		}
	}
}

func TestSoftLimitExample_RS2(t *testing.T) {
	tests := []struct {
		name               string
		window, minTokens  int
		ratio              float64
		wantHard, wantSoft int
	}{
		{"spec example", 65000, 32000, 0.8, 48808, 39046},            // floor(48808*0.8) = 39046
		{"floor of minTokens", 65000, 45000, 0.5, 48808, 45000},      // max picks minTokensForAutoCompact
		{"capped below hard limit", 65000, 60000, 0.8, 48808, 48807}, // min(hard-1, …)
		{"ratio 1", 65000, 0, 1, 48808, 48807},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Model.ContextWindow, c.Compaction.MinTokensForAutoCompact, c.Compaction.AutoCompactThresholdRatio = tc.window, tc.minTokens, tc.ratio
			if h, s := c.HardLimit(), c.SoftLimit(); h != tc.wantHard || s != tc.wantSoft {
				t.Errorf("hard, soft = %d, %d; want %d, %d", h, s, tc.wantHard, tc.wantSoft)
			}
			if s := c.EngineConfig().SoftLimit(); s != tc.wantSoft {
				t.Errorf("engine soft = %d, want %d", s, tc.wantSoft)
			}
		})
	}
}

// TestLimitsFromActiveModel_RS3: the window and output limit of the limits
// are the active model's, never the summary model's.
func TestLimitsFromActiveModel_RS3(t *testing.T) {
	root, _ := wsWith(t, `{"model":{"contextWindow":128000,"maxOutputTokens":16000},
		"summaryModel":{"contextWindow":8192,"maxOutputTokens":1024}}`)
	c, _, err := LoadConfig(root, trusted)
	if err != nil {
		t.Fatal(err)
	}
	if h := c.HardLimit(); h != 128000-16000-8192 {
		t.Fatalf("HardLimit = %d, want the active model's %d", h, 128000-16000-8192)
	}
	if e := c.EngineConfig(); e.ContextWindow != 128000 || e.MaxOutputTokens != 16000 {
		t.Fatalf("EngineConfig window/output = %d/%d, want 128000/16000", e.ContextWindow, e.MaxOutputTokens)
	}
}

func TestUserConfigFile(t *testing.T) {
	tests := []struct {
		name, xdg, home, want string
		err                   bool
	}{
		{"xdg", "/x/cfg", "/home/u", "/x/cfg/soba/config.json", false},
		{"home", "", "/home/u", "/home/u/.config/soba/config.json", false},
		{"relative xdg ignored", "cfg", "/home/u", "/home/u/.config/soba/config.json", false},
		{"neither", "", "", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"XDG_CONFIG_HOME": tc.xdg, "HOME": tc.home}
			got, err := UserConfigFile(func(k string) string { return env[k] })
			if got != tc.want || (err != nil) != tc.err {
				t.Errorf("UserConfigFile = %q, %v; want %q (error %v)", got, err, tc.want, tc.err)
			}
		})
	}
	// StandardLayers reads the environment.
	t.Setenv("XDG_CONFIG_HOME", "/x/cfg")
	if l := StandardLayers("/ws", nil, nil); l.UserFile != "/x/cfg/soba/config.json" || l.WorkspaceFile != "/ws/.soba/config.json" {
		t.Errorf("StandardLayers = %+v", l)
	}
}

func TestUnreadableFileNamed(t *testing.T) {
	dir := t.TempDir() // a directory is not a readable file
	_, _, err := LoadConfig(t.TempDir(), Layers{UserFile: dir})
	if err == nil || !strings.HasPrefix(err.Error(), dir+": cannot read") {
		t.Fatalf("error = %v, want one naming %s", err, dir)
	}
}

func TestEmptyFileIsNoLayer(t *testing.T) {
	root, _ := wsWith(t, "\n  \n")
	c, _, err := LoadConfig(root, Layers{})
	if err != nil || !reflect.DeepEqual(c, DefaultConfig()) {
		t.Fatalf("empty file: %+v, %v", c, err)
	}
}

func TestWholeNumbersInOtherForms(t *testing.T) {
	root, _ := wsWith(t, `{"compaction":{"keepRecentTokens":1e4,"minReclaimableTokens":6000.0}}`)
	c, _, err := LoadConfig(root, Layers{})
	if err != nil || c.Compaction.KeepRecentTokens != 10000 || c.Compaction.MinReclaimableTokens != 6000 {
		t.Fatalf("got %+v, %v", c.Compaction, err)
	}
}

func TestResolveSessionDir(t *testing.T) {
	home, _ := os.UserHomeDir()
	tests := []struct{ dir, want string }{
		{".soba/sessions", "/ws/.soba/sessions"},
		{"", "/ws/.soba/sessions"},
		{"/var/soba/", "/var/soba"},
		{"~/soba", filepath.Join(home, "soba")},
	}
	for _, tc := range tests {
		c := Config{SessionDir: tc.dir}
		if got := c.ResolveSessionDir("/ws"); got != tc.want {
			t.Errorf("ResolveSessionDir(%q) = %q, want %q", tc.dir, got, tc.want)
		}
	}
}

// TestConfigTypesMatchSchema: the typed configuration has a field for every
// key of configschema's description that this version uses, and no other;
// summaryModel has model's fields.
func TestConfigTypesMatchSchema(t *testing.T) {
	var fields []string
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for f := range typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue // what the loader reports, not a key
			}
			path := join(prefix, name)
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				walk(path, ft)
				continue
			}
			fields = append(fields, path)
		}
	}
	walk("", reflect.TypeFor[Config]())

	var keys []string
	var keysOf func(prefix string, n *configschema.Node)
	keysOf = func(prefix string, n *configschema.Node) {
		for _, name := range n.Order {
			c := n.Children[name]
			if c.Planned != "" || c.DeprecatedFor != "" || c.Editor {
				continue
			}
			if c.Type == configschema.Object {
				keysOf(join(prefix, name), c)
				continue
			}
			keys = append(keys, join(prefix, name))
		}
	}
	keysOf("", configschema.Root())
	slices.Sort(fields)
	slices.Sort(keys)
	if !slices.Equal(fields, keys) {
		t.Fatalf("Config's JSON fields\n%q\ndiffer from the description's keys in use\n%q", fields, keys)
	}
}

// TestPlannedKeysAccepted: the keys PROTOCOL.md lists that this version
// does not use yet are checked and accepted with a warning saying so, and
// change nothing else; model.nativeContinuation and the provider
// openai-responses are in use (SPEC §11) and load without a warning.
func TestPlannedKeysAccepted(t *testing.T) {
	root, _ := wsWith(t, `{"model":{"nativeContinuation":false,"provider":"openai-responses","baseURL":"https://api.openai.com/v1"},
		"summaryModel":{"nativeContinuation":true},
		"mcpServers":{"fs":{"command":"npx","args":["-y","mcp-fs"],"env":{"A":"b"}},
			"web":{"type":"http","url":"https://mcp.example.com/mcp","headers":{"Authorization":"Bearer x"}}}}`)
	c, warns, err := LoadConfig(root, trusted)
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	want.MCPServers = map[string]MCPServerConfig{
		"fs":  {Command: "npx", Args: []string{"-y", "mcp-fs"}, Env: map[string]string{"A": "b"}},
		"web": {Type: "http", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer x"}},
	}
	want.Model.Provider, want.Model.BaseURL, want.Model.NativeContinuation = "openai-responses", "https://api.openai.com/v1", false
	sm := want.Model
	sm.NativeContinuation = true
	want.SummaryModel = &sm
	want.WorkspaceTrusted = true
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("config = %+v, want %+v", c, want)
	}
	all := strings.Join(warns, "\n")
	if strings.Contains(all, "mcpServers") || strings.Contains(all, "nativeContinuation") {
		t.Errorf("mcpServers and nativeContinuation are used now (issues 17, 18), yet warned about:\n%s", all)
	}
	if len(warns) != 0 {
		t.Errorf("warnings = %q, want none: no key is planned now (sessionOnStart is used since issue 19)", warns)
	}
}

func TestPlannedKeysChecked(t *testing.T) {
	tests := []struct{ ws, key, problem string }{
		{`{"sessionOnStart":"later"}`, "sessionOnStart", `"later" is not one of resume, new`},
		{`{"model":{"nativeContinuation":"yes"}}`, "model.nativeContinuation", "want true or false"},
		{`{"mcpServers":[]}`, "mcpServers", "want an object, got an array"},
		{`{"mcpServers":{"fs":"npx"}}`, "mcpServers.fs", "want an object, got a string"},
		{`{"mcpServers":{"fs":{"args":["a",1]}}}`, "mcpServers.fs.args", "want an array of strings"},
		{`{"mcpServers":{"fs":{"env":{"A":1}}}}`, "mcpServers.fs.env", "want an object of strings"},
		{`{"mcpServers":{"web":{"type":"websocket"}}}`, "mcpServers.web.type", `"websocket" is not one of stdio, http, sse`},
		{`{"mcpServers":{"web":{"url":"mcp.example.com"}}}`, "mcpServers.web.url", "not an http:// or https:// URL"},
		{`{"mcpServers":{"fs":{"cmd":"npx"}}}`, "mcpServers.fs.cmd", "unknown key; known keys: approval, args, command, env, headers, type, url"},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			root, file := wsWith(t, tc.ws)
			_, _, err := LoadConfig(root, Layers{})
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Layer != file || ce.Key != tc.key || !strings.Contains(ce.Problem, tc.problem) {
				t.Fatalf("error = %v, want %s: %s: …%s", err, file, tc.key, tc.problem)
			}
		})
	}
}

// TestNamedModels_RS1: `models` holds the user's named models; `model` and
// `summaryModel` pick one by name, the inline object still works, a later
// layer's object applies over a pick, and a name not among models is an
// error naming the ones that are.
func TestNamedModels_RS1(t *testing.T) {
	models := `"models":{"fast":{"provider":"openai","baseURL":"http://127.0.0.1:8080/v1","name":"f","contextWindow":32000,"maxOutputTokens":2000},
		"small":{"name":"s"}}`
	tests := []struct {
		name, user, editor string
		want, wantErr      string
	}{
		{name: "inline object", user: `{` + models + `,"model":{"name":"inline"}}`, want: "inline  ollama  inline"},
		{name: "pick by name", user: `{` + models + `,"model":"fast"}`, want: "f fast openai  f"},
		{name: "summary by name over defaults", user: `{` + models + `,"model":"fast","summaryModel":"small"}`, want: "f fast openai small s"},
		{name: "later object over a pick", user: `{` + models + `,"model":"fast"}`, editor: `{"model":{"contextWindow":31000}}`, want: "f fast openai  f"},
		{name: "later pick over an object", user: `{` + models + `,"model":{"name":"inline"}}`, editor: `{"model":"small"}`, want: "s small ollama  s"},
		{name: "unknown name", user: `{` + models + `,"model":"huge"}`, wantErr: `"huge" is not one of models (known: fast, small)`},
		{name: "no models", user: `{"summaryModel":"fast"}`, wantErr: `"fast" is not one of models (none are defined`},
		{name: "empty name", user: `{"model":" "}`, wantErr: "must be an object or the name of one of models"},
		{name: "a number is neither", user: `{"model":3}`, wantErr: "want an object or the name of one of models"},
		{name: "a model's limits checked", user: `{"models":{"x":{"contextWindow":1000,"maxOutputTokens":2000}}}`, wantErr: "models.x.maxOutputTokens 2000 must be less than models.x.contextWindow 1000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root, _ := wsWith(t, "")
			l := Layers{UserFile: writeFile(t, tc.user)}
			if tc.editor != "" {
				l.InitOptions = json.RawMessage(tc.editor)
			}
			c, _, err := LoadConfig(root, l)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join([]string{c.Model.Name, c.ModelName, c.Model.Provider, c.SummaryModelName, c.Summary().Name}, " ")
			if got != tc.want {
				t.Errorf("model name, pick, provider, summary pick, summary name = %q, want %q", got, tc.want)
			}
			if tc.name == "later object over a pick" && c.Model.ContextWindow != 31000 {
				t.Errorf("contextWindow = %d, want the later layer's 31000", c.Model.ContextWindow)
			}
		})
	}
}
