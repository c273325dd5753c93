package provider

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestSSEReaderFraming(t *testing.T) {
	in := ": comment\r\nevent: a\r\ndata: one\r\ndata:two\r\n\r\n\n\nid: 7\nretry: 10\ndata: {\"x\":1}\n\ndata: last"
	r := newSSEReader(strings.NewReader(in))
	ev, data, err := r.Next()
	if err != nil || ev != "a" || string(data) != "one\ntwo" {
		t.Fatalf("first %q %q %v", ev, data, err)
	}
	ev, data, err = r.Next()
	if err != nil || ev != "" || string(data) != `{"x":1}` {
		t.Fatalf("second %q %q %v", ev, data, err)
	}
	// A line cut by EOF is not an event.
	if _, _, err = r.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("cut line: %v", err)
	}
}

func TestSSEReaderCompleteEventAtEOF(t *testing.T) {
	r := newSSEReader(strings.NewReader("data: [DONE]\n"))
	if _, data, err := r.Next(); err != nil || string(data) != "[DONE]" {
		t.Fatalf("%q %v", data, err)
	}
	if _, _, err := r.Next(); err != io.EOF {
		t.Fatalf("want io.EOF, got %v", err)
	}
}

func TestSSEReaderLongLine(t *testing.T) {
	long := strings.Repeat("x", 300<<10) // beyond the 64 KiB buffer
	r := newSSEReader(strings.NewReader("data: " + long + "\n\n"))
	if _, data, err := r.Next(); err != nil || string(data) != long {
		t.Fatalf("len %d err %v", len(data), err)
	}
}

func TestArgumentsAlwaysValidJSON(t *testing.T) {
	for in, want := range map[string]string{
		"":                `{}`,
		"  ":              `{}`,
		`{"a":1}`:         `{"a":1}`,
		`{"a":`:           `"{\"a\":"`,
		`not json at all`: `"not json at all"`,
	} {
		if got := string(argumentsJSON(in)); got != want {
			t.Errorf("%q: got %s, want %s", in, got, want)
		}
	}
}
