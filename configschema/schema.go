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
	// Repository is what a repository-owned layer (the workspace's
	// .soba/config.json, an editor's workspace or folder settings) of an
	// untrusted workspace may do with the key (SPEC R-W5).
	Repository Repo
}

// Repo is what an untrusted repository may do with a key (SPEC R-W5).
type Repo int

// The repository rules.
const (
	// RepoApplies: the repository's value applies (compaction tuning, the
	// session directory, …).
	RepoApplies Repo = iota
	// RepoIgnored: it chooses where data or credentials go, or starts a
	// program; ignored until the workspace is trusted.
	RepoIgnored
	// RepoLowerOnly: a limit the repository may only lower, never raise
	// what the user's model costs per request.
	RepoLowerOnly
	// RepoTighten: the repository may only tighten it (an approval it may
	// set to "ask", never to "auto").
	RepoTighten
)

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
	{Path: "model.name", Type: String, Default: "qwen2.5-coder:7b", Rule: NonEmpty,
		Doc: "the model to ask"},
	{Path: "model.apiKeyEnv", Repository: RepoIgnored, Type: String, Default: "OPENAI_API_KEY", Rule: EnvName,
		Doc: "the environment variable that holds the API key. Keys are never read from files or settings; a value that looks like a key (`sk-…`) is rejected. Set it to `ANTHROPIC_API_KEY` (or your own name) for `anthropic`"},
	{Path: "model.contextWindow", Repository: RepoLowerOnly, Type: Int, Default: 65000, Rule: Positive,
		Doc: "the model's context window, in tokens (R-S3)"},
	{Path: "model.maxOutputTokens", Repository: RepoLowerOnly, Type: Int, Default: 8000, Rule: Positive, Relation: "< `contextWindow`",
		Doc: "the tokens reserved for each reply (R-S3)"},
	{Path: "model.nativeContinuation", Type: Bool, Default: true,
		Doc: "with `openai-responses` or `anthropic`, every compaction also asks the provider for its native compaction of the same history (`/responses/compact`; Anthropic's server-side compaction, for a history above its 50,000-token minimum) and stores it with the capsule; the next requests to the same provider and model carry it in place of the capsule's text, while the portable capsule is still built and used for everything else (SPEC §11, docs/providers.md). `false` makes portable capsules only; `openai` and `ollama` have none; `summaryModel`'s is not used"},
}

// Keys is the description: every key SOBA's configuration accepts, objects
// before the keys below them, in the order the documentation lists them.
var Keys = concat(
	[]Key{{Path: "model", Type: Object, Doc: "the model that does the work"}},
	modelKeys,
	[]Key{
		{Path: "summaryModel", Type: Object, Like: "model", OneSetting: true, Repository: RepoIgnored,
			Doc: "the model that writes capsule summaries, so a small fast model can summarise for a large one. Unset means `model`; keys it leaves out are taken from `model`, so `{\"name\": \"qwen2.5-coder:1.5b\"}` is enough for a small model on the same server"},

		{Path: "compaction", Type: Object, OneSetting: true, Doc: "the compaction keys of SPEC §6; unset keys keep their defaults"},
		{Path: "compaction.auto", Type: Bool, Default: true,
			Doc: "soft triggers on or off (R-G10); the hard limit and overflow recovery stay on regardless"},
		{Path: "compaction.compactOnTurnComplete", Type: Bool, Default: true,
			Doc: "a finished turn may record a pending intent (R-G6)"},
		{Path: "compaction.compactOnMilestone", Type: Bool, Default: true,
			Doc: "a milestone checkpoint records an intent (R-G7)"},
		{Path: "compaction.minTokensForAutoCompact", Type: Int, Default: 32000, Rule: NonNegative,
			Doc: "floor of the soft limit and of turn-complete intents (R-S2, R-G6)"},
		{Path: "compaction.minReclaimableTokens", Type: Int, Default: 12000, Rule: NonNegative,
			Doc: "ROI: tokens a soft compaction must reclaim (R-R1, R-R2)"},
		{Path: "compaction.minSavingsRatio", Type: Number, Default: 0.25, Rule: Ratio,
			Doc: "ROI: share of the context a soft compaction must reclaim (R-R1, R-R2)"},
		{Path: "compaction.keepRecentTokens", Type: Int, Default: 20000, Rule: NonNegative, Relation: "< hard limit",
			Doc: "the recent history kept verbatim after a compaction"},
		{Path: "compaction.safetyReserveTokens", Type: Int, Default: 8192, Rule: NonNegative, Relation: "hard limit > 0",
			Doc: "margin for what estimates miss (tool schemas, reasoning, templates) (R-G4)"},
		{Path: "compaction.autoCompactThresholdRatio", Type: Number, Default: 0.8, Rule: Ratio,
			Doc: "the soft limit as a share of the hard limit (R-S2)"},
		{Path: "compaction.timeoutMs", Type: Int, Default: 15000, Rule: Positive,
			Doc: "the summary's deadline, in milliseconds, before the degraded local capsule is used (R-F1)"},
		{Path: "compaction.backgroundTimeoutMs", Type: Int, Rule: Positive, DeprecatedFor: "timeoutMs",
			Doc: "alias of `timeoutMs`: accepted with a warning; when `timeoutMs` is set in *any* layer, `timeoutMs` wins and the alias is ignored (with a warning saying so) (R-S1)"},

		{Path: "tools", Type: Object, Doc: "the agent's tools"},
		{Path: "tools.approval", Type: String, Default: ApprovalAsk, Repository: RepoTighten, Enum: []Choice{
			{Value: ApprovalAsk, Doc: "file writes, `bash` and MCP tools ask the user first (R-W3)"},
			{Value: ApprovalAuto, Doc: "tools run without asking"},
		}, Doc: "whether tools ask before they act"},

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

		{Path: "sessionDir", Type: String, Default: ".soba/sessions", Rule: NonEmpty,
			Doc: "where session transcripts go: relative to the workspace root (an absolute or `~/` path is taken as given); it must resolve inside the workspace (R-W2)"},
		{Path: "sessionOnStart", Type: String, Default: SessionOnStartResume, Enum: []Choice{
			{Value: SessionOnStartResume, Doc: "reopen the workspace's most recently updated session (one that cannot be reopened is kept as is, with a warning, and a new session starts)"},
			{Value: SessionOnStartNew, Doc: "start a new session"},
		}, Doc: "which session the language server opens when it starts; ACP's `session/new` always starts a new one"},
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
// the deprecated ones), sorted.
func (n *Node) Known() []string {
	var names []string
	for name, c := range n.Children {
		if c.DeprecatedFor == "" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
