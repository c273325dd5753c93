package workspace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/soba-agent/soba-lsp/internal/text"

	"github.com/soba-agent/soba-lsp/compaction"
)

// Config is SOBA's configuration (PROTOCOL.md "Configuration", SPEC §6),
// the result of every layer merged key by key over the built-in defaults.
type Config struct {
	Model ModelConfig `json:"model"`
	// SummaryModel writes capsule summaries; nil means Model does. Keys it
	// leaves out are taken from Model.
	SummaryModel *ModelConfig     `json:"summaryModel,omitempty"`
	Compaction   CompactionConfig `json:"compaction"`
	Tools        ToolsConfig      `json:"tools"`
	// SessionDir holds the session transcripts; relative to the workspace
	// root unless absolute (see ResolveSessionDir).
	SessionDir string `json:"sessionDir"`
}

// ModelConfig defines a model: where it is served and its limits (R-S3).
type ModelConfig struct {
	// Provider is ProviderOllama, ProviderOpenAI or ProviderAnthropic.
	Provider string `json:"provider"`
	BaseURL  string `json:"baseURL"`
	Name     string `json:"name"`
	// APIKeyEnv names the environment variable that holds the API key; the
	// key itself is never read from a file.
	APIKeyEnv       string `json:"apiKeyEnv"`
	ContextWindow   int    `json:"contextWindow"`
	MaxOutputTokens int    `json:"maxOutputTokens"`
}

// CompactionConfig holds exactly the keys of SPEC §6; the engine defines
// them (and their defaults) once.
type CompactionConfig = compaction.Keys

// ToolsConfig configures the agent's tools.
type ToolsConfig struct {
	// Approval is ApprovalAsk or ApprovalAuto.
	Approval string `json:"approval"`
}

// Values of model.provider and tools.approval.
const (
	ProviderOllama    = "ollama"
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"

	ApprovalAsk  = "ask"
	ApprovalAuto = "auto"
)

// DefaultConfig returns the built-in defaults (PROTOCOL.md, SPEC §6, R-S1).
func DefaultConfig() Config {
	return Config{
		Model: ModelConfig{
			Provider:        ProviderOllama,
			BaseURL:         "http://127.0.0.1:11434",
			Name:            "qwen2.5-coder:7b",
			APIKeyEnv:       "OPENAI_API_KEY",
			ContextWindow:   65000,
			MaxOutputTokens: 8000,
		},
		Compaction: compaction.DefaultKeys(),
		Tools:      ToolsConfig{Approval: ApprovalAsk},
		SessionDir: ".soba/sessions",
	}
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
	// null means absent.
	InitOptions, DidChange json.RawMessage
}

// Names of the non-file layers in messages.
const (
	LayerDefaults    = "defaults"
	LayerInitOptions = "initializationOptions"
	LayerDidChange   = "workspace/didChangeConfiguration settings.soba"
)

// StandardLayers returns the layers with the user file of UserConfigFile
// and `<root>/.soba/config.json`.
func StandardLayers(root string, initOptions, didChange json.RawMessage) Layers {
	user, _ := UserConfigFile(os.Getenv)
	return Layers{UserFile: user, WorkspaceFile: WorkspaceConfigFile(root), InitOptions: initOptions, DidChange: didChange}
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
	sources := []struct {
		name string
		data []byte
	}{}
	for _, f := range []string{l.UserFile, l.WorkspaceFile} {
		if f == "" {
			continue
		}
		data, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, &ConfigError{Layer: f, Problem: "cannot read: " + err.Error()})
			continue
		}
		sources = append(sources, struct {
			name string
			data []byte
		}{f, data})
	}
	if len(l.InitOptions) > 0 {
		sources = append(sources, struct {
			name string
			data []byte
		}{LayerInitOptions, l.InitOptions})
	}
	if len(l.DidChange) > 0 {
		sources = append(sources, struct {
			name string
			data []byte
		}{LayerDidChange, l.DidChange})
	}
	layerIndex := map[string]int{LayerDefaults: -1}
	for i, src := range sources {
		layerIndex[src.name] = i
		obj, err := parseLayer(src.name, src.data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if obj == nil {
			continue
		}
		le, lw := checkObject(src.name, "", obj, configSchema)
		errs = append(errs, le...)
		warnings = append(warnings, lw...)
		if len(le) == 0 {
			mergeInto(merged, obj, "", src.name, origin)
		}
	}
	if len(errs) > 0 {
		return Config{}, nil, errors.Join(errs...)
	}

	// The deprecated alias: timeoutMs, from any layer, wins over it (R-S1).
	if comp, ok := merged["compaction"].(map[string]any); ok {
		if alias, ok := comp[aliasTimeout]; ok {
			if _, set := comp["timeoutMs"]; set {
				warnings = append(warnings, fmt.Sprintf("%s: compaction.%s is ignored: compaction.timeoutMs is set (in %s)",
					origin["compaction."+aliasTimeout], aliasTimeout, origin["compaction.timeoutMs"]))
			} else {
				comp["timeoutMs"] = alias
				origin["compaction.timeoutMs"] = origin["compaction."+aliasTimeout]
			}
			delete(comp, aliasTimeout)
		}
	}

	cfg := DefaultConfig()
	summary, hasSummary := merged["summaryModel"]
	delete(merged, "summaryModel")
	if err := decodeInto(merged, &cfg); err != nil {
		return Config{}, nil, err
	}
	if hasSummary {
		sm := cfg.Model
		if err := decodeInto(summary, &sm); err != nil {
			return Config{}, nil, err
		}
		cfg.SummaryModel = &sm
	}
	if err := validate(cfg, origin, layerIndex); err != nil {
		return Config{}, nil, err
	}
	return cfg, warnings, nil
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
		return nil, &ConfigError{Layer: name, Problem: "must be a JSON object, got " + jsonType(v)}
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

// The schema: every key SOBA accepts, its JSON type and its own range.
// Checks that relate several keys are in validate.

type kind int

const (
	kindObject kind = iota
	kindBool
	kindString
	kindInt
	kindNumber
)

type field struct {
	kind     kind
	check    func(v any) string // "" when fine
	children map[string]field
	// deprecated, when set, names the key that replaces this one.
	deprecated string
}

const aliasTimeout = "backgroundTimeoutMs"

var (
	modelSchema = map[string]field{
		"provider":        {kind: kindString, check: oneOf(ProviderOllama, ProviderOpenAI, ProviderAnthropic)},
		"baseURL":         {kind: kindString, check: httpURL},
		"name":            {kind: kindString, check: nonEmpty},
		"apiKeyEnv":       {kind: kindString, check: envName},
		"contextWindow":   {kind: kindInt, check: positive},
		"maxOutputTokens": {kind: kindInt, check: positive},
	}
	compactionSchema = map[string]field{
		"auto":                      {kind: kindBool},
		"compactOnTurnComplete":     {kind: kindBool},
		"compactOnMilestone":        {kind: kindBool},
		"minTokensForAutoCompact":   {kind: kindInt, check: nonNegative},
		"minReclaimableTokens":      {kind: kindInt, check: nonNegative},
		"minSavingsRatio":           {kind: kindNumber, check: ratio},
		"keepRecentTokens":          {kind: kindInt, check: nonNegative},
		"safetyReserveTokens":       {kind: kindInt, check: nonNegative},
		"autoCompactThresholdRatio": {kind: kindNumber, check: ratio},
		"timeoutMs":                 {kind: kindInt, check: positive},
		aliasTimeout:                {kind: kindInt, check: positive, deprecated: "timeoutMs"},
	}
	configSchema = map[string]field{
		"model":        {kind: kindObject, children: modelSchema},
		"summaryModel": {kind: kindObject, children: modelSchema},
		"compaction":   {kind: kindObject, children: compactionSchema},
		"tools": {kind: kindObject, children: map[string]field{
			"approval": {kind: kindString, check: oneOf(ApprovalAsk, ApprovalAuto)},
		}},
		"sessionDir": {kind: kindString, check: nonEmpty},
	}
)

// checkObject checks one layer's object against the schema, collecting an
// error for every unknown key, wrong type and out-of-range value, and a
// warning for every deprecated key. Keys are visited in sorted order so
// messages are stable.
func checkObject(layer, prefix string, obj map[string]any, schema map[string]field) (errs []error, warnings []string) {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, path := obj[k], join(prefix, k)
		f, ok := schema[k]
		if !ok {
			errs = append(errs, &ConfigError{Layer: layer, Key: path, Problem: unknownKey(k, schema)})
			continue
		}
		if v == nil {
			continue // null: back to the default
		}
		if p := checkKind(f.kind, v); p != "" {
			errs = append(errs, &ConfigError{Layer: layer, Key: path, Problem: p})
			continue
		}
		if f.kind == kindObject {
			e, w := checkObject(layer, path, v.(map[string]any), f.children)
			errs, warnings = append(errs, e...), append(warnings, w...)
			continue
		}
		if f.check != nil {
			if p := f.check(v); p != "" {
				errs = append(errs, &ConfigError{Layer: layer, Key: path, Problem: p})
				continue
			}
		}
		if f.kind == kindInt {
			// 1e4 and 20000.0 are whole numbers; store them as such so
			// the typed decode takes them.
			obj[k] = int64(num(v))
		}
		if f.deprecated != "" {
			warnings = append(warnings, fmt.Sprintf("%s: %s is deprecated; use %s", layer, path, join(prefix, f.deprecated)))
		}
	}
	return errs, warnings
}

func unknownKey(k string, schema map[string]field) string {
	known := make([]string, 0, len(schema))
	for name, f := range schema {
		if f.deprecated == "" {
			known = append(known, name)
		}
	}
	sort.Strings(known)
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

func checkKind(k kind, v any) string {
	want := map[kind]string{kindObject: "an object", kindBool: "true or false", kindString: "a string",
		kindInt: "a whole number", kindNumber: "a number"}[k]
	ok := false
	switch k {
	case kindObject:
		_, ok = v.(map[string]any)
	case kindBool:
		_, ok = v.(bool)
	case kindString:
		_, ok = v.(string)
	case kindNumber:
		_, ok = v.(json.Number)
	case kindInt:
		if n, isNum := v.(json.Number); isNum {
			if _, err := n.Int64(); err == nil {
				ok = true
			} else if f, err := n.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
				ok = true // 1e4, 20000.0
			}
		}
	}
	if ok {
		return ""
	}
	return fmt.Sprintf("want %s, got %s", want, describe(v))
}

func describe(v any) string {
	b, _ := json.Marshal(v)
	s := string(b)
	return jsonType(v) + " " + text.Clip(s, 40+len("…"))
}

func jsonType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

func num(v any) float64 {
	switch v := v.(type) {
	case json.Number:
		f, _ := v.Float64()
		return f
	case int64:
		return float64(v)
	}
	return 0
}

func nonNegative(v any) string {
	if num(v) < 0 {
		return fmt.Sprintf("%v is negative; it must be 0 or more", v)
	}
	return ""
}

func positive(v any) string {
	if num(v) <= 0 {
		return fmt.Sprintf("%v must be greater than 0", v)
	}
	return ""
}

func ratio(v any) string {
	if f := num(v); f < 0 || f > 1 || math.IsNaN(f) {
		return fmt.Sprintf("%v is outside 0..1", v)
	}
	return ""
}

func nonEmpty(v any) string {
	if strings.TrimSpace(v.(string)) == "" {
		return "must not be empty"
	}
	return ""
}

func oneOf(allowed ...string) func(any) string {
	return func(v any) string {
		if slices.Contains(allowed, v.(string)) {
			return ""
		}
		return fmt.Sprintf("%q is not one of %s", v, strings.Join(allowed, ", "))
	}
}

func httpURL(v any) string {
	u, err := url.Parse(v.(string))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("%q is not an http:// or https:// URL with a host", v)
	}
	return ""
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func envName(v any) string {
	s := v.(string)
	if s == "" || envNameRE.MatchString(s) {
		return "" // "" means no key is sent
	}
	return fmt.Sprintf("%q is not an environment variable name (letters, digits, _); put the key in a variable such as OPENAI_API_KEY and name the variable here — keys are never read from files", text.Clip(s, 12+len("…")))
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
