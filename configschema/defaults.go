package configschema

import (
	"encoding/json"
	"fmt"
)

// DecodeDefaults fills dst (a pointer to a struct with JSON tags) with the
// built-in defaults below path ("" for all), as encoding/json decodes the
// JSON object a layer would hold. Keys without a default, Like objects,
// Maps and Planned keys are left out, so fields without a default keep
// their value.
func DecodeDefaults(path string, dst any) error {
	n, ok := Lookup(path)
	if !ok || n.Type != Object {
		return fmt.Errorf("configschema: %q is not an object of the description", path)
	}
	if err := json.Unmarshal(marshal(orderedDefaults(n, false)), dst); err != nil {
		return fmt.Errorf("configschema: defaults of %q: %w", path, err)
	}
	return nil
}

// MustDecodeDefaults is DecodeDefaults for a type whose fields the tests
// check against the description; it panics on error.
func MustDecodeDefaults(path string, dst any) {
	if err := DecodeDefaults(path, dst); err != nil {
		panic(err)
	}
}
