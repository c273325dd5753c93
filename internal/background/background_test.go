package background

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sourcegraph/conc/panics"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestPanicInGoroutineIsReported: a goroutine started with Go that panics
// does not end the process (this test would die); its deferred calls run,
// the panic reaches onPanic with its value and stack, and without one it is
// logged; a panicking onPanic is logged too.
func TestPanicInGoroutineIsReported(t *testing.T) {
	var log syncBuffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&log, nil)))
	defer slog.SetDefault(old)
	for _, tc := range []struct {
		name    string
		onPanic func(chan<- string) func(*panics.Recovered)
		logged  bool
	}{
		{"reported", func(got chan<- string) func(*panics.Recovered) {
			return func(r *panics.Recovered) { got <- r.String() }
		}, false},
		{"logged without onPanic", func(chan<- string) func(*panics.Recovered) { return nil }, true},
		{"onPanic panics too", func(chan<- string) func(*panics.Recovered) {
			return func(*panics.Recovered) { panic("the reporter broke") }
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan string, 1)
			deferred := make(chan struct{})
			Go(func() {
				defer close(deferred)
				panic("boom in " + tc.name)
			}, tc.onPanic(got))
			select {
			case <-deferred:
			case <-time.After(5 * time.Second):
				t.Fatal("the goroutine's deferred calls did not run")
			}
			if !tc.logged {
				select {
				case s := <-got:
					if !strings.Contains(s, "boom in "+tc.name) || !strings.Contains(s, "goroutine") {
						t.Fatalf("reported %q, want the value and the stack", s)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("the panic was not reported")
				}
				return
			}
			deadline := time.Now().Add(5 * time.Second)
			for !strings.Contains(log.String(), "a background goroutine panicked") && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if !strings.Contains(log.String(), "a background goroutine panicked") {
				t.Fatalf("not logged: %q", log.String())
			}
		})
	}
}
