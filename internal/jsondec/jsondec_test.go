package jsondec

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

type inner struct {
	Kind string `json:"kind"`
}

type sample struct {
	Type    string          `json:"type"`
	N       *int            `json:"n"`
	Raw     json.RawMessage `json:"raw"`
	List    []inner         `json:"list"`
	Any     any             `json:"any"`
	Skipped string          `json:"-"`
	At      time.Time       `json:"at"`
	inner
}

// TestSameAsEncodingJSON decodes documents with both decoders: every
// document encoding/json accepts decodes to the same value, and every one it
// rejects is rejected.
func TestSameAsEncodingJSON(t *testing.T) {
	for _, tc := range []struct{ name, doc string }{
		{"plain", `{"type":"user","n":3,"raw":{"a":[1,2]},"list":[{"kind":"x"}],"any":{"b":1.5}}`},
		{"raw keeps its bytes", `{"raw": [ 1 , "two" ]}`},
		{"duplicate names: the last wins", `{"type":"a","type":"b"}`},
		{"names match case-insensitively", `{"TYPE":"user","Kind":"k"}`},
		{"but not across '_' and '-'", `{"ty_pe":"user","ki-nd":"k"}`},
		{"a timestamp", `{"at":"2026-07-01T12:00:01.5Z"}`},
		{"a timestamp with a comma before the fraction", `{"at":"2026-07-01T12:00:01,5Z"}`},
		{"a timestamp at +24:00", `{"at":"2026-07-01T12:00:01+24:00"}`},
		{"not a timestamp", `{"at":"yesterday"}`},
		{"invalid UTF-8 becomes U+FFFD", "{\"type\":\"a\xffb\"}"},
		{"unknown names are ignored", `{"other":{"deep":[1,2,3]},"type":"t"}`},
		{"null leaves a pointer nil", `{"n":null,"raw":null}`},
		{"embedded struct fields are promoted", `{"kind":"promoted"}`},
		{"truncated", `{"type":"us`},
		{"trailing garbage", `{"type":"user"} x`},
		{"not an object", `[1,2]`},
		{"wrong type", `{"n":"three"}`},
		{"empty", ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want, got sample
			errWant := json.Unmarshal([]byte(tc.doc), &want)
			errGot := Unmarshal([]byte(tc.doc), &got)
			if (errWant == nil) != (errGot == nil) {
				t.Fatalf("encoding/json error %v, jsondec error %v", errWant, errGot)
			}
			if errWant == nil && !reflect.DeepEqual(want, got) {
				t.Fatalf("decoded differently:\nencoding/json %#v\njsondec       %#v", want, got)
			}
		})
	}
}

// FuzzSameAsEncodingJSON: on any input, jsondec accepts what encoding/json
// accepts, rejects what it rejects, and decodes to the same value.
func FuzzSameAsEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"type":"user","n":3,"raw":{"a":[1,2]},"list":[{"kind":"x"}],"any":{"b":1.5}}`,
		`{"type":"a","type":"b"}`, `{"TYPE":"user"}`, "{\"type\":\"a\xffb\"}", `{"n":null}`, `{"kind":"p"}`,
		`{"raw": [ 1 , "two" ]}`, `{"any":[true,null,"s",1e3]}`, `{"type":"\u00e9\ud83d\ude00"}`,
		`{"at":"2026-07-01T12:00:01,5Z"}`, `{"at":"2026-07-01T12:00:01.123456789+24:00"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		var want, got sample
		errWant := json.Unmarshal(doc, &want)
		errGot := Unmarshal(doc, &got)
		if (errWant == nil) != (errGot == nil) {
			t.Fatalf("%q: encoding/json error %v, jsondec error %v", doc, errWant, errGot)
		}
		if errWant == nil && !reflect.DeepEqual(want, got) {
			t.Fatalf("%q decoded differently:\nencoding/json %#v\njsondec       %#v", doc, want, got)
		}
	})
}
