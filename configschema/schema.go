// Package configschema describes every key of SOBA's configuration once
// (PROTOCOL.md "Configuration", SPEC §6): its JSON path, type, default,
// allowed values and documentation.
//
// Everything else follows from this one description: the workspace loader
// validates each layer with it, the loader's Config and the compaction
// engine's Keys take their defaults from it (DecodeDefaults), and
// docs/configuration.md, the VS Code extension's contributes.configuration
// and editors/vscode/src/settingsSchema.ts are generated from it. The tests
// of this package fail when a generated file drifts from the description;
// `go test ./configschema -args -update` rewrites them.
//
// The package is a leaf (standard library only), so the engine can take its
// defaults from it without knowing the loader.
package configschema

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Type is a key's JSON type.
type Type int

// The types of keys.
const (
	// Object holds the keys below it (or, with Key.Like, another object's).
	Object Type = iota
	// Map is an object whose names are the user's own; every value has the
	// keys below "<path>.*".
	Map
	Bool
	String
	// Int is a whole number: 20000, 20000.0 and 2e4 are all 20000.
	Int
	Number
	// StringList is an array of strings.
	StringList
	// StringMap is an object whose values are strings.
	StringMap
)

// Rule is a range or form a value must have, beyond its type.
type Rule int

// The rules.
const (
	NoRule      Rule = iota
	NonNegative      // a number ≥ 0
	Positive         // a number > 0
	Ratio            // a number in 0..1
	NonEmpty         // a string that is not blank
	HTTPURL          // an http:// or https:// URL with a host
	EnvName          // an environment variable name, or "" for none
)

// Choice is one allowed value of an enumerated string key.
type Choice struct {
	Value string
	Doc   string
	// Planned, when set, says what will use this value; until then the
	// value is accepted but this version does not act on it.
	Planned string
}

// Key is one configuration key.
type Key struct {
	// Path is the dotted JSON path from the top of a configuration layer,
	// as a user writes it; "*" stands for any name of a Map.
	Path string
	Type Type
	// Default is the built-in value (bool, int, float64 or string); nil
	// when the key has none (it is unset unless a layer sets it).
	Default any
	Rule    Rule
	// Enum lists the allowed values of a String key, nil for any.
	Enum []Choice
	// Doc says what the key does, in Markdown; it ends without a period
	// when it is one phrase.
	Doc string
	// Relation documents a rule that relates this key to others (checked by
	// the loader on the merged configuration, e.g. "< `contextWindow`").
	Relation string
	// Like names an Object whose keys this Object has too, without their
	// defaults: keys left out are taken from that object.
	Like string
	// Named names a Map whose entries this Object may pick by name: the
	// value is then a string, the name of one entry, in place of the
	// object (`"model": "fast"` picks `models.fast`).
	Named string
	// DeprecatedFor names the key of the same object that replaces this
	// one; the deprecated key is accepted with a warning.
	DeprecatedFor string
	// Planned, when set, says what will use the key: it is accepted and
	// validated, but this version does not act on it yet.
	Planned string
	// OneSetting makes the VS Code extension show this Object or Map as one
	// setting, soba.<path>, holding its keys; otherwise each key below it is
	// a setting of its own.
	OneSetting bool
	// Scope is the VS Code setting's scope ("" for the default, window).
	Scope string
	// Repository says what a repository-owned layer (the workspace's
	// .soba/config.json, the editor's repositorySettings) of an untrusted
	// workspace may do with the key (SPEC R-W5). The zero value ignores it,
	// so a key nobody classified never lets a repository relax anything.
	// An Object's or a Map's value covers its keys as a whole when it is not
	// RepoApplies; with RepoApplies each key below decides for itself.
	Repository Repo
	// Tighter is the one value a repository may set for a RepoTighten key
	// (tools.approval "ask", nativeContinuation false).
	Tighter any
	// Editor marks a key only the editor sends, in initializationOptions
	// and didChangeConfiguration's settings.soba: not a setting a user
	// writes, not read from any file, not an editor setting of its own.
	Editor bool
}

// Repo is what a repository-owned configuration layer of an untrusted
// workspace may do with a key (SPEC R-W5): only tighten.
type Repo int

// The repository rules.
const (
	// RepoIgnored: ignored (with the warning) until the workspace is
	// trusted; then it applies. Keys that relax a safety, choose where data
	// or credentials go, or start a program.
	RepoIgnored Repo = iota
	// RepoApplies: applies as from any layer (compaction tuning, session
	// files inside the workspace).
	RepoApplies
	// RepoLowerOnly: a number the repository may lower, never raise (a
	// limit on what each request costs).
	RepoLowerOnly
	// RepoTighten: only the value Key.Tighter applies; any other is ignored.
	RepoTighten
	// RepoNever: a user-owned key, ignored from a repository even when the
	// workspace is trusted (trust itself, the paths the user lets the agent
	// write without asking).
	RepoNever
)

// RepositoryDoc says the key's Repository rule in the words of
// docs/configuration.md and docs/security.md.
func (k Key) RepositoryDoc() string {
	switch k.Repository {
	case RepoApplies:
		return "applies"
	case RepoLowerOnly:
		return "may only lower it"
	case RepoTighten:
		v := string(marshal(k.Tighter))
		if t, ok := k.Tighter.(string); ok {
			v = t
		}
		return "only `" + v + "`"
	case RepoNever:
		return "never (user layers only, trusted or not)"
	}
	return "ignored until trusted"
}

// Name is the last element of the key's path.
func (k Key) Name() string { return k.Path[strings.LastIndexByte(k.Path, '.')+1:] }

// Values of model.provider, tools.approval and sessionOnStart.
const (
	ProviderOllama          = "ollama"
	ProviderOpenAI          = "openai"
	ProviderAnthropic       = "anthropic"
	ProviderOpenAIResponses = "openai-responses"

	ApprovalAsk  = "ask"
	ApprovalAuto = "auto"

	SessionOnStartResume = "resume"
	SessionOnStartNew    = "new"

	// OllamaBaseURL is a local Ollama's address, model.baseURL's default.
	OllamaBaseURL = "http://127.0.0.1:11434"
)

// modelKeys are the keys of a model definition (model, and summaryModel
// through Like).
var modelKeys = []Key{
	{Path: "model.provider", Repository: RepoIgnored, Type: String, Default: ProviderOllama, Enum: []Choice{
		{Value: ProviderOllama, Doc: "Ollama's native `/api/chat`, sending `num_ctx` (the local-first default)"},
		{Value: ProviderOpenAI, Doc: "any OpenAI-compatible Chat Completions endpoint: llama.cpp server, vLLM, LM Studio, Ollama's `/v1`, OpenAI"},
		{Value: ProviderAnthropic, Doc: "Anthropic's Messages API"},
		{Value: ProviderOpenAIResponses, Doc: "OpenAI's Responses API: `baseURL` is the API root, requests go to `baseURL + \"/responses\"` and `baseURL + \"/responses/compact\"`"},
	}, Doc: "the model server's wire protocol"},
	{Path: "model.baseURL", Repository: RepoIgnored, Type: String, Default: OllamaBaseURL, Rule: HTTPURL,
		Doc: "the model server"},
	// model.name is RepoIgnored: on the user's key, another model can cost
	// far more per request.
	{Path: "model.name", Repository: RepoIgnored, Type: String, Default: "qwen2.5-coder:7b", Rule: NonEmpty,
		Doc: "the model to ask"},
	{Path: "model.apiKeyEnv", Repository: RepoIgnored, Type: String, Default: "OPENAI_API_KEY", Rule: EnvName,
		Doc: "the environment variable that holds the API key. Keys are never read from files or settings; a value that looks like a key (`sk-…`) is rejected. Set it to `ANTHROPIC_API_KEY` (or your own name) for `anthropic`"},
	{Path: "model.contextWindow", Type: Int, Default: 65000, Rule: Positive, Repository: RepoLowerOnly,
		Doc: "the model's context window, in tokens (R-S3)"},
	{Path: "model.maxOutputTokens", Type: Int, Default: 8000, Rule: Positive, Relation: "< `contextWindow`", Repository: RepoLowerOnly,
		Doc: "the tokens reserved for each reply (R-S3)"},
	{Path: "model.nativeContinuation", Type: Bool, Default: true, Repository: RepoTighten, Tighter: false,
		Doc: "with `openai-responses` or `anthropic`, every compaction also asks the provider for its native compaction of the same history (`/responses/compact`; Anthropic's server-side compaction, for a history above its 50,000-token minimum) and stores it with the capsule; the next requests to the same provider and model carry it in place of the capsule's text, while the portable capsule is still built and used for everything else (SPEC §11, docs/providers.md). `false` makes portable capsules only; `openai` and `ollama` have none; `summaryModel`'s is not used"},
}

// Keys is the description: every key SOBA's configuration accepts, objects
// before the keys below them, in the order the documentation lists them.
var Keys = concat(
	// A repository may tune the model's limits but not pick another of the
	// user's models by name (another model can cost far more): a string
	// `model` from a repository is ignored until trusted (R-W5).
	[]Key{{Path: "model", Type: Object, Named: "models", Repository: RepoApplies,
		Doc: "the model that does the work: an object of the keys below, or the name of one of `models` (`\"model\": \"fast\"`); keys a later layer sets in the object form apply over the named model"}},
	modelKeys,
	[]Key{
		{Path: "summaryModel", Type: Object, Like: "model", Named: "models", OneSetting: true, Repository: RepoIgnored,
			Doc: "the model that writes capsule summaries, so a small fast model can summarise for a large one: an object, or the name of one of `models`. Unset means `model`; keys it leaves out are taken from `model`, so `{\"name\": \"qwen2.5-coder:1.5b\"}` is enough for a small model on the same server"},
		// models are the user's: an entry says where requests go and which
		// key they carry, so a repository's are ignored until trusted, like
		// model.baseURL and model.apiKeyEnv (R-W5).
		{Path: "models", Type: Map, OneSetting: true, Repository: RepoIgnored,
			Doc: "the user's named model configurations, which `model` and `summaryModel` may pick by name and an ACP client offers as the session's model choices (docs/acp.md)"},
		{Path: "models.*", Type: Object, Like: "model",
			Doc: "one model, with the keys of `model`; keys it leaves out are the built-in defaults (not the current `model`'s)"},

		{Path: "compaction", Type: Object, OneSetting: true, Repository: RepoApplies, Doc: "the compaction keys of SPEC §6; unset keys keep their defaults"},
		{Path: "compaction.auto", Type: Bool, Repository: RepoApplies, Default: true,
			Doc: "soft triggers on or off (R-G10); the hard limit and overflow recovery stay on regardless"},
		{Path: "compaction.compactOnTurnComplete", Type: Bool, Repository: RepoApplies, Default: true,
			Doc: "a finished turn may record a pending intent (R-G6)"},
		{Path: "compaction.compactOnMilestone", Type: Bool, Repository: RepoApplies, Default: true,
			Doc: "a milestone checkpoint records an intent (R-G7)"},
		{Path: "compaction.minTokensForAutoCompact", Type: Int, Repository: RepoApplies, Default: 32000, Rule: NonNegative,
			Doc: "floor of the soft limit and of turn-complete intents (R-S2, R-G6)"},
		{Path: "compaction.minReclaimableTokens", Type: Int, Repository: RepoApplies, Default: 12000, Rule: NonNegative,
			Doc: "ROI: tokens a soft compaction must reclaim (R-R1, R-R2)"},
		{Path: "compaction.minSavingsRatio", Type: Number, Repository: RepoApplies, Default: 0.25, Rule: Ratio,
			Doc: "ROI: share of the context a soft compaction must reclaim (R-R1, R-R2)"},
		{Path: "compaction.keepRecentTokens", Type: Int, Repository: RepoApplies, Default: 20000, Rule: NonNegative, Relation: "< hard limit",
			Doc: "the recent history kept verbatim after a compaction"},
		{Path: "compaction.safetyReserveTokens", Type: Int, Repository: RepoApplies, Default: 8192, Rule: NonNegative, Relation: "hard limit > 0",
			Doc: "margin for what estimates miss (tool schemas, reasoning, templates) (R-G4)"},
		{Path: "compaction.autoCompactThresholdRatio", Type: Number, Repository: RepoApplies, Default: 0.8, Rule: Ratio,
			Doc: "the soft limit as a share of the hard limit (R-S2)"},
		{Path: "compaction.timeoutMs", Type: Int, Repository: RepoApplies, Default: 15000, Rule: Positive,
			Doc: "the summary's deadline, in milliseconds, before the degraded local capsule is used (R-F1)"},
		{Path: "compaction.backgroundTimeoutMs", Type: Int, Repository: RepoApplies, Rule: Positive, DeprecatedFor: "timeoutMs",
			Doc: "alias of `timeoutMs`: accepted with a warning; when `timeoutMs` is set in *any* layer, `timeoutMs` wins and the alias is ignored (with a warning saying so) (R-S1)"},

		{Path: "tools", Type: Object, Repository: RepoApplies, Doc: "the agent's tools"},
		{Path: "tools.approval", Type: String, Default: ApprovalAsk, Enum: []Choice{
			{Value: ApprovalAsk, Doc: "file writes, `bash` and MCP tools ask the user first (R-W3)"},
			{Value: ApprovalAuto, Doc: "tools run without asking"},
		}, Repository: RepoTighten, Tighter: ApprovalAsk, Doc: "whether tools ask before they act; writes to protected paths (docs/security.md) are asked every time either way, unless `autoApprovePaths` names them"},
		{Path: "tools.autoApprovePaths", Type: StringList, Default: []any{}, Repository: RepoNever, Scope: "machine",
			Doc: "glob patterns (`*` within a name, `**` across directories) of protected paths (SPEC R-W6, docs/security.md) that `approval: auto` and \"Allow … for this session\" may cover, e.g. `[\".vscode/settings.json\"]`; every other protected path is asked every time. Only the user's own layers set it: a repository's is ignored, trusted or not"},
		{Path: "tools.maxResultTokens", Type: Int, Default: 0, Rule: NonNegative, Repository: RepoApplies,
			Doc: "the most tokens one tool result may take in the model's input, counted like the budget; `0` means a quarter of the hard limit (R-G4). `read_file` then shows whole lines up to it and says which `offset` to continue from; `bash`, `grep`, `list_files` and MCP results keep their head and tail and say how much was left out, and the whole output is saved beside the session (`<sessionDir>/<session>.outputs/`) and named in the result. A value above the hard limit is the hard limit"},

		{Path: "mcpServers", Type: Map, OneSetting: true, Repository: RepoIgnored,
			Doc: "the user's MCP servers, by name, in the shape of Claude Code's `.mcp.json`; their tools reach the model as `mcp__<server>__<tool>`; a workspace's own `.soba/config.json` cannot start them (a repository never runs programs by being opened)"},
		{Path: "mcpServers.*", Type: Object, Doc: "one MCP server: `{command, args, env}` for stdio, `{type: \"http\", url, headers}` for HTTP"},
		{Path: "mcpServers.*.type", Type: String, Enum: []Choice{
			{Value: "stdio", Doc: "a command that speaks MCP on its stdin and stdout (the default when `command` is set)"},
			{Value: "http", Doc: "an HTTP endpoint at `url`: streamable HTTP, or the older HTTP+SSE transport when the server only speaks that"},
			{Value: "sse", Doc: "an HTTP+SSE endpoint at `url` (the older transport, as in Claude Code's `.mcp.json`)"},
		}, Doc: "how to reach the server"},
		{Path: "mcpServers.*.command", Type: String, Rule: NonEmpty, Doc: "the program to run (stdio)"},
		{Path: "mcpServers.*.args", Type: StringList, Doc: "its arguments (stdio)"},
		{Path: "mcpServers.*.env", Type: StringMap, Doc: "extra environment variables for it (stdio)"},
		{Path: "mcpServers.*.url", Type: String, Rule: HTTPURL, Doc: "the endpoint (http, sse)"},
		{Path: "mcpServers.*.headers", Type: StringMap, Doc: "HTTP headers sent with each request (http, sse)"},
		{Path: "mcpServers.*.approval", Type: String, Enum: []Choice{
			{Value: ApprovalAsk, Doc: "its tools ask the user first, even under `tools.approval: auto`"},
			{Value: ApprovalAuto, Doc: "its tools run without asking, even under `tools.approval: ask`"},
		}, Doc: "whether this server's tools ask before they run; unset, `tools.approval` decides"},

		{Path: "sessionDir", Type: String, Default: ".soba/sessions", Rule: NonEmpty, Repository: RepoApplies,
			Doc: "where session transcripts go: relative to the workspace root (an absolute or `~/` path is taken as given); it must resolve inside the workspace (R-W2)"},
		{Path: "sessionOnStart", Type: String, Default: SessionOnStartResume, Repository: RepoApplies, Enum: []Choice{
			{Value: SessionOnStartResume, Doc: "reopen the workspace's most recently updated session (one that cannot be reopened is kept as is, with a warning, and a new session starts)"},
			{Value: SessionOnStartNew, Doc: "start a new session"},
		}, Doc: "which session the language server opens when it starts; ACP's `session/new` always starts a new one"},

		{Path: "workspaceTrusted", Type: Bool, Editor: true, Repository: RepoNever,
			Doc: "sent by the editor, not a setting: `true` when the user trusts the workspace in the editor (VS Code's Workspace Trust, Neovim's `:trust`); then the repository's own configuration applies in full (SPEC R-W5, docs/security.md). Unset or `false`: only `soba-lsp trust` can trust the workspace's `.soba/config.json`"},
		{Path: "repositorySettings", Type: Object, Editor: true, Repository: RepoNever,
			Doc: "sent by the editor, not a setting: the soba keys (same shape as these settings) that came from the workspace's or a folder's own settings (`.vscode/settings.json`), so they count as the repository's, not the user's. Applied right after `.soba/config.json`, by the same rules; untrusted, only what tightens applies (SPEC R-W5)"},
	},
)

func concat(parts ...[]Key) []Key {
	var all []Key
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}

// Node is a key with the keys below it, as the loader walks them.
type Node struct {
	Key
	// Children are the keys of an Object, by name (a Like object's are its
	// model's, without defaults). Order lists their names in Keys order.
	Children map[string]*Node
	Order    []string
	// Elem is a Map's value: an Object node.
	Elem *Node
}

// Root returns the top of the description: an Object node whose children
// are the top-level keys.
func Root() *Node { return root() }

var root = sync.OnceValue(func() *Node {
	n, err := build(Keys)
	if err != nil {
		panic(err)
	}
	return n
})

// build turns the flat table into a tree, checking that it is well formed.
func build(keys []Key) (*Node, error) {
	top := &Node{Key: Key{Type: Object}, Children: map[string]*Node{}}
	byPath := map[string]*Node{"": top}
	for _, k := range keys {
		if _, dup := byPath[k.Path]; dup || k.Path == "" {
			return nil, fmt.Errorf("configschema: key %q: defined twice or empty", k.Path)
		}
		parentPath, name := "", k.Path
		if i := strings.LastIndexByte(k.Path, '.'); i >= 0 {
			parentPath, name = k.Path[:i], k.Path[i+1:]
		}
		parent, ok := byPath[parentPath]
		if !ok {
			return nil, fmt.Errorf("configschema: key %q: its object %q is not defined before it", k.Path, parentPath)
		}
		n := &Node{Key: k}
		if k.Type == Object {
			n.Children = map[string]*Node{}
		}
		switch {
		case parent.Type == Map && name == "*":
			parent.Elem = n
		case parent.Type == Object && parent.Like == "" && name != "*":
			parent.Children[name] = n
			parent.Order = append(parent.Order, name)
		default:
			return nil, fmt.Errorf("configschema: key %q: cannot be below %q", k.Path, parentPath)
		}
		if k.Planned == "" && parent.Planned != "" {
			n.Planned = parent.Planned
		}
		if err := checkKey(k, parent); err != nil {
			return nil, err
		}
		byPath[k.Path] = n
	}
	for path, n := range byPath {
		if n.Type == Map && n.Elem == nil {
			return nil, fmt.Errorf("configschema: map %q has no %q.* entry", path, path)
		}
		if m, ok := byPath[n.Named]; n.Named != "" && (!ok || m.Type != Map) {
			return nil, fmt.Errorf("configschema: %q names entries of %q, which is not a map", path, n.Named)
		}
		if n.Like == "" {
			continue
		}
		model, ok := byPath[n.Like]
		if !ok || model.Type != Object || model.Like != "" {
			return nil, fmt.Errorf("configschema: %q is like %q, which is not a plain object", path, n.Like)
		}
		n.Order = model.Order
		for name, c := range model.Children {
			like := *c
			like.Path = path + "." + name
			like.Default = nil
			n.Children[name] = &like
		}
	}
	return top, nil
}

func checkKey(k Key, parent *Node) error {
	bad := func(why string) error { return fmt.Errorf("configschema: key %q: %s", k.Path, why) }
	if k.Doc == "" {
		return bad("no Doc")
	}
	if k.Default != nil {
		if p := k.CheckType(jsonValue(k.Default)); p != "" {
			return bad("default: " + p)
		}
		if p := k.CheckValue(jsonValue(k.Default)); p != "" {
			return bad("default: " + p)
		}
	}
	if k.Enum != nil && k.Type != String {
		return bad("an enum must be a String")
	}
	if k.Editor && (strings.Contains(k.Path, ".") || k.Repository != RepoNever) {
		return bad("an editor key is top-level and never a repository's (RepoNever)")
	}
	if (k.Repository == RepoTighten) != (k.Tighter != nil) {
		return bad("Tighter is the one value of a RepoTighten key, and only of one")
	}
	if k.Repository == RepoLowerOnly && k.Type != Int && k.Type != Number {
		return bad("only a number can be RepoLowerOnly")
	}
	if k.Named != "" && k.Type != Object {
		return bad("only an Object may be Named")
	}
	if k.DeprecatedFor != "" {
		if _, ok := parent.Children[k.DeprecatedFor]; !ok {
			return bad("deprecated for an unknown key " + k.DeprecatedFor)
		}
	}
	return nil
}

// Lookup returns the node of a dotted path; a Map's entries may be named by
// any name or by "*".
func Lookup(path string) (*Node, bool) {
	n := root()
	if path == "" {
		return n, true
	}
	for name := range strings.SplitSeq(path, ".") {
		switch {
		case n.Type == Map:
			n = n.Elem
		case n.Children != nil && n.Children[name] != nil:
			n = n.Children[name]
		default:
			return nil, false
		}
	}
	return n, true
}

// Known returns the names a user may write in an object (its keys without
// the deprecated ones and the editor's), sorted.
func (n *Node) Known() []string {
	var names []string
	for name, c := range n.Children {
		if c.DeprecatedFor == "" && !c.Editor {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
