package lsp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// ArgError is a bad command argument: it answers -32602 (InvalidParams) and
// its message names the command and the field, e.g.
// `soba.checkpoint: kind must be "milestone" or "plan_pivot"`.
type ArgError struct {
	Command string
	Field   string // empty when the problem is the argument object itself
	Problem string
}

func (e *ArgError) Error() string {
	if e.Field == "" {
		return e.Command + ": " + e.Problem
	}
	return e.Command + ": " + e.Field + " " + e.Problem
}

// validator is implemented by argument structs with rules beyond JSON types
// (enums, non-empty strings). It returns the offending field and problem.
type validator interface {
	Validate() (field, problem string)
}

// decodeArgs decodes the first executeCommand argument (absent or null means
// {}) into dst, a pointer to an argument struct, strictly: the value must be
// an object, every member must be a field of dst, every field without
// `,omitempty` must be present, and each value must have the field's JSON
// type. The error names the first offending field.
func decodeArgs(command string, arguments []json.RawMessage, dst any) error {
	raw := json.RawMessage(`{}`)
	if len(arguments) > 0 && !isJSONNull(arguments[0]) {
		raw = arguments[0]
	}
	if len(arguments) > 1 {
		return &ArgError{Command: command, Problem: fmt.Sprintf("takes one argument object, got %d arguments", len(arguments))}
	}
	if jsonKind(raw) != "an object" {
		return &ArgError{Command: command, Problem: "arguments[0] must be an object, got " + jsonKind(raw)}
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return &ArgError{Command: command, Problem: "arguments[0] is not valid JSON: " + err.Error()}
	}

	rv := reflect.ValueOf(dst).Elem()
	rt := rv.Type()
	known := make([]string, 0, rt.NumField())
	for i := range rt.NumField() {
		f := rt.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		known = append(known, name)
		value, present := members[name]
		if present && isJSONNull(value) && opts == "omitempty" {
			present = false
		}
		if !present {
			if opts != "omitempty" {
				return &ArgError{Command: command, Field: name, Problem: "is required"}
			}
			continue
		}
		want := goKind(f.Type.Kind())
		if got := jsonKind(value); got != want {
			return &ArgError{Command: command, Field: name, Problem: "must be " + want + ", got " + got}
		}
		if err := json.Unmarshal(value, rv.Field(i).Addr().Interface()); err != nil {
			return &ArgError{Command: command, Field: name, Problem: "is invalid: " + err.Error()}
		}
	}
	unknown := make([]string, 0)
	for name := range members {
		if !slices.Contains(known, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		accepted := "no fields"
		if len(known) > 0 {
			accepted = "only " + strings.Join(known, ", ")
		}
		return &ArgError{Command: command, Field: unknown[0], Problem: "is not a known field (" + command + " takes " + accepted + ")"}
	}
	if v, ok := dst.(validator); ok {
		if field, problem := v.Validate(); problem != "" {
			return &ArgError{Command: command, Field: field, Problem: problem}
		}
	}
	return nil
}

func isJSONNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// jsonKind names the JSON type of raw the way error messages say it.
func jsonKind(raw json.RawMessage) string {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return "nothing"
	}
	switch c := b[0]; {
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number"
	}
	return "invalid JSON"
}

func goKind(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "an array"
	}
	return "an object"
}
