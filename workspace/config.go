package workspace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/configschema"
)

// Config is SOBA's configuration (PROTOCOL.md "Configuration", SPEC §6),
// the result of every layer merged key by key over the built-in defaults.
type Config struct {
	Model ModelConfig `json:"model"`
	// SummaryModel writes capsule summaries; nil means Model does. Keys it
	// leaves out are taken from Model.
	SummaryModel *ModelConfig `json:"summaryModel,omitempty"`
	// Models are the user's named models (`models`), each over the
	// built-in defaults.
	Models map[string]ModelConfig `json:"models,omitempty"`
	// ModelName and SummaryModelName are the names in Models that `model`
	// and `summaryModel` picked, "" for the object form.
	ModelName        string           `json:"-"`
	SummaryModelName string           `json:"-"`
	Compaction       CompactionConfig `json:"compaction"`
	Tools            ToolsConfig      `json:"tools"`
	// SessionDir holds the session transcripts; relative to the workspace
	// root unless absolute (see ResolveSessionDir).
	SessionDir string `json:"sessionDir"`
	// SessionOnStart is configschema.SessionOnStartResume or
	// SessionOnStartNew: which session the language server opens at start.
	SessionOnStart string `json:"sessionOnStart"`
	// MCPServers are the user's MCP servers by name (the shape of Claude
	// Code's .mcp.json); their tools reach the model as
	// mcp__<server>__<tool>.
	MCPServers map[string]MCPServerConfig `json:"mcpServers,omitempty"`

	// RepositoryIgnored are the keys of the repository-owned layers that
	// were ignored (SPEC R-W5), sorted; empty when none were. The budget
	// and the status report them.
	RepositoryIgnored []string `json:"-"`
	// WorkspaceTrusted is set when the workspace's own configuration
	// applied in full: the editor said the workspace is trusted, or the
	// trust store records the file's current content.
	WorkspaceTrusted bool `json:"-"`
	// RepositoryWarning is the one warning about RepositoryIgnored (also
	// among LoadConfig's warnings), so a caller that reloads can tell it
	// apart and say it again only when it changes.
	RepositoryWarning string `json:"-"`
}

// MCPServerConfig is one MCP server: Command (stdio) or URL (type http).
// Its keys are those of `mcpServers.*` in package configschema.
type MCPServerConfig struct {
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Approval is "", configschema.ApprovalAsk or configschema.ApprovalAuto.
	Approval string `json:"approval,omitempty"`
}

// ModelConfig defines a model: where it is served and its limits (R-S3).
// Its keys, defaults and rules are those of `model` in package
// configschema.
type ModelConfig struct {
	// Provider is one of configschema's Provider values.
	Provider string `json:"provider"`
	BaseURL  string `json:"baseURL"`
	Name     string `json:"name"`
	// APIKeyEnv names the environment variable that holds the API key; the
	// key itself is never read from a file.
	APIKeyEnv       string `json:"apiKeyEnv"`
	ContextWindow   int    `json:"contextWindow"`
	MaxOutputTokens int    `json:"maxOutputTokens"`
	// NativeContinuation asks a provider with a native compaction for it
	// at every compaction (SPEC §11).
	NativeContinuation bool `json:"nativeContinuation"`
}

// CompactionConfig holds exactly the keys of SPEC §6 (`compaction` in
// package configschema); the engine's type.
type CompactionConfig = compaction.Keys

// ToolsConfig configures the agent's tools.
type ToolsConfig struct {
	// Approval is configschema.ApprovalAsk or configschema.ApprovalAuto.
	Approval string `json:"approval"`
	// AutoApprovePaths are glob patterns of protected paths (SPEC R-W6)
	// that approval auto and an answer for the session may cover; only the
	// user's layers set them.
	AutoApprovePaths []string `json:"autoApprovePaths"`
	// MaxResultTokens is the most tokens one tool result may take; 0 means
	// a quarter of the hard limit.
	MaxResultTokens int `json:"maxResultTokens"`
}

// DefaultConfig returns the built-in defaults, those of package
// configschema (PROTOCOL.md, SPEC §6, R-S1).
func DefaultConfig() Config {
	var c Config
	configschema.MustDecodeDefaults("", &c)
	return c
}

// HardLimit is contextWindow − maxOutputTokens − safetyReserveTokens (R-G4),
// with the window and output limit of the active model (R-S3).
func (c Config) HardLimit() int { return c.EngineConfig().HardLimit() }

// SoftLimit is the soft limit of R-S2.
func (c Config) SoftLimit() int { return c.EngineConfig().SoftLimit() }

// Summary returns the model that writes capsule summaries: SummaryModel when
// set, else Model.
func (c Config) Summary() ModelConfig {
	if c.SummaryModel != nil {
		return *c.SummaryModel
	}
	return c.Model
}

// EngineConfig returns the compaction engine's view of the configuration:
// the compaction keys with the active model's window and output limit.
func (c Config) EngineConfig() compaction.Config {
	return compaction.Config{Keys: c.Compaction, ContextWindow: c.Model.ContextWindow, MaxOutputTokens: c.Model.MaxOutputTokens}
}

// ResolveSessionDir returns the absolute session directory: SessionDir as
// is when absolute, under the user's home for a leading "~/", else under
// the workspace root.
func (c Config) ResolveSessionDir(root string) string {
	d := c.SessionDir
	if d == "" {
		d = DefaultConfig().SessionDir
	}
	if rest, ok := strings.CutPrefix(d, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	if filepath.IsAbs(d) {
		return filepath.Clean(d)
	}
	return filepath.Join(root, d)
}

// Layers are the configuration sources above the built-in defaults, in
// order (PROTOCOL.md "Configuration"); each later one overrides the earlier
// key by key.
type Layers struct {
	// UserFile and WorkspaceFile are JSON files; a file that does not exist
	// means the layer is absent. An empty UserFile is no user layer (its
	// place depends on the environment: StandardLayers or UserConfigFile
	// finds it); an empty WorkspaceFile means WorkspaceConfigFile(root).
	UserFile, WorkspaceFile string
	// InitOptions is the `initializationOptions` value and DidChange the
	// latest `settings.soba` of workspace/didChangeConfiguration; nil or JSON
	// null means absent. Their `repositorySettings` is a layer of its own,
	// the repository's; their `workspaceTrusted` says whether the editor
	// trusts the workspace (SPEC R-W5).
	InitOptions, DidChange json.RawMessage
	// TrustStore is the trust store file (TrustStoreFile) that may record
	// WorkspaceFile as trusted; empty for none.
	TrustStore string
	// WorkspaceFileIsUsers marks a WorkspaceFile the user named on the
	// command line (--config): the user's own layer, not the repository's.
	WorkspaceFileIsUsers bool
}

// Names of the non-file layers in messages.
const (
	LayerDefaults    = "defaults"
	LayerInitOptions = "initializationOptions"
	LayerDidChange   = "workspace/didChangeConfiguration settings.soba"
	// keyRepositorySettings and keyWorkspaceTrusted are the editor's keys
	// of those two layers (configschema's Editor keys).
	keyRepositorySettings = "repositorySettings"
	keyWorkspaceTrusted   = "workspaceTrusted"
)

// StandardLayers returns the layers with the user file of UserConfigFile
// and `<root>/.soba/config.json`.
func StandardLayers(root string, initOptions, didChange json.RawMessage) Layers {
	user, _ := UserConfigFile(os.Getenv)
	store, _ := TrustStoreFile(os.Getenv)
	return Layers{UserFile: user, WorkspaceFile: WorkspaceConfigFile(root), InitOptions: initOptions, DidChange: didChange, TrustStore: store}
}

// UserConfigFile returns $XDG_CONFIG_HOME/soba/config.json, or
// $HOME/.config/soba/config.json when XDG_CONFIG_HOME is unset or not
// absolute (as the XDG spec says). getenv is os.Getenv outside tests.
func UserConfigFile(getenv func(string) string) (string, error) {
	if x := getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "soba", "config.json"), nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", errors.New("config: neither XDG_CONFIG_HOME nor HOME is set; no user configuration file")
	}
	return filepath.Join(home, ".config", "soba", "config.json"), nil
}

// WorkspaceConfigFile returns `<root>/.soba/config.json`.
func WorkspaceConfigFile(root string) string {
	return filepath.Join(root, ".soba", "config.json")
}

// ConfigError is one bad value: the layer it came from (a file path, or
// LayerInitOptions, LayerDidChange, LayerDefaults), the dotted key path and
// what is wrong with it.
type ConfigError struct {
	Layer, Key, Problem string
}

func (e *ConfigError) Error() string {
	if e.Key == "" {
		return e.Layer + ": " + e.Problem
	}
	return e.Layer + ": " + e.Key + ": " + e.Problem
}

// LoadConfig merges the layers over the defaults and validates the result.
// It returns either a complete, valid Config with any warnings (deprecated
// keys), or an error listing every bad value with its layer and key path
// (each one a *ConfigError, joined). It never returns a half-applied
// configuration, so a caller applying a didChangeConfiguration keeps its
// previous Config on error. root is the workspace root, whose
// .soba/config.json is the workspace layer unless l names another file.
func LoadConfig(root string, l Layers) (Config, []string, error) {
	if l.WorkspaceFile == "" && root != "" {
		l.WorkspaceFile = WorkspaceConfigFile(root)
	}
	var (
		errs     []error
		warnings []string
		merged   = map[string]any{}
		origin   = map[string]string{} // leaf key path -> layer
	)
	// The editor's two layers, parsed first: they say whether the editor
	// trusts the workspace and carry the repository's editor settings.
	editor := func(name string, data json.RawMessage) map[string]any {
		if len(data) == 0 {
			return nil
		}
		obj, err := parseLayer(name, data)
		if err != nil {
			errs = append(errs, err)
		}
		return obj
	}
	initObj, didObj := editor(LayerInitOptions, l.InitOptions), editor(LayerDidChange, l.DidChange)
	trusted, repoSettings, repoName, ee := editorKeys(initObj, didObj)
	errs = append(errs, ee...)

	var sources []layerSource
	if l.UserFile != "" {
		data, err := readConfigLayer(root, l.UserFile)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			errs = append(errs, &ConfigError{Layer: l.UserFile, Problem: "cannot read: " + err.Error()})
		default:
			obj, err := parseLayer(l.UserFile, data)
			if err != nil {
				errs = append(errs, err)
			}
			sources = append(sources, layerSource{name: l.UserFile, obj: obj})
		}
	}
	fileTrusted := false
	if l.WorkspaceFile != "" {
		data, err := readConfigLayer(root, l.WorkspaceFile)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			errs = append(errs, &ConfigError{Layer: l.WorkspaceFile, Problem: "cannot read: " + err.Error()})
		default:
			obj, err := parseLayer(l.WorkspaceFile, data)
			if err != nil {
				errs = append(errs, err)
			}
			// The very bytes parsed are the ones hashed: a file changed
			// after `soba-lsp trust` is untrusted again.
			fileTrusted = IsTrustedConfig(l.TrustStore, l.WorkspaceFile, data)
			sources = append(sources, layerSource{name: l.WorkspaceFile, obj: obj, repository: !l.WorkspaceFileIsUsers, trusted: trusted || fileTrusted})
		}
	}
	if repoSettings != nil {
		sources = append(sources, layerSource{name: repoName, obj: repoSettings, repository: true, trusted: trusted})
	}
	if initObj != nil {
		sources = append(sources, layerSource{name: LayerInitOptions, obj: initObj})
	}
	if didObj != nil {
		sources = append(sources, layerSource{name: LayerDidChange, obj: didObj})
	}

	layerIndex := map[string]int{LayerDefaults: -1}
	var (
		ignored        []IgnoredKey
		ignoredWarning string
	)
	for i, src := range sources {
		layerIndex[src.name] = i
		obj := src.obj
		if obj == nil {
			continue
		}
		if !src.repository && src.name == l.UserFile {
			errs = append(errs, editorKeysInFile(src.name, obj)...)
		}
		// A repository's layer is checked whole first: a bad value is an
		// error naming it, whether or not it would apply.
		le, lw := checkObject(src.name, "", obj, configschema.Root())
		errs = append(errs, le...)
		warnings = append(warnings, lw...)
		if len(le) > 0 {
			continue
		}
		if src.repository {
			for _, k := range RepositoryFilter(obj, merged, src.trusted) {
				ignored = append(ignored, IgnoredKey{Layer: src.name, Key: k, Trusted: src.trusted})
			}
		}
		mergeInto(merged, obj, "", src.name, origin)
	}
	if len(ignored) > 0 {
		ignoredWarning = IgnoredWarning(root, ignored)
		warnings = append(warnings, ignoredWarning)
	}
	if len(errs) > 0 {
		return Config{}, nil, errors.Join(errs...)
	}

	// A deprecated alias: the key that replaces it, from any layer, wins (R-S1).
	warnings = append(warnings, applyDeprecated(merged, origin)...)
	dropPlanned(merged, configschema.Root())

	cfg := DefaultConfig()
	models, _ := merged["models"].(map[string]any)
	delete(merged, "models")
	for _, name := range slices.Sorted(maps.Keys(models)) {
		m := DefaultConfig().Model
		if err := decodeInto(models[name], &m); err != nil {
			return Config{}, nil, err
		}
		if cfg.Models == nil {
			cfg.Models = map[string]ModelConfig{}
		}
		cfg.Models[name] = m
	}
	var nameErrs []error
	cfg.ModelName, nameErrs = resolveNamed(merged, "model", models, origin, nameErrs)
	cfg.SummaryModelName, nameErrs = resolveNamed(merged, "summaryModel", models, origin, nameErrs)
	if len(nameErrs) > 0 {
		return Config{}, nil, errors.Join(nameErrs...)
	}
	summary, hasSummary := merged["summaryModel"]
	delete(merged, "summaryModel")
	if err := decodeInto(merged, &cfg); err != nil {
		return Config{}, nil, err
	}
	if hasSummary {
		sm := cfg.Model
		if cfg.SummaryModelName != "" {
			// A named model's left-out keys are the defaults, as in
			// models, not the main model's.
			sm = DefaultConfig().Model
		}
		if err := decodeInto(summary, &sm); err != nil {
			return Config{}, nil, err
		}
		cfg.SummaryModel = &sm
	}
	if err := validate(cfg, origin, layerIndex); err != nil {
		return Config{}, nil, err
	}
	if err := checkSessionDir(cfg, root, origin); err != nil {
		return Config{}, nil, err
	}
	for _, k := range ignored {
		cfg.RepositoryIgnored = append(cfg.RepositoryIgnored, k.Key)
	}
	slices.Sort(cfg.RepositoryIgnored)
	cfg.RepositoryIgnored = slices.Compact(cfg.RepositoryIgnored)
	cfg.WorkspaceTrusted = trusted || fileTrusted
	cfg.RepositoryWarning = ignoredWarning
	return cfg, warnings, nil
}

// checkSessionDir refuses a sessionDir that does not resolve inside the
// workspace root, lexically or through a symlink (R-W2): the transcript is
// the workspace's receipt, and a repository's configuration must not send
// it, or the appends to it, elsewhere.
func checkSessionDir(cfg Config, root string, origin map[string]string) error {
	if root == "" {
		return nil
	}
	r, err := NewRoot(root)
	if err != nil {
		return nil // no workspace to hold it to; the caller reports the root
	}
	defer r.Close()
	dir := cfg.ResolveSessionDir(r.Dir())
	_, err = r.Real(dir)
	if err == nil {
		return nil
	}
	layer := origin["sessionDir"]
	if layer == "" {
		layer = LayerDefaults
	}
	problem := fmt.Sprintf("%q must resolve inside the workspace %s (R-W2)", cfg.SessionDir, r.Dir())
	if err != nil {
		problem += ": " + err.Error()
	}
	return &ConfigError{Layer: layer, Key: "sessionDir", Problem: problem}
}

// pickedName marks, in a merged Named object, the entry an earlier layer
// picked by name; checkObject refuses it in a layer (it is not a key).
const pickedName = "\x00name"

// resolveNamed replaces a Named key's pick (`"model": "fast"`, or a later
// layer's object over it) by the entry of models it names, with the later
// layers' keys over it, and returns the name; "" for the object form. A
// name that is not among models is an error naming the ones that are.
func resolveNamed(merged map[string]any, key string, models map[string]any, origin map[string]string, errs []error) (string, []error) {
	var name string
	over := map[string]any{}
	switch v := merged[key].(type) {
	case string:
		name = v
	case map[string]any:
		name, _ = v[pickedName].(string)
		for k, x := range v {
			if k != pickedName {
				over[k] = x
			}
		}
	}
	if name == "" {
		return "", errs
	}
	entry, ok := models[name].(map[string]any)
	if !ok {
		known := "none are defined; add them to the user settings' `models`"
		if len(models) > 0 {
			known = "known: " + strings.Join(slices.Sorted(maps.Keys(models)), ", ")
		}
		layer := origin[key]
		return "", append(errs, &ConfigError{Layer: layer, Key: key, Problem: fmt.Sprintf("%q is not one of models (%s)", name, known)})
	}
	picked := maps.Clone(entry)
	maps.Copy(picked, over)
	merged[key] = picked
	return name, errs
}

func decodeInto(v any, dst any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(dst); err != nil {
		// The schema walk admitted this value; a decode failure is a bug
		// in the schema, reported rather than half-applied.
		return fmt.Errorf("config: internal: schema and types disagree: %w", err)
	}
	return nil
}

// parseLayer reads one layer as a JSON object (nil for an empty file or JSON
// null). Numbers stay json.Number so integers are checked exactly.
func parseLayer(name string, data []byte) (map[string]any, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, &ConfigError{Layer: name, Problem: "malformed JSON: " + describeJSONError(data, err, d.InputOffset())}
	}
	end := d.InputOffset()
	if _, err := d.Token(); err != io.EOF {
		for end < int64(len(data)) && strings.IndexByte(" \t\r\n", data[end]) >= 0 {
			end++
		}
		line, col := lineCol(data, end)
		return nil, &ConfigError{Layer: name, Problem: fmt.Sprintf("malformed JSON: unexpected data after the top-level value at line %d, column %d", line, col)}
	}
	if v == nil {
		return nil, nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, &ConfigError{Layer: name, Problem: "must be a JSON object, got " + configschema.JSONType(v)}
	}
	return obj, nil
}

func describeJSONError(data []byte, err error, off int64) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = max(se.Offset-1, 0) // Offset counts the offending byte
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		off = int64(len(data))
		err = errors.New("unexpected end of input")
	}
	line, col := lineCol(data, off)
	return fmt.Sprintf("%v at line %d, column %d (offset %d)", err, line, col, off)
}

// lineCol converts a byte offset to a 1-based line and column.
func lineCol(data []byte, off int64) (int, int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// mergeInto overlays src on dst key by key: objects merge recursively, null
// removes the key (back to the default), anything else replaces. origin
// records the layer of each leaf.
func mergeInto(dst, src map[string]any, prefix, layer string, origin map[string]string) {
	for k, v := range src {
		path := join(prefix, k)
		switch v := v.(type) {
		case nil:
			delete(dst, k)
			for p := range origin {
				if p == path || strings.HasPrefix(p, path+".") {
					delete(origin, p)
				}
			}
		case map[string]any:
			sub, ok := dst[k].(map[string]any)
			if !ok {
				sub = map[string]any{}
				if name, isName := dst[k].(string); isName {
					// An object over a name: its keys apply over the
					// named model (resolveNamed).
					sub[pickedName] = name
				}
				dst[k] = sub
			}
			origin[path] = layer
			mergeInto(sub, v, path, layer, origin)
		default:
			dst[k] = v
			origin[path] = layer
		}
	}
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

// checkObject checks one layer's object against the description (package
// configschema), collecting an error for every unknown key, wrong type and
// out-of-range value, and a warning for every deprecated key and every key
// or value this version does not use yet. Keys are visited in sorted order
// so messages are stable.
func checkObject(layer, prefix string, obj map[string]any, n *configschema.Node) (errs []error, warnings []string) {
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		v, path := obj[k], join(prefix, k)
		c := n.Elem
		if n.Type != configschema.Map {
			c = n.Children[k]
		}
		if c == nil {
			errs = append(errs, &ConfigError{Layer: layer, Key: path, Problem: unknownKey(k, n)})
			continue
		}
		if v == nil {
			continue // null: back to the default
		}
		if p := c.CheckType(v); p != "" {
			errs = append(errs, &ConfigError{Layer: layer, Key: path, Problem: p})
			continue
		}
		if c.Planned != "" && n.Planned == "" {
			warnings = append(warnings, fmt.Sprintf("%s: %s is accepted, but this version does not use it yet (planned: %s)", layer, path, c.Planned))
		}
		if name, isName := v.(string); isName && c.Named != "" {
			// A Named object picks an entry by name; whether it exists
			// is known once every layer is merged (resolveNamed).
			if strings.TrimSpace(name) == "" {
				errs = append(errs, &ConfigError{Layer: layer, Key: path, Problem: "must be an object or the name of one of " + c.Named})
			}
			continue
		}
		if c.Type == configschema.Object || c.Type == configschema.Map {
			e, w := checkObject(layer, path, v.(map[string]any), c)
			errs, warnings = append(errs, e...), append(warnings, w...)
			continue
		}
		if p := c.CheckValue(v); p != "" {
			errs = append(errs, &ConfigError{Layer: layer, Key: path, Problem: p})
			continue
		}
		if planned := c.PlannedChoice(v); planned != "" {
			warnings = append(warnings, fmt.Sprintf("%s: %s %q is accepted, but this version does not support it yet (planned: %s)", layer, path, v, planned))
		}
		if c.Type == configschema.Int {
			// 1e4 and 20000.0 are whole numbers; store them as such so
			// the typed decode takes them.
			obj[k] = wholeNumber(v.(json.Number))
		}
		if c.DeprecatedFor != "" {
			warnings = append(warnings, fmt.Sprintf("%s: %s is deprecated; use %s", layer, path, join(prefix, c.DeprecatedFor)))
		}
	}
	return errs, warnings
}

func wholeNumber(n json.Number) int64 {
	if i, err := n.Int64(); err == nil {
		return i
	}
	f, _ := n.Float64()
	return int64(f)
}

// applyDeprecated replaces each deprecated key of the merged configuration
// by the key that replaces it, unless that one is set in any layer: then
// the deprecated one is ignored, with a warning (R-S1).
func applyDeprecated(merged map[string]any, origin map[string]string) (warnings []string) {
	for _, k := range configschema.Keys {
		if k.DeprecatedFor == "" {
			continue
		}
		parent := strings.TrimSuffix(strings.TrimSuffix(k.Path, k.Name()), ".")
		obj := merged
		for name := range strings.SplitSeq(parent, ".") {
			if name != "" {
				obj, _ = obj[name].(map[string]any)
			}
		}
		alias, ok := obj[k.Name()]
		if !ok {
			continue
		}
		newPath := join(parent, k.DeprecatedFor)
		if _, set := obj[k.DeprecatedFor]; set {
			warnings = append(warnings, fmt.Sprintf("%s: %s is ignored: %s is set (in %s)", origin[k.Path], k.Path, newPath, origin[newPath]))
		} else {
			obj[k.DeprecatedFor] = alias
			origin[newPath] = origin[k.Path]
		}
		delete(obj, k.Name())
	}
	return warnings
}

// dropPlanned removes the keys this version does not use yet, which the
// typed configuration has no field for.
func dropPlanned(obj map[string]any, n *configschema.Node) {
	for k, v := range obj {
		c := n.Elem
		if n.Type != configschema.Map {
			c = n.Children[k]
		}
		switch {
		case c == nil:
		case c.Planned != "":
			delete(obj, k)
		case c.Type == configschema.Object || c.Type == configschema.Map:
			if sub, ok := v.(map[string]any); ok {
				dropPlanned(sub, c)
			}
		}
	}
}

func unknownKey(k string, n *configschema.Node) string {
	known := n.Known()
	msg := "unknown key"
	if s := closest(k, known); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg + "; known keys: " + strings.Join(known, ", ")
}

// closest returns the known key within edit distance 2 of k (or equal but
// for case), or "".
func closest(k string, known []string) string {
	best, bestD := "", 3
	for _, c := range known {
		d := editDistance(strings.ToLower(k), strings.ToLower(c))
		if d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// validate checks the rules that relate several keys, on the merged
// configuration. Each problem is reported at the involved key set by the
// latest layer, since that is the one the user most likely just changed.
func validate(c Config, origin map[string]string, layerIndex map[string]int) error {
	var errs []error
	blame := func(keys ...string) (string, string) {
		bestKey, bestLayer, bestIdx := keys[0], LayerDefaults, -2
		for _, k := range keys {
			l, ok := origin[k]
			if !ok {
				l = LayerDefaults
			}
			if i := layerIndex[l]; i > bestIdx {
				bestKey, bestLayer, bestIdx = k, l, i
			}
		}
		return bestKey, bestLayer
	}
	models := []struct {
		prefix string
		m      ModelConfig
	}{{"model", c.Model}}
	if c.SummaryModel != nil {
		models = append(models, struct {
			prefix string
			m      ModelConfig
		}{"summaryModel", *c.SummaryModel})
	}
	for _, name := range slices.Sorted(maps.Keys(c.Models)) {
		models = append(models, struct {
			prefix string
			m      ModelConfig
		}{"models." + name, c.Models[name]})
	}
	for _, mm := range models {
		if mm.m.MaxOutputTokens >= mm.m.ContextWindow {
			key, layer := blame(mm.prefix+".maxOutputTokens", mm.prefix+".contextWindow")
			errs = append(errs, &ConfigError{Layer: layer, Key: key, Problem: fmt.Sprintf("%s.maxOutputTokens %d must be less than %s.contextWindow %d",
				mm.prefix, mm.m.MaxOutputTokens, mm.prefix, mm.m.ContextWindow)})
		}
	}
	if len(errs) == 0 {
		limitKeys := []string{"compaction.safetyReserveTokens", "model.contextWindow", "model.maxOutputTokens"}
		h := c.HardLimit()
		formula := fmt.Sprintf("hard limit %d = model.contextWindow %d - model.maxOutputTokens %d - compaction.safetyReserveTokens %d",
			h, c.Model.ContextWindow, c.Model.MaxOutputTokens, c.Compaction.SafetyReserveTokens)
		if h <= 0 {
			key, layer := blame(limitKeys...)
			errs = append(errs, &ConfigError{Layer: layer, Key: key, Problem: formula + " must be greater than 0 (R-G4)"})
		} else if c.Compaction.KeepRecentTokens >= h {
			key, layer := blame(append([]string{"compaction.keepRecentTokens"}, limitKeys...)...)
			errs = append(errs, &ConfigError{Layer: layer, Key: key, Problem: fmt.Sprintf("compaction.keepRecentTokens %d must be less than the %s (R-S1)",
				c.Compaction.KeepRecentTokens, formula)})
		}
	}
	return errors.Join(errs...)
}
