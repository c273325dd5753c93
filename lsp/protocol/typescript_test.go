package protocol

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// The VS Code extension writes the wire types by hand in
// editors/vscode/src/protocol.ts; this test checks them against the Go
// types, so a drift of either fails CI: every Go field has a TypeScript
// field of the same name, optionality and JSON type, and the other way
// round; the command IDs and the enumerations list the same values.

const typeScriptFile = "../../editors/vscode/src/protocol.ts"

// tsNames maps each wire type to its TypeScript interface.
var tsNames = map[reflect.Type]string{
	reflect.TypeFor[Budget]():               "Budget",
	reflect.TypeFor[CompactionResult]():     "CompactionResult",
	reflect.TypeFor[CompactionEvent]():      "CompactionEvent",
	reflect.TypeFor[Event]():                "AgentEvent",
	reflect.TypeFor[PromptResult]():         "PromptResult",
	reflect.TypeFor[CancelResult]():         "CancelResult",
	reflect.TypeFor[CheckpointResult]():     "CheckpointResult",
	reflect.TypeFor[CapsuleCreateResult]():  "CapsuleCreateResult",
	reflect.TypeFor[CapsuleExportResult]():  "CapsuleExportResult",
	reflect.TypeFor[CapsuleLoadResult]():    "CapsuleLoadResult",
	reflect.TypeFor[CapsuleInfo]():          "CapsuleListItem",
	reflect.TypeFor[CapsuleShowResult]():    "CapsuleShowResult",
	reflect.TypeFor[SessionInfo]():          "SessionInfo",
	reflect.TypeFor[SessionSummary]():       "SessionListItem",
	reflect.TypeFor[SessionNewResult]():     "SessionNewResult",
	reflect.TypeFor[SessionResumeResult]():  "SessionResumeResult",
	reflect.TypeFor[SessionRewindResult]():  "SessionRewindResult",
	reflect.TypeFor[RunPromptResult]():      "RunPromptResult",
	reflect.TypeFor[RunCommandResult]():     "RunCommandResult",
	reflect.TypeFor[HistoryPoint]():         "HistoryPoint",
	reflect.TypeFor[SessionTranscript]():    "SessionTranscript",
	reflect.TypeFor[TranscriptItem]():       "TranscriptItem",
	reflect.TypeFor[TranscriptTool]():       "TranscriptTool",
	reflect.TypeFor[TranscriptCompaction](): "TranscriptCompaction",
	reflect.TypeFor[ApprovalDetail]():       "ApprovalDetail",
}

// tsField is one field of a TypeScript interface.
type tsField struct {
	optional bool
	typ      string
}

// tsInterface is an interface's fields and its extends clause.
type tsInterface struct {
	extends string
	fields  map[string]tsField
}

var (
	tsComment    = regexp.MustCompile(`(?s)/\*.*?\*/|//[^\n]*`)
	tsInterfRe   = regexp.MustCompile(`(?s)export interface (\w+)(?:\s+extends\s+([^{]+?))?\s*\{(.*?)\}`)
	tsFieldRe    = regexp.MustCompile(`(\w+)(\??):\s*([^;\n]+)`)
	tsUnionRe    = regexp.MustCompile(`(?s)export type (\w+) =(.*?);`)
	tsLiteralRe  = regexp.MustCompile(`'([^']*)'`)
	tsCommandRe  = regexp.MustCompile(`(?s)export const ServerCommand = \{(.*?)\}`)
	tsAdditionRe = regexp.MustCompile(`(?s)export const ServerAddition = \{(.*?)\}`)
)

func readTypeScript(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(typeScriptFile)
	if err != nil {
		t.Fatal(err)
	}
	return tsComment.ReplaceAllString(string(b), "")
}

func parseInterfaces(src string) map[string]tsInterface {
	out := map[string]tsInterface{}
	for _, m := range tsInterfRe.FindAllStringSubmatch(src, -1) {
		in := tsInterface{extends: strings.TrimSpace(m[2]), fields: map[string]tsField{}}
		for _, f := range tsFieldRe.FindAllStringSubmatch(m[3], -1) {
			in.fields[f[1]] = tsField{optional: f[2] == "?", typ: strings.TrimSpace(f[3])}
		}
		out[m[1]] = in
	}
	return out
}

// literals are the string literals of a TypeScript union, sorted.
func literals(union string) []string {
	var out []string
	for _, m := range tsLiteralRe.FindAllStringSubmatch(union, -1) {
		out = append(out, m[1])
	}
	sort.Strings(out)
	return out
}

// tsTypeFits reports whether a TypeScript type can hold the Go type's JSON.
func tsTypeFits(goType reflect.Type, ts string) bool {
	if goType == reflect.TypeFor[time.Time]() {
		return strings.Contains(ts, "string")
	}
	if goType == reflect.TypeFor[json.RawMessage]() || goType.Kind() == reflect.Interface {
		return ts == "unknown" || ts == "any"
	}
	switch goType.Kind() {
	case reflect.String:
		return strings.Contains(ts, "string") || tsLiteralRe.MatchString(ts)
	case reflect.Int, reflect.Int64, reflect.Float64:
		return strings.Contains(ts, "number")
	case reflect.Bool:
		return strings.Contains(ts, "boolean")
	case reflect.Slice:
		return strings.HasSuffix(ts, "[]")
	case reflect.Pointer:
		if goType.Elem().Kind() == reflect.Struct {
			name := tsNames[goType.Elem()]
			return strings.Contains(ts, name) && strings.Contains(ts, "null")
		}
		return tsTypeFits(goType.Elem(), ts)
	}
	return false
}

// TestTypeScriptMatchesWire checks every wire type against its TypeScript
// interface, field by field.
func TestTypeScriptMatchesWire(t *testing.T) {
	ifaces := parseInterfaces(readTypeScript(t))
	for goType, name := range tsNames {
		in, ok := ifaces[name]
		if !ok {
			t.Errorf("%s: no `export interface %s` in %s", goType.Name(), name, typeScriptFile)
			continue
		}
		seen := map[string]bool{}
		for i := range goType.NumField() {
			f := goType.Field(i)
			if f.Anonymous {
				// An embedded result's fields are present on one phase only.
				want := "Partial<" + tsNames[f.Type.Elem()] + ">"
				if in.extends != want {
					t.Errorf("%s: embeds %s, so %s must extend %s, not %q", goType.Name(), f.Type.Elem().Name(), name, want, in.extends)
				}
				continue
			}
			jsonName, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			seen[jsonName] = true
			tf, ok := in.fields[jsonName]
			if !ok {
				t.Errorf("%s.%s: %s has no field %q", goType.Name(), f.Name, name, jsonName)
				continue
			}
			if goOptional := opts == "omitempty"; goOptional != tf.optional {
				t.Errorf("%s.%s: omitempty is %v in Go but %s.%s optional is %v", goType.Name(), f.Name, goOptional, name, jsonName, tf.optional)
			}
			if !tsTypeFits(f.Type, tf.typ) {
				t.Errorf("%s.%s (%s): %s.%s has type %q", goType.Name(), f.Name, f.Type, name, jsonName, tf.typ)
			}
		}
		for field := range in.fields {
			if !seen[field] {
				t.Errorf("%s.%s: no such field in the Go type %s", name, field, goType.Name())
			}
		}
	}
}

// TestTypeScriptEnumerations: the command IDs, triggers, outcomes, states
// and event types are the same sets on both sides.
func TestTypeScriptEnumerations(t *testing.T) {
	src := readTypeScript(t)
	unions := map[string]string{}
	for _, m := range tsUnionRe.FindAllStringSubmatch(src, -1) {
		unions[m[1]] = m[2]
	}
	ifaces := parseInterfaces(src)
	strs := func(xs ...string) []string {
		xs = slices.Clone(xs)
		sort.Strings(xs)
		return xs
	}
	of := func(f func(int) string, n int) []string {
		out := make([]string, n)
		for i := range n {
			out[i] = f(i)
		}
		return strs(out...)
	}
	cmd := tsCommandRe.FindStringSubmatch(src)
	if cmd == nil {
		t.Fatal("no `export const ServerCommand = {…}`")
	}
	add := tsAdditionRe.FindStringSubmatch(src)
	if add == nil {
		t.Fatal("no `export const ServerAddition = {…}`")
	}
	tests := []struct {
		what     string
		ts, want []string
	}{
		{"ServerCommand", literals(cmd[1]), strs(Commands...)},
		{"ServerAddition", literals(add[1]), strs(Additions...)},
		{"type Trigger", literals(unions["Trigger"]), of(func(i int) string { return string(Triggers[i]) }, len(Triggers))},
		{"type Outcome", literals(unions["Outcome"]), of(func(i int) string { return string(Outcomes[i]) }, len(Outcomes))},
		{"Budget.state", literals(ifaces["Budget"].fields["state"].typ), of(func(i int) string { return string(States[i]) }, len(States))},
		{"AgentEvent.type", literals(ifaces["AgentEvent"].fields["type"].typ), of(func(i int) string { return string(EventTypes[i]) }, len(EventTypes))},
		{"Budget.source", literals(ifaces["Budget"].fields["source"].typ), strs(string(SourceProviderUsage), string(SourceEstimated))},
		{"CompactionEvent.phase", literals(ifaces["CompactionEvent"].fields["phase"].typ), strs(string(PhaseStart), string(PhaseProgress), string(PhaseEnd))},
		{"type HistoryKind", literals(unions["HistoryKind"]), of(func(i int) string { return string(HistoryKinds[i]) }, len(HistoryKinds))},
		{"type TranscriptKind", literals(unions["TranscriptKind"]), of(func(i int) string { return string(TranscriptKinds[i]) }, len(TranscriptKinds))},
		{"TranscriptTool.approval", literals(ifaces["TranscriptTool"].fields["approval"].typ), strs(ApprovalOnce, ApprovalSession, ApprovalDenied)},
		{"CancelResult.what", literals(ifaces["CancelResult"].fields["what"].typ), strs(string(CancelledTurn), string(CancelledCompaction), string(CancelledNone))},
	}
	for _, tt := range tests {
		if !slices.Equal(tt.ts, tt.want) {
			t.Errorf("%s in protocol.ts lists %v, the Go wire schema %v", tt.what, tt.ts, tt.want)
		}
	}
}

// TestBudgetDisplay_RO1 checks the status text both editors show: one
// number format (one decimal, k and M), the share of the hard limit
// rounded down, only the count without a limit.
func TestBudgetDisplay_RO1(t *testing.T) {
	tests := []struct {
		effective, hard int
		want            string
	}{
		{14030, 17000, "14.0k / 17.0k (82%)"},
		{557, 17000, "557 / 17.0k (3%)"},
		{999, 1000, "999 / 1.0k (99%)"},
		{999949, 1260000, "999.9k / 1.3M (79%)"},
		{999950, 1000000, "1.0M / 1.0M (99%)"},
		{20000, 17000, "20.0k / 17.0k (117%)"},
		{0, 48808, "0 / 48.8k (0%)"},
		{1200, 0, "1.2k"},
	}
	for _, tt := range tests {
		if got := BudgetDisplay(tt.effective, tt.hard); got != tt.want {
			t.Errorf("BudgetDisplay(%d, %d) = %q, want %q", tt.effective, tt.hard, got, tt.want)
		}
	}
}
