package session

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestSegmentedScanAgrees_RT3_RT5: the index and the report of a file
// scanned in many segments on all cores are those of one sequential scan,
// whatever falls on a segment's edge: a long line over several segments, a
// CRLF line, blank lines, bad lines, a duplicate id, a missing parent, an
// unknown type, a settings entry's facts and the torn tail.
func TestSegmentedScanAgrees_RT3_RT5(t *testing.T) {
	const ts = `"timestamp":"2026-07-01T12:00:00Z"`
	var b strings.Builder
	b.WriteString(`{"id":"h","parentId":null,"type":"session",` + ts + `,"session":{"version":1,"sessionId":"seg"}}` + "\n")
	prev := "h"
	for i := range 400 {
		id := fmt.Sprintf("e%03d", i)
		switch i % 40 {
		case 3:
			b.WriteString("not json at all\n")
		case 7:
			b.WriteString("\n   \n")
		case 11: // longer than the scan buffer
			fmt.Fprintf(&b, `{"id":"%s","parentId":"%s","type":"tool_result",%s,"tokens":9,"toolResult":{"toolCallId":"c","toolName":"bash","ok":true,"content":"%s"}}`+"\n", id, prev, ts, strings.Repeat("x", scanBufSize+300))
			prev = id
		case 13:
			fmt.Fprintf(&b, `{"id":"%s","parentId":"%s","type":"user",%s,"tokens":3,"user":{"text":"crlf"}}`+"\r\n", id, prev, ts)
			prev = id
		case 17: // a duplicate of the entry before
			fmt.Fprintf(&b, `{"id":"%s","parentId":"%s","type":"user",%s,"tokens":3,"user":{"text":"dup"}}`+"\n", prev, prev, ts)
		case 19:
			fmt.Fprintf(&b, `{"id":"%s","parentId":"nowhere","type":"user",%s,"tokens":3,"user":{"text":"orphan"}}`+"\n", id, ts)
		case 23:
			fmt.Fprintf(&b, `{"id":"%s","parentId":"%s","type":"weird",%s}`+"\n", id, prev, ts)
			prev = id
		case 29:
			fmt.Fprintf(&b, `{"id":"%s","parentId":"%s","type":"settings",%s,"settings":{"autoCompact":false,"consumedIntents":["milestone"]}}`+"\n", id, prev, ts)
			prev = id
		case 31: // a foreign writer's layout: decoded by the slow path
			fmt.Fprintf(&b, `{"type":"user","id":"%s","parentId":"%s",%s,"user":{"text":"late id"}}`+"\n", id, prev, ts)
			prev = id
		case 33: // a capsule keeping an entry that is not on its path
			fmt.Fprintf(&b, `{"id":"%s","parentId":"%s","type":"capsule",%s,"tokens":4,"capsule":{"checkpointId":"ck_%d","trigger":"user","firstKeptEntryId":"e%03d","tokensBefore":9,"tokensAfter":4,"summary":"s"}}`+"\n", id, prev, ts, i, i+5)
			prev = id
		case 37: // a payload that does not decode
			fmt.Fprintf(&b, `{"id":"%s","parentId":"%s","type":"user",%s,"tokens":3,"user":{"text":42}}`+"\n", id, prev, ts)
			prev = id
		default:
			fmt.Fprintf(&b, `{"id":"%s","parentId":"%s","type":"assistant",%s,"tokens":5,"assistant":{"text":"%s","usage":{"inputTokens":%d,"outputTokens":1}}}`+"\n", id, prev, ts, strings.Repeat("y", i*7), 100+i)
			prev = id
		}
	}
	b.WriteString(`{"id":"torn","parentId":"` + prev + `","type":"user"`)
	path := filepath.Join(t.TempDir(), "seg.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	open := func(segment int64) (*Store, *OpenReport) {
		t.Helper()
		defer func(old int64) { scanSegmentBytes = old }(scanSegmentBytes)
		scanSegmentBytes = segment
		s, rep, err := OpenReadOnly(path, Options{CacheEntries: -1, Estimate: func(*Entry) int { return 7 }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		rep.Duration = 0
		return s, rep
	}
	verify := func(segment int64) *Verification {
		t.Helper()
		defer func(old int64) { scanSegmentBytes = old }(scanSegmentBytes)
		scanSegmentBytes = segment
		v, err := VerifyFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	want, wantRep := open(1 << 40) // one segment: the sequential scan
	wantV := verify(1 << 40)
	for _, p := range []string{"cannot be decoded", "firstKeptEntryId", "no tool call"} {
		if !strings.Contains(strings.Join(wantV.Problems, "\n"), p) {
			t.Fatalf("verify does not find %q:\n%s", p, strings.Join(wantV.Problems, "\n"))
		}
	}
	if wantRep.BadLineCount == 0 || wantRep.Torn == nil || wantRep.MissingParentCount == 0 || len(wantRep.UnknownTypes) == 0 {
		t.Fatalf("the file lacks the damage under test: %v", wantRep)
	}
	for _, seg := range []int64{3000, 64 << 10, scanBufSize + 1} {
		t.Run(fmt.Sprint(seg), func(t *testing.T) {
			got, gotRep := open(seg)
			if !reflect.DeepEqual(gotRep, wantRep) {
				t.Fatalf("report in %d-byte segments:\n%v\nwant\n%v", seg, gotRep, wantRep)
			}
			if !reflect.DeepEqual(got.metas, want.metas) || !reflect.DeepEqual(got.parents, want.parents) {
				t.Fatalf("index in %d-byte segments differs from the sequential scan's", seg)
			}
			if v := verify(seg); !reflect.DeepEqual(v, wantV) {
				t.Fatalf("verify in %d-byte segments:\n%v\nwant\n%v", seg, v.Problems, wantV.Problems)
			}
			if got.size != want.size || got.lines != want.lines || got.heal != want.heal || got.Leaf() != want.Leaf() {
				t.Fatalf("size/lines/heal/leaf %d/%d/%v/%s, want %d/%d/%v/%s", got.size, got.lines, got.heal, got.Leaf(),
					want.size, want.lines, want.heal, want.Leaf())
			}
		})
	}
}
