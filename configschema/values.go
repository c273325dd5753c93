package configschema

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"

	"github.com/soba-agent/soba-lsp/internal/lazyregexp"
	"github.com/soba-agent/soba-lsp/internal/text"
)

// Values are checked as encoding/json decodes them with UseNumber: bool,
// string, json.Number, []any, map[string]any (int64 is taken too, for a
// whole number the loader already normalised).

// CheckType returns what is wrong with v's JSON type for k, or "".
func (k Key) CheckType(v any) string {
	ok := false
	switch k.Type {
	case Object, Map:
		_, ok = v.(map[string]any)
		if _, name := v.(string); name && k.Named != "" {
			ok = true
		}
	case Bool:
		_, ok = v.(bool)
	case String:
		_, ok = v.(string)
	case Number:
		_, ok = v.(json.Number)
	case Int:
		ok = IsWholeNumber(v)
	case StringList:
		if a, isArr := v.([]any); isArr {
			ok = true
			for _, e := range a {
				if _, s := e.(string); !s {
					ok = false
				}
			}
		}
	case StringMap:
		if m, isObj := v.(map[string]any); isObj {
			ok = true
			for _, e := range m {
				if _, s := e.(string); !s {
					ok = false
				}
			}
		}
	}
	if ok {
		return ""
	}
	want := k.Type.want()
	if k.Named != "" {
		want += " or the name of one of " + k.Named
	}
	return fmt.Sprintf("want %s, got %s", want, describe(v))
}

func (t Type) want() string {
	return [...]string{Object: "an object", Map: "an object", Bool: "true or false", String: "a string",
		Int: "a whole number", Number: "a number", StringList: "an array of strings", StringMap: "an object of strings"}[t]
}

// IsWholeNumber reports whether v is a JSON number without a fraction
// (20000, 20000.0, 2e4), within the range a float64 holds exactly.
func IsWholeNumber(v any) bool {
	switch n := v.(type) {
	case int64:
		return true
	case json.Number:
		if _, err := n.Int64(); err == nil {
			return true
		}
		f, err := n.Float64()
		return err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53
	}
	return false
}

// CheckValue returns what is wrong with v (already of k's type) for k's
// rule and enum, or "".
func (k Key) CheckValue(v any) string {
	if k.Enum != nil {
		s := v.(string)
		values := make([]string, len(k.Enum))
		for i, c := range k.Enum {
			if c.Value == s {
				return ""
			}
			values[i] = c.Value
		}
		return fmt.Sprintf("%q is not one of %s", s, strings.Join(values, ", "))
	}
	switch k.Rule {
	case NonNegative:
		if num(v) < 0 {
			return fmt.Sprintf("%v is negative; it must be 0 or more", v)
		}
	case Positive:
		if num(v) <= 0 {
			return fmt.Sprintf("%v must be greater than 0", v)
		}
	case Ratio:
		if f := num(v); f < 0 || f > 1 || math.IsNaN(f) {
			return fmt.Sprintf("%v is outside 0..1", v)
		}
	case NonEmpty:
		if strings.TrimSpace(v.(string)) == "" {
			return "must not be empty"
		}
	case HTTPURL:
		u, err := url.Parse(v.(string))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Sprintf("%q is not an http:// or https:// URL with a host", v)
		}
	case EnvName:
		if s := v.(string); s != "" && !envNameRE.MatchString(s) {
			return fmt.Sprintf("%q is not an environment variable name (letters, digits, _); put the key in a variable such as OPENAI_API_KEY and name the variable here — keys are never read from files", text.Clip(s, 12+len("…")))
		}
	}
	return ""
}

// PlannedChoice returns what will use the value v of an enumerated key when
// this version does not act on it yet, or "".
func (k Key) PlannedChoice(v any) string {
	s, _ := v.(string)
	for _, c := range k.Enum {
		if c.Value == s {
			return c.Planned
		}
	}
	return ""
}

var envNameRE = lazyregexp.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

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

func describe(v any) string {
	b, _ := json.Marshal(v)
	return JSONType(v) + " " + text.Clip(string(b), 40+len("…"))
}

// JSONType names v's JSON type for a message: "an object", "a string", ….
func JSONType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64, int64:
		return "a number"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// jsonValue turns a Go default into the form the loader checks.
func jsonValue(v any) any {
	switch v := v.(type) {
	case int:
		return json.Number(strconv.Itoa(v))
	case float64:
		return json.Number(strconv.FormatFloat(v, 'f', -1, 64))
	}
	return v
}
