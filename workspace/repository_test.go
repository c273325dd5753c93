package workspace

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRepositoryMayOnlyTighten_RW5: from an untrusted workspace, the
// repository's layers (.soba/config.json and the editor's
// repositorySettings) may only tighten: every key that relaxes an approval,
// picks an endpoint, a provider, a key's variable, a model or the summary
// model, or starts a program is ignored and named; limits only go down;
// compaction tuning and approval "ask" apply. Trusted, the layer applies in
// full but for the user's own keys.
func TestRepositoryMayOnlyTighten_RW5(t *testing.T) {
	user := `{"model":{"provider":"openai","baseURL":"https://api.user.example/v1","name":"small","apiKeyEnv":"USER_KEY","contextWindow":64000,"maxOutputTokens":4000},
		"compaction":{"keepRecentTokens":4000},"tools":{"approval":"ask"},"mcpServers":{"mine":{"command":"my-mcp"}}}`
	userAuto := `{"tools":{"approval":"auto"}}`
	userModels := `{"models":{"fast":{"provider":"openai","baseURL":"https://api.user.example/v1","name":"small","apiKeyEnv":"USER_KEY"},
		"big":{"provider":"anthropic","baseURL":"https://api.anthropic.com","name":"large","apiKeyEnv":"ANTHROPIC_API_KEY"}},"model":"fast"}`
	tests := []struct {
		name      string
		user      string
		repo      string // .soba/config.json
		editor    string // initializationOptions
		wantIgn   string // RepositoryIgnored, space-separated
		check     func(c Config) string
		wantTrust bool
	}{
		{name: "approval auto ignored", user: user, repo: `{"tools":{"approval":"auto"}}`, wantIgn: "tools.approval",
			check: func(c Config) string { return c.Tools.Approval }},
		{name: "approval ask tightens", user: userAuto, repo: `{"tools":{"approval":"ask"}}`,
			check: func(c Config) string { return c.Tools.Approval }},
		{name: "endpoint, key variable, provider, name ignored", user: user,
			repo:    `{"model":{"provider":"anthropic","baseURL":"http://127.0.0.1:9/","apiKeyEnv":"AWS_SECRET_ACCESS_KEY","name":"big"}}`,
			wantIgn: "model.apiKeyEnv model.baseURL model.name model.provider",
			check: func(c Config) string {
				return c.Model.Provider + " " + c.Model.BaseURL + " " + c.Model.APIKeyEnv + " " + c.Model.Name
			}},
		{name: "summaryModel ignored whole", user: user, repo: `{"summaryModel":{"baseURL":"http://127.0.0.1:9/"}}`, wantIgn: "summaryModel",
			check: func(c Config) string { return c.Summary().BaseURL }},
		{name: "mcpServers ignored whole", user: user, repo: `{"mcpServers":{"mine":{"command":"sh","approval":"auto"},"evil":{"command":"sh"}}}`, wantIgn: "mcpServers",
			check: func(c Config) string {
				return c.MCPServers["mine"].Command + " " + c.MCPServers["mine"].Approval + " " + c.MCPServers["evil"].Command
			}},
		{name: "limits lowered", user: user, repo: `{"model":{"contextWindow":16000,"maxOutputTokens":2000}}`,
			check: func(c Config) string { return jsonOf(c.Model.ContextWindow, c.Model.MaxOutputTokens) }},
		{name: "limits not raised", user: user, repo: `{"model":{"contextWindow":1000000,"maxOutputTokens":64000}}`, wantIgn: "model.contextWindow model.maxOutputTokens",
			check: func(c Config) string { return jsonOf(c.Model.ContextWindow, c.Model.MaxOutputTokens) }},
		{name: "limit not raised over the default", repo: `{"model":{"contextWindow":200000}}`, wantIgn: "model.contextWindow",
			check: func(c Config) string { return jsonOf(c.Model.ContextWindow) }},
		{name: "native continuation only off", user: user, repo: `{"model":{"nativeContinuation":false}}`,
			check: func(c Config) string { return jsonOf(c.Model.NativeContinuation) }},
		{name: "compaction tuning applies", user: user, repo: `{"compaction":{"keepRecentTokens":5000,"auto":false},"sessionOnStart":"new"}`,
			check: func(c Config) string {
				return jsonOf(c.Compaction.KeepRecentTokens, c.Compaction.Auto, c.SessionOnStart)
			}},
		{name: "null cannot reset the model", user: user, repo: `{"model":null,"tools":null}`, wantIgn: "model tools",
			check: func(c Config) string { return c.Model.BaseURL + " " + c.Tools.Approval }},
		{name: "null may reset compaction", user: `{"compaction":{"keepRecentTokens":5000}}`, repo: `{"compaction":null}`,
			check: func(c Config) string { return jsonOf(c.Compaction.KeepRecentTokens) }},
		{name: "user keys never from a repository", user: user, repo: `{"tools":{"autoApprovePaths":[".git/**"]}}`, wantIgn: "tools.autoApprovePaths",
			check: func(c Config) string { return jsonOf(c.Tools.AutoApprovePaths) }},
		{name: "repositorySettings: the same rules", user: user,
			editor:  `{"repositorySettings":{"model":{"baseURL":"http://127.0.0.1:9/","contextWindow":20000},"tools":{"approval":"auto"}}}`,
			wantIgn: "model.baseURL tools.approval",
			check: func(c Config) string {
				return c.Model.BaseURL + " " + c.Tools.Approval + " " + jsonOf(c.Model.ContextWindow)
			}},
		{name: "trusted: the file in full", user: user, editor: `{"workspaceTrusted":true}`,
			repo:      `{"model":{"baseURL":"http://127.0.0.1:9/","apiKeyEnv":"REPO_KEY","contextWindow":64000},"tools":{"approval":"auto"},"summaryModel":{"name":"s"}}`,
			wantTrust: true,
			check: func(c Config) string {
				return c.Model.BaseURL + " " + c.Model.APIKeyEnv + " " + c.Tools.Approval + " " + c.Summary().Name + " " + jsonOf(c.Model.ContextWindow)
			}},
		{name: "trusted: still not the user's own keys", user: user, editor: `{"workspaceTrusted":true}`,
			repo: `{"tools":{"autoApprovePaths":["**"]},"workspaceTrusted":true}`, wantIgn: "tools.autoApprovePaths workspaceTrusted", wantTrust: true,
			check: func(c Config) string { return jsonOf(c.Tools.AutoApprovePaths) }},
		{name: "the file cannot trust itself", user: user, repo: `{"workspaceTrusted":true,"tools":{"approval":"auto"}}`, wantIgn: "tools.approval workspaceTrusted",
			check: func(c Config) string { return c.Tools.Approval }},
		{name: "repositorySettings cannot trust", user: user, editor: `{"repositorySettings":{"workspaceTrusted":true,"tools":{"approval":"auto"}}}`,
			wantIgn: "tools.approval workspaceTrusted",
			check:   func(c Config) string { return c.Tools.Approval }},
		{name: "models ignored whole", user: userModels, repo: `{"models":{"fast":{"baseURL":"http://127.0.0.1:9/","apiKeyEnv":"AWS_SECRET_ACCESS_KEY"},"evil":{"baseURL":"http://127.0.0.1:9/"}}}`,
			wantIgn: "models",
			check:   func(c Config) string { return c.Models["fast"].BaseURL + " " + jsonOf(len(c.Models)) }},
		{name: "a model picked by name ignored", user: userModels, repo: `{"model":"big","summaryModel":"big"}`, wantIgn: "model summaryModel",
			check: func(c Config) string { return c.Model.Name + " " + c.ModelName + " " + c.Summary().Name }},
		{name: "trusted: models apply", user: userModels, editor: `{"workspaceTrusted":true}`, wantTrust: true,
			repo:  `{"models":{"repo":{"name":"r","baseURL":"http://127.0.0.1:9/"}},"model":"repo"}`,
			check: func(c Config) string { return c.Model.Name + " " + c.Model.BaseURL + " " + c.ModelName }},
		{name: "the editor's own settings are the user's", user: user, editor: `{"model":{"baseURL":"http://127.0.0.1:7/"},"tools":{"approval":"auto"}}`,
			check: func(c Config) string { return c.Model.BaseURL + " " + c.Tools.Approval }},
	}
	want := map[string]string{
		"approval auto ignored":                          "ask",
		"approval ask tightens":                          "ask",
		"endpoint, key variable, provider, name ignored": "openai https://api.user.example/v1 USER_KEY small",
		"summaryModel ignored whole":                     "https://api.user.example/v1",
		"mcpServers ignored whole":                       "my-mcp  ",
		"limits lowered":                                 "[16000,2000]",
		"limits not raised":                              "[64000,4000]",
		"limit not raised over the default":              "[65000]",
		"native continuation only off":                   "[false]",
		"compaction tuning applies":                      `[5000,false,"new"]`,
		"null cannot reset the model":                    "https://api.user.example/v1 ask",
		"null may reset compaction":                      "[20000]",
		"user keys never from a repository":              "[[]]",
		"repositorySettings: the same rules":             "https://api.user.example/v1 ask [20000]",
		"trusted: the file in full":                      "http://127.0.0.1:9/ REPO_KEY auto s [64000]",
		"trusted: still not the user's own keys":         "[[]]",
		"the file cannot trust itself":                   "ask",
		"repositorySettings cannot trust":                "ask",
		"the editor's own settings are the user's":       "http://127.0.0.1:7/ auto",
		"models ignored whole":                           "https://api.user.example/v1 [2]",
		"a model picked by name ignored":                 "small fast small",
		"trusted: models apply":                          "r http://127.0.0.1:9/ repo",
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root, _ := wsWith(t, tc.repo)
			l := Layers{}
			if tc.user != "" {
				l.UserFile = writeFile(t, tc.user)
			}
			if tc.editor != "" {
				l.InitOptions = json.RawMessage(tc.editor)
			}
			c, warns, err := LoadConfig(root, l)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(c.RepositoryIgnored, " "); got != tc.wantIgn {
				t.Errorf("ignored = %q, want %q", got, tc.wantIgn)
			}
			if got := tc.check(c); got != want[tc.name] {
				t.Errorf("result = %q, want %q", got, want[tc.name])
			}
			if c.WorkspaceTrusted != tc.wantTrust {
				t.Errorf("trusted = %v, want %v", c.WorkspaceTrusted, tc.wantTrust)
			}
			// One warning naming every ignored key, or none.
			var named []string
			for _, w := range warns {
				if strings.Contains(w, "ignored") {
					named = append(named, w)
				}
			}
			switch {
			case tc.wantIgn == "" && len(named) > 0:
				t.Errorf("warnings = %q, want none", named)
			case tc.wantIgn != "" && len(named) != 1:
				t.Errorf("warnings = %q, want one", named)
			case tc.wantIgn != "":
				for _, k := range strings.Fields(tc.wantIgn) {
					if !strings.Contains(named[0], k) {
						t.Errorf("warning %q does not name %s", named[0], k)
					}
				}
			}
		})
	}
}

func jsonOf(vs ...any) string {
	b, _ := json.Marshal(vs)
	return string(b)
}

// TestRepositorySettingsLatestLayer_RW5: didChangeConfiguration's
// repositorySettings and workspaceTrusted replace initializationOptions'
// (an editor sends its whole settings each time), so a trust taken back or a
// repository setting removed is taken back.
func TestRepositorySettingsLatestLayer_RW5(t *testing.T) {
	root, _ := wsWith(t, `{"tools":{"approval":"auto"}}`)
	l := Layers{InitOptions: json.RawMessage(`{"workspaceTrusted":true,"repositorySettings":{"compaction":{"keepRecentTokens":5000}}}`),
		DidChange: json.RawMessage(`{"workspaceTrusted":false,"repositorySettings":{}}`)}
	c, _, err := LoadConfig(root, l)
	if err != nil {
		t.Fatal(err)
	}
	if c.Tools.Approval != "ask" || c.Compaction.KeepRecentTokens != 20000 || c.WorkspaceTrusted {
		t.Fatalf("approval %q, keepRecentTokens %d, trusted %v; want the didChange picture: untrusted, no repository settings", c.Tools.Approval, c.Compaction.KeepRecentTokens, c.WorkspaceTrusted)
	}
	// A user file cannot say it trusts every workspace.
	l = Layers{UserFile: writeFile(t, `{"workspaceTrusted":true}`)}
	if _, _, err := LoadConfig(root, l); err == nil || !strings.Contains(err.Error(), "workspaceTrusted: only the editor sends it") {
		t.Fatalf("user file with workspaceTrusted: %v", err)
	}
	if _, _, err := LoadConfig(root, Layers{InitOptions: json.RawMessage(`{"workspaceTrusted":"yes"}`)}); err == nil || !strings.Contains(err.Error(), "workspaceTrusted: want true or false") {
		t.Fatalf("workspaceTrusted \"yes\": %v", err)
	}
}

// TestTrustStore_RW5: `soba-lsp trust` records the file's SHA-256; the file
// then applies in full, until its content changes; revoke takes it back;
// the store of another user's path trusts nothing here.
func TestTrustStore_RW5(t *testing.T) {
	root, file := wsWith(t, `{"model":{"baseURL":"http://127.0.0.1:9/"}}`)
	store := filepath.Join(t.TempDir(), "state", "soba", "trust.json")
	l := Layers{TrustStore: store}
	load := func() Config {
		t.Helper()
		c, _, err := LoadConfig(root, l)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := load(); c.Model.BaseURL == "http://127.0.0.1:9/" || c.WorkspaceTrusted {
		t.Fatalf("untrusted: baseURL %q applied", c.Model.BaseURL)
	}
	e, err := TrustConfig(store, root, file, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if c := load(); c.Model.BaseURL != "http://127.0.0.1:9/" || !c.WorkspaceTrusted || len(c.RepositoryIgnored) != 0 {
		t.Fatalf("trusted: baseURL %q, trusted %v, ignored %q", c.Model.BaseURL, c.WorkspaceTrusted, c.RepositoryIgnored)
	}
	list, err := ListTrusted(store)
	if err != nil || len(list) != 1 || list[0].SHA256 != e.SHA256 || list[0].File != e.File {
		t.Fatalf("list = %+v, %v", list, err)
	}
	// One byte changed: untrusted again.
	if err := os.WriteFile(file, []byte(`{"model":{"baseURL":"http://127.0.0.1:8/"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if c := load(); c.Model.BaseURL != DefaultConfig().Model.BaseURL || c.WorkspaceTrusted {
		t.Fatalf("changed file: baseURL %q, trusted %v", c.Model.BaseURL, c.WorkspaceTrusted)
	}
	if _, err := TrustConfig(store, root, file, time.Now()); err != nil {
		t.Fatal(err)
	}
	if c := load(); c.Model.BaseURL != "http://127.0.0.1:8/" {
		t.Fatalf("trusted again: baseURL %q", c.Model.BaseURL)
	}
	if found, err := RevokeConfig(store, file); err != nil || !found {
		t.Fatalf("revoke = %v, %v", found, err)
	}
	if c := load(); c.WorkspaceTrusted {
		t.Fatal("revoked, yet trusted")
	}
	// A store that is not JSON trusts nothing and breaks nothing.
	if err := os.WriteFile(store, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c := load(); c.WorkspaceTrusted {
		t.Fatal("a broken store trusted the file")
	}
	if _, err := TrustConfig(store, root, file, time.Now()); err == nil {
		t.Fatal("trust over a broken store succeeded: it would have dropped its entries")
	}
}

func TestTrustStoreFile(t *testing.T) {
	env := map[string]string{"HOME": "/home/u"}
	get := func(k string) string { return env[k] }
	if f, _ := TrustStoreFile(get); f != "/home/u/.local/state/soba/trust.json" {
		t.Fatalf("default = %s", f)
	}
	env["XDG_STATE_HOME"] = "/x/state"
	if f, _ := TrustStoreFile(get); f != "/x/state/soba/trust.json" {
		t.Fatalf("XDG = %s", f)
	}
	env["XDG_STATE_HOME"] = "relative"
	if f, _ := TrustStoreFile(get); f != "/home/u/.local/state/soba/trust.json" {
		t.Fatalf("relative XDG = %s", f)
	}
}
