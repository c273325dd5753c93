package slash

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// The shared cases of testdata/slash-commands.json run through the server's
// soba.run in lsp/run_test.go (TestRun_SharedSlashCases).

// TestUsageErrorsNameTheUsage: a known command typed wrong shows how to type it.
func TestUsageErrorsNameTheUsage(t *testing.T) {
	tests := []struct{ text, want string }{
		{"/capsule export ck_1", "/capsule export: missing <path> · usage: /capsule export <checkpointId> <path> [--overwrite]"},
		{"/auto-compact maybe", `/auto-compact: expected on or off, not "maybe" · usage: /auto-compact on|off`},
		{`/capsule load "a.md`, "/capsule load: unterminated quote · usage: /capsule load <path>"},
		{`/capsule load "a"b`, "/capsule load: a closing quote must end the word · usage: /capsule load <path>"},
		{"/budget now", `/budget: unexpected argument "now" · usage: /budget`},
		{"/nosuch", "unknown command /nosuch · /help lists the commands; //nosuch sends /nosuch to the model"},
	}
	for _, tt := range tests {
		got := Parse(tt.text)
		if got.Kind != Usage || got.Err.Error() != tt.want {
			t.Errorf("Parse(%q) = %v %v, want usage error %q", tt.text, got.Kind, got.Err, tt.want)
		}
	}
}

// TestGrammarCorners covers what the shared table does not: help, resume
// without an id, escaped quotes, free text keeping inner quotes, non-ASCII
// blanks and words.
func TestGrammarCorners(t *testing.T) {
	tests := []struct {
		text    string
		command string
		args    map[string]any
	}{
		{"/session resume", "soba.session.list", map[string]any{}},
		{"/session list", "soba.session.list", map[string]any{}},
		{`/capsule create "say \"hi\""`, "soba.capsule.create", map[string]any{"title": `say "hi"`}},
		{`/compact say "hi" twice`, "soba.compact", map[string]any{"instructions": `say "hi" twice`}},
		{"/compact", "soba.compact", map[string]any{}},
		{"/compact   ", "soba.compact", map[string]any{}},
		{"\u00a0/capsule\u3000load  ./données.md", "soba.capsule.load", map[string]any{"path": "./données.md"}},
		{"/capsule show", "soba.capsule.show", map[string]any{}},
	}
	for _, tt := range tests {
		got := Parse(tt.text)
		if got.Kind != Command || got.Command != tt.command || !reflect.DeepEqual(got.Args, tt.args) {
			t.Errorf("Parse(%q) = %v %s %v (%v), want %s %v", tt.text, got.Kind, got.Command, got.Args, got.Err, tt.command, tt.args)
		}
	}
	if p := Parse("  /help "); p.Kind != Help {
		t.Errorf("Parse(/help) = %v, want help", p.Kind)
	}
	lines := HelpLines()
	if len(lines) != len(Commands)+1 {
		t.Fatalf("HelpLines has %d lines, want %d", len(lines), len(Commands)+1)
	}
	for i, h := range Commands {
		if !strings.HasPrefix(strings.TrimSpace(lines[i+1]), h.Usage) || !strings.HasSuffix(lines[i+1], h.Summary) {
			t.Errorf("help line %q does not show %q", lines[i+1], h.Usage)
		}
	}
}

// TestHelpListsTheDocumentedCommands: /help and docs/slash-commands.md's
// table list the same usages.
func TestHelpListsTheDocumentedCommands(t *testing.T) {
	doc, err := os.ReadFile("../../docs/slash-commands.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range Commands {
		if h.Usage == "//text" {
			continue
		}
		first := strings.Fields(h.Usage)[0]
		if !strings.Contains(string(doc), "`"+first) {
			t.Errorf("docs/slash-commands.md does not document %s", first)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"/budget", `/capsule export ck "a b" --overwrite`, "//x", `/compact "`, "/\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p := Parse(text)
		switch p.Kind {
		case Command:
			if p.Args == nil || !strings.HasPrefix(p.Command, "soba.") {
				t.Fatalf("Parse(%q) = command %q with args %v", text, p.Command, p.Args)
			}
		case Usage:
			if p.Err == nil {
				t.Fatalf("Parse(%q) = usage without error", text)
			}
		case Prompt:
			if !strings.Contains(text, p.Text) {
				t.Fatalf("Parse(%q) prompt %q is not from the text", text, p.Text)
			}
		}
	})
}
