// Package jsondec decodes JSON with encoding/json's decoding semantics at
// the speed of the v2 engine (github.com/go-json-experiment/json, the
// prototype of Go's encoding/json/v2).
//
// Transcript lines are decoded on every resume, import, dry run and verify:
// encoding/json validates each document in a separate pass and re-scans
// every raw sub-value, which made it most of an import's cost. The v2
// engine decodes in one pass, three to four times faster on real sessions.
// The options keep what foreign and hand-written files rely on from
// encoding/json: duplicate names are accepted (the last wins), invalid
// UTF-8 becomes U+FFFD, and object names match fields case-insensitively
// (as strings.EqualFold does: "tool_use_id" does not match "toolUseId").
// Types with an UnmarshalJSON method (json.RawMessage among them) are
// decoded through it, as before, and so is time.Time, whose own parser
// accepts more than v2's RFC 3339 (a comma before the fraction, a +24:00
// offset): a timestamp the header scanner accepts must load too.
//
// Two differences remain, neither met in a transcript we read: a type error
// ends decoding (encoding/json decodes the rest and reports the first), and
// a duplicate name whose later value is null zeroes the field (encoding/json
// keeps the earlier value).
package jsondec

import (
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

var v1Semantics = json.JoinOptions(
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
	json.MatchCaseInsensitiveNames(true),
	// v2's case-insensitive matching also ignores '_' and '-'; v1's does not.
	jsonv1.MatchCaseSensitiveDelimiter(true),
	json.WithUnmarshalers(json.UnmarshalFunc(func(b []byte, t *time.Time) error { return t.UnmarshalJSON(b) })),
)

// Unmarshal decodes the JSON document data into v, a non-nil pointer. The
// error names the problem and its byte offset.
func Unmarshal(data []byte, v any) error {
	return json.Unmarshal(data, v, v1Semantics)
}
