package compaction

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/soba-agent/soba-lsp/session"
)

// loadCounter is a Transcript that counts the payloads it is asked for.
type loadCounter struct {
	Entries
	loads int
}

func (c *loadCounter) Entry(i int) (*session.Entry, error) {
	c.loads++
	return c.Entries.Entry(i)
}

// TestBuildInputDecodesOnlyWhatIsSent_RM1_RG4: the model input is built in
// O(what is sent). An input whose recorded estimates exceed the bound is
// refused from the headers, before any entry is decoded; with a cache, the
// next request of a turn decodes only the entries appended since; the
// cached input is the same as one built afresh.
func TestBuildInputDecodesOnlyWhatIsSent_RM1_RG4(t *testing.T) {
	b := newBuilder()
	for i := range 2000 {
		b.user(fmt.Sprintf("question %d", i), 100)
		b.batch("read_file", 50, `{"path":"a.go"}`)
		b.reply("answer", 100)
	}
	whole := 0
	for _, e := range b.es {
		whole += e.Tokens
	}
	for _, tc := range []struct {
		name    string
		bound   int
		refused bool
	}{
		{"no bound", 0, false},
		{"bound above the input", whole + 1, false},
		{"bound below the input", whole / 10, true},
		{"bound of one message", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &loadCounter{Entries: b.es}
			in, err := BuildInput(p, InputOptions{MaxTokens: tc.bound})
			var big *InputTooLargeError
			switch {
			case tc.refused && !errors.As(err, &big):
				t.Fatalf("BuildInput over the bound = %v, want InputTooLargeError", err)
			case tc.refused && p.loads > 0:
				t.Fatalf("refused input decoded %d entries, want none", p.loads)
			case tc.refused && (big.Max != tc.bound || big.Tokens <= tc.bound || big.Tokens > tc.bound+100):
				t.Fatalf("refusal %+v: the walk back must stop right past the bound %d", big, tc.bound)
			case !tc.refused && (err != nil || len(in.Messages) != 4*2000):
				t.Fatalf("BuildInput = %d messages, %v", len(in.Messages), err)
			}
		})
	}

	cache := NewEntryCache(1<<20, 1<<30)
	p := &loadCounter{Entries: b.es}
	first, err := BuildInput(p, InputOptions{Cache: cache})
	if err != nil || p.loads != 4*2000 {
		t.Fatalf("first build: %d loads, %v", p.loads, err)
	}
	b.user("one more", 10)
	b.batch("bash", 10, `{"command":"go test"}`)
	p = &loadCounter{Entries: b.es}
	next, err := BuildInput(p, InputOptions{Cache: cache})
	if err != nil || p.loads != 3 {
		t.Fatalf("next request decoded %d entries, want the 3 appended (%v)", p.loads, err)
	}
	fresh, _ := BuildInput(b.es, InputOptions{})
	if !reflect.DeepEqual(next, fresh) || !reflect.DeepEqual(next.Messages[:len(first.Messages)], first.Messages) {
		t.Fatal("the cached input differs from one built afresh")
	}

	small := NewEntryCache(10, 1<<30)
	p = &loadCounter{Entries: b.es}
	BuildInput(p, InputOptions{Cache: small})
	if small.Len() != 10 {
		t.Fatalf("a 10-entry cache holds %d", small.Len())
	}
	tight := NewEntryCache(1<<20, 500)
	BuildInput(p, InputOptions{Cache: tight})
	if tight.Len() > 10 {
		t.Fatalf("a 500-token cache holds %d entries of at least 50 tokens", tight.Len())
	}
}
