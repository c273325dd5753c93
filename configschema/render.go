package configschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The generated files. Their drift from the description fails this
// package's tests; `go test ./configschema -args -update` rewrites them.
const (
	// DocFile holds the key reference between DocBegin and DocEnd.
	DocFile = "docs/configuration.md"
	// PackageJSONFile holds the VS Code settings at contributes.configuration.
	PackageJSONFile = "editors/vscode/package.json"
	// SettingsTSFile is generated whole.
	SettingsTSFile = "editors/vscode/src/settingsSchema.ts"
	// VSCodeReadmeFile lists the settings between DocBegin and DocEnd.
	VSCodeReadmeFile = "editors/vscode/README.md"

	// SecurityFile holds the repository key table between RepoBegin and
	// RepoEnd.
	SecurityFile = "docs/security.md"
	RepoBegin    = "<!-- BEGIN repository key table generated from configschema/schema.go by `go test ./configschema -args -update`; do not edit by hand -->"
	RepoEnd      = "<!-- END repository key table -->"

	// DocBegin and DocEnd enclose a generated block in a Markdown file.
	DocBegin = "<!-- BEGIN generated from configschema/schema.go by `go test ./configschema -args -update`; do not edit by hand -->"
	DocEnd   = "<!-- END generated from configschema/schema.go -->"
)

// VSCodeOnly are the VS Code extension's own settings: shown with the
// server's, never sent to it (the server rejects unknown keys).
var VSCodeOnly = []Key{
	// The program the extension starts: machine scope, so a workspace's
	// .vscode/settings.json can never name it (SPEC R-W5).
	{Path: "serverPath", Type: String, Default: "", Scope: "machine", Repository: RepoIgnored,
		Doc: "Path to the `soba-lsp` binary. Empty: the binary bundled in the extension (`bin/soba-lsp`), else `soba-lsp` on `PATH`. A user or machine setting only: a workspace cannot set it. Not sent to the server."},
	{Path: "serverArgs", Type: StringList, Default: []any{}, Scope: "machine", Repository: RepoIgnored,
		Doc: "Extra arguments for `soba-lsp` (for example `[\"--log-file\", \"/tmp/soba.log\"]`). A user or machine setting only: a workspace cannot set them. Not sent to the server."},
	{Path: "trace.server", Type: String, Default: "off", Repository: RepoApplies, Enum: []Choice{{Value: "off"}, {Value: "messages"}, {Value: "verbose"}},
		Doc: "Trace the JSON-RPC traffic with soba-lsp in the 'SOBA Language Server' output. Not sent to the server."},
}

// ---- docs/configuration.md -------------------------------------------------

// Markdown returns the key reference of docs/configuration.md: the
// defaults as one JSON object and a table of every key.
func Markdown() string {
	var b strings.Builder
	b.WriteString("```json\n")
	def, _ := json.MarshalIndent(orderedDefaults(Root(), true), "", "  ")
	b.Write(def)
	b.WriteString("\n```\n\n")
	b.WriteString("| key | type | default | allowed | from an untrusted repository | meaning |\n| --- | --- | --- | --- | --- | --- |\n")
	walkRows(func(path string, k Key, parentPlanned bool, more, repo string) {
		row(&b, path, k, parentPlanned, more, repo)
	})
	return b.String()
}

// walkRows calls f for each row of the key tables, in the description's
// order: leaves, Maps, Like objects and the editor's keys, with what a
// repository of an untrusted workspace may do with each (SPEC R-W5); a key
// below a Map that is ignored as a whole says so.
func walkRows(f func(path string, k Key, parentPlanned bool, more, repo string)) {
	var rows func(n *Node, shown, inherited string)
	rows = func(n *Node, shown, inherited string) {
		for _, name := range n.Order {
			c := n.Children[name]
			path := join(shown, name)
			repo := inherited
			if repo == "" {
				repo = c.RepositoryDoc()
			}
			switch {
			case c.Type == Object && c.Like == "" && !c.Editor:
				rows(c, path, inherited)
			case c.Type == Map:
				f(path, c.Key, n.Planned != "", c.Elem.Doc, repo)
				below := inherited
				if below == "" && c.Repository != RepoApplies {
					below = "with `" + path + "`"
				}
				rows(c.Elem, path+".<name>", below)
			default:
				f(path, c.Key, n.Planned != "", "", repo)
			}
		}
	}
	rows(Root(), "", "")
}

// RepositoryMarkdown returns the key table of docs/security.md: every key
// and what a repository-owned layer of an untrusted workspace may do with
// it (SPEC R-W5), from the same description as docs/configuration.md.
func RepositoryMarkdown() string {
	var b strings.Builder
	b.WriteString("| key | from an untrusted repository |\n| --- | --- |\n")
	walkRows(func(path string, k Key, _ bool, _, repo string) {
		if k.DeprecatedFor != "" {
			repo += " (deprecated alias of `" + k.DeprecatedFor + "`)"
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", path, repo)
	})
	return b.String()
}

// SpliceSecurity puts RepositoryMarkdown into docs/security.md between
// RepoBegin and RepoEnd.
func SpliceSecurity(doc []byte) ([]byte, error) {
	return spliceMarked(SecurityFile, doc, RepoBegin, RepoEnd, RepositoryMarkdown())
}

// row writes one key's line of the table; a key below a planned one does
// not repeat the note.
func row(b *strings.Builder, path string, k Key, parentPlanned bool, more, repo string) {
	def := "—"
	if k.Default != nil {
		def = "`" + string(marshal(k.Default)) + "`"
		if s, ok := k.Default.(string); ok {
			def = "`" + s + "`"
		}
	}
	var allowed []string
	if k.Enum != nil {
		var vs []string
		for _, c := range k.Enum {
			vs = append(vs, "`"+c.Value+"`")
		}
		allowed = append(allowed, strings.Join(vs, ", "))
	}
	if r := k.Rule.doc(); r != "" {
		allowed = append(allowed, r)
	}
	if k.Relation != "" {
		allowed = append(allowed, k.Relation)
	}
	if k.Like != "" {
		allowed = append(allowed, "the keys of `"+k.Like+"`")
	}
	meaning := k.Doc
	if k.DeprecatedFor != "" {
		meaning = "**deprecated** " + meaning
	}
	if more != "" {
		meaning += ". " + upperFirst(more)
	}
	for _, c := range k.Enum {
		if c.Doc == "" {
			continue
		}
		note := ""
		if c.Planned != "" {
			note = " (accepted; not supported by this version yet)"
		}
		meaning += fmt.Sprintf("; `%s`%s: %s", c.Value, note, c.Doc)
	}
	if k.Planned != "" && !parentPlanned {
		meaning += ". **Accepted and checked; not used by this version yet** (planned: " + k.Planned + ")"
	}
	fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s | %s |\n", path, k.Type.doc(), def, strings.Join(allowed, " and "), repo, strings.ReplaceAll(meaning, "|", `\|`))
}

func (t Type) doc() string {
	return [...]string{Object: "object", Map: "object", Bool: "boolean", String: "string", Int: "integer",
		Number: "number", StringList: "array of strings", StringMap: "object of strings"}[t]
}

func (r Rule) doc() string {
	return [...]string{NoRule: "", NonNegative: "≥ 0", Positive: "> 0", Ratio: "0..1", NonEmpty: "not empty",
		HTTPURL: "an `http://` or `https://` URL with a host", EnvName: "an environment variable name, or `\"\"` for no key"}[r]
}

// SpliceMarkdown replaces what lies between DocBegin and DocEnd in
// docs/configuration.md by Markdown().
func SpliceMarkdown(doc []byte) ([]byte, error) { return spliceBlock(DocFile, doc, Markdown()) }

// SpliceVSCodeReadme replaces what lies between DocBegin and DocEnd in the
// extension's README by VSCodeReadme().
func SpliceVSCodeReadme(doc []byte) ([]byte, error) {
	return spliceBlock(VSCodeReadmeFile, doc, VSCodeReadme())
}

func spliceBlock(file string, doc []byte, block string) ([]byte, error) {
	return spliceMarked(file, doc, DocBegin, DocEnd, block)
}

// spliceMarked replaces what lies between the markers beginMark and
// endMark of doc by block.
func spliceMarked(file string, doc []byte, beginMark, endMark, block string) ([]byte, error) {
	begin, end := bytes.Index(doc, []byte(beginMark)), bytes.Index(doc, []byte(endMark))
	if begin < 0 || end < begin {
		return nil, fmt.Errorf("%s: no %q … %q block", file, beginMark, endMark)
	}
	var out bytes.Buffer
	out.Write(doc[:begin+len(beginMark)])
	out.WriteString("\n\n")
	out.WriteString(block)
	out.WriteString("\n")
	out.Write(doc[end:])
	return out.Bytes(), nil
}

// ---- VS Code ---------------------------------------------------------------

// VSCodeSettings returns the `soba.*` settings of the server's keys, in
// order, as dotted paths below `soba` with their JSON schemas. Each key
// is a setting of its own, except below a OneSetting object, which is one
// setting. Planned keys and values are left out until they do something.
func VSCodeSettings() []Member {
	var out []Member
	var walk func(n *Node)
	walk = func(n *Node) {
		for _, name := range n.Order {
			c := n.Children[name]
			switch {
			case c.Planned != "", c.Editor:
			case c.Type == Object && !c.OneSetting:
				walk(c)
			default:
				out = append(out, Member{c.Path, settingSchema(c, true)})
			}
		}
	}
	walk(Root())
	return out
}

// VSCodeConfiguration returns the value of package.json's
// contributes.configuration: the extension's own settings, then the
// server's.
func VSCodeConfiguration() Ordered {
	var props Ordered
	for _, k := range VSCodeOnly {
		props = append(props, Member{"soba." + k.Path, settingSchema(&Node{Key: k}, true)})
	}
	for _, m := range VSCodeSettings() {
		props = append(props, Member{"soba." + m.Name, m.Value})
	}
	return Ordered{{"title", "SOBA"}, {"properties", props}}
}

func settingSchema(n *Node, top bool) Ordered {
	k := n.Key
	s := Ordered{{"type", [...]string{Object: "object", Map: "object", Bool: "boolean", String: "string",
		Int: "integer", Number: "number", StringList: "array", StringMap: "object"}[k.Type]}}
	if k.Named != "" {
		// The object, or the name of one entry of k.Named.
		s[0].Value = []string{"object", "string"}
	}
	switch k.Type {
	case StringList:
		s = append(s, Member{"items", Ordered{{"type", "string"}}})
	case StringMap:
		s = append(s, Member{"additionalProperties", Ordered{{"type", "string"}}})
	}
	if k.Enum != nil {
		var values []string
		var docs []string
		for _, c := range k.Enum {
			if c.Planned == "" {
				values = append(values, c.Value)
				docs = append(docs, sentence(c.Doc))
			}
		}
		s = append(s, Member{"enum", values})
		if docs[0] != "" {
			s = append(s, Member{"markdownEnumDescriptions", docs})
		}
	}
	switch k.Rule {
	case NonNegative:
		s = append(s, Member{"minimum", 0})
	case Positive:
		if k.Type == Int {
			s = append(s, Member{"minimum", 1})
		} else {
			s = append(s, Member{"exclusiveMinimum", 0})
		}
	case Ratio:
		s = append(s, Member{"minimum", 0}, Member{"maximum", 1})
	case NonEmpty:
		s = append(s, Member{"pattern", `\S`}, Member{"patternErrorMessage", "Must not be empty."})
	case HTTPURL:
		s = append(s, Member{"pattern", `^https?://[^/]`}, Member{"patternErrorMessage", "An http:// or https:// URL with a host."})
	case EnvName:
		s = append(s, Member{"pattern", `^([A-Za-z_][A-Za-z0-9_]*)?$`},
			Member{"patternErrorMessage", "The name of an environment variable (letters, digits, _), not the key itself."})
	}
	switch {
	case k.Default != nil:
		s = append(s, Member{"default", k.Default})
	case top && (k.Type == Object || k.Type == Map):
		s = append(s, Member{"default", Ordered{}})
	}
	if k.Scope != "" {
		s = append(s, Member{"scope", k.Scope})
	}
	s = append(s, Member{"markdownDescription", sentence(k.Doc)})
	if k.DeprecatedFor != "" {
		s = append(s, Member{"deprecationMessage", fmt.Sprintf("Deprecated alias of %s (%s wins when both are set).", k.DeprecatedFor, k.DeprecatedFor)})
	}
	switch k.Type {
	case Object:
		var props Ordered
		for _, name := range n.Order {
			if c := n.Children[name]; c.Planned == "" {
				props = append(props, Member{name, settingSchema(c, false)})
			}
		}
		s = append(s, Member{"properties", props}, Member{"additionalProperties", false})
	case Map:
		s = append(s, Member{"additionalProperties", settingSchema(n.Elem, false)})
	}
	return s
}

// VSCodeReadme returns the table of the server's settings and their
// defaults for the extension's README.
func VSCodeReadme() string {
	var b strings.Builder
	b.WriteString("| setting | default |\n| --- | --- |\n")
	for _, m := range VSCodeSettings() {
		n, _ := Lookup(m.Name)
		def := "`" + string(marshal(n.Default)) + "`"
		if s, ok := n.Default.(string); ok {
			def = "`" + s + "`"
		}
		var others []string
		for _, c := range n.Enum {
			if c.Value != n.Default && c.Planned == "" {
				others = append(others, "`"+c.Value+"`")
			}
		}
		if len(others) > 0 {
			def += " (" + strings.Join(others, ", ") + ")"
		}
		switch {
		case n.Like != "":
			def = "`{}`: the keys of `soba." + n.Like + "`; unset ones are the main model's"
		case n.Type == Object:
			var keys []string
			for _, name := range n.Order {
				if c := n.Children[name]; c.Planned == "" && c.DeprecatedFor == "" {
					keys = append(keys, "`"+name+"`")
				}
			}
			def = "`{}`: " + strings.Join(keys, ", ") + " (unset keys keep their defaults)"
		}
		fmt.Fprintf(&b, "| `soba.%s` | %s |\n", m.Name, def)
	}
	return b.String()
}

// Restricted tells whether a repository may not simply set a key or some
// key below it: the one editor setting that holds them is then the
// repository's to send apart, and VS Code's Restricted Mode ignores it.
func Restricted(n *Node) bool {
	if n.Repository != RepoApplies {
		return true
	}
	for _, c := range n.Children {
		if Restricted(c) {
			return true
		}
	}
	return n.Elem != nil && Restricted(n.Elem)
}

// VSCodeRepositoryKeys are the server's settings (as in VSCodeSettings)
// whose workspace and folder values belong to the repository: the
// extension sends those as repositorySettings, never as the user's.
func VSCodeRepositoryKeys() []string {
	var out []string
	for _, m := range VSCodeSettings() {
		if n, _ := Lookup(m.Name); Restricted(n) {
			out = append(out, m.Name)
		}
	}
	return out
}

// VSCodeUntrustedWorkspaces returns the value of package.json's
// capabilities.untrustedWorkspaces: the extension runs in Restricted Mode,
// where VS Code ignores the workspace's values of every setting a
// repository may not simply set (the extension's own program settings and
// the server's keys a repository may not set as they are).
func VSCodeUntrustedWorkspaces() Ordered {
	var restricted []string
	for _, k := range VSCodeOnly {
		if k.Repository != RepoApplies {
			restricted = append(restricted, "soba."+k.Path)
		}
	}
	for _, name := range VSCodeRepositoryKeys() {
		restricted = append(restricted, "soba."+name)
	}
	return Ordered{
		{"supported", "limited"},
		{"description", "In Restricted Mode the workspace's settings cannot choose the model server, the API key's variable, the summary model or MCP servers, turn approvals off, raise the model's limits or name the program the extension starts; SOBA's own .soba/config.json is held to the same rules by soba-lsp."},
		{"restrictedConfigurations", restricted},
	}
}

// SpliceConfiguration replaces the values of contributes.configuration and
// capabilities.untrustedWorkspaces in package.json by VSCodeConfiguration()
// and VSCodeUntrustedWorkspaces(), indented as the file is, leaving the rest
// of the file as it is.
func SpliceConfiguration(pkg []byte) ([]byte, error) {
	for _, part := range []struct {
		path  []string
		value Ordered
	}{
		{[]string{"contributes", "configuration"}, VSCodeConfiguration()},
		{[]string{"capabilities", "untrustedWorkspaces"}, VSCodeUntrustedWorkspaces()},
	} {
		start, end, indent, err := valueSpan(pkg, part.path...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", PackageJSONFile, err)
		}
		v, err := json.MarshalIndent(part.value, indent, "  ")
		if err != nil {
			return nil, err
		}
		pkg = append(append(append([]byte{}, pkg[:start]...), v...), pkg[end:]...)
	}
	return pkg, nil
}

// valueSpan finds the value at path in a JSON document of nested objects:
// its byte offsets and the indentation of the line of its key.
func valueSpan(doc []byte, path ...string) (start, end int, indent string, err error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0, 0, "", errors.New("not a JSON object")
	}
	for depth := 0; ; {
		t, err := dec.Token()
		if err != nil {
			return 0, 0, "", err
		}
		key, ok := t.(string)
		if !ok {
			return 0, 0, "", fmt.Errorf("no %s", strings.Join(path, "."))
		}
		if key != path[depth] {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return 0, 0, "", err
			}
			continue
		}
		if depth++; depth < len(path) {
			if t, err := dec.Token(); err != nil || t != json.Delim('{') {
				return 0, 0, "", fmt.Errorf("%s is not an object", strings.Join(path[:depth], "."))
			}
			continue
		}
		keyEnd := int(dec.InputOffset())
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return 0, 0, "", err
		}
		end = int(dec.InputOffset())
		start = end - len(v)
		line := bytes.LastIndexByte(doc[:keyEnd], '\n') + 1
		indent = string(doc[line : line+len(doc[line:keyEnd])-len(bytes.TrimLeft(doc[line:keyEnd], " \t"))])
		return start, end, indent, nil
	}
}

// ---- settingsSchema.ts -----------------------------------------------------

// SettingsTS returns editors/vscode/src/settingsSchema.ts.
func SettingsTS() string {
	var b strings.Builder
	b.WriteString(`// Code generated from configschema/schema.go by ` + "`go test ./configschema -args -update`" + `. DO NOT EDIT.

/**
 * SERVER_KEYS are the ` + "`soba.*`" + ` settings that belong to the server, as dotted
 * paths below ` + "`soba`" + `, in the order of the server's configuration schema.
 * Client-only keys (serverPath, serverArgs, trace.server) are not here: the
 * server rejects unknown keys (R-S1).
 */
export const SERVER_KEYS = [
`)
	for _, m := range VSCodeSettings() {
		fmt.Fprintf(&b, "  '%s',\n", m.Name)
	}
	b.WriteString(`] as const;

/**
 * REPOSITORY_KEYS are the SERVER_KEYS a repository may not simply set (SPEC
 * R-W5): their workspace and folder values go to the server as
 * repositorySettings, which it holds to the repository's rules until the
 * workspace is trusted. They are package.json's restrictedConfigurations too.
 */
export const REPOSITORY_KEYS = [
`)
	for _, name := range VSCodeRepositoryKeys() {
		fmt.Fprintf(&b, "  '%s',\n", name)
	}
	b.WriteString("] as const;\n")
	return b.String()
}

// ---- helpers -------------------------------------------------------------

// Member is one name and value of an Ordered object.
type Member struct {
	Name  string
	Value any
}

// Ordered is a JSON object that keeps its members' order.
type Ordered []Member

// MarshalJSON writes the members in order, without HTML escaping.
func (o Ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(marshal(m.Name))
		b.WriteByte(':')
		b.Write(marshal(m.Value))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func marshal(v any) []byte {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		panic(err) // the description holds only JSON values
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// orderedDefaults is Defaults in the description's order; with planned, it
// includes the defaults of the keys this version does not use yet.
func orderedDefaults(n *Node, planned bool) Ordered {
	out := Ordered{}
	for _, name := range n.Order {
		c := n.Children[name]
		if (c.Planned != "" && !planned) || c.Like != "" {
			continue
		}
		switch {
		case c.Type == Object:
			if d := orderedDefaults(c, planned); len(d) > 0 {
				out = append(out, Member{name, d})
			}
		case c.Default != nil:
			out = append(out, Member{name, c.Default})
		}
	}
	return out
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// sentence makes a Doc phrase a sentence: capitalised, ending in a period.
func sentence(s string) string {
	if s == "" {
		return ""
	}
	s = upperFirst(s)
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}
