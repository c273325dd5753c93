// Package background starts the goroutines that no one waits for — a
// watcher that lives as long as a connection, a read abandoned at its
// deadline, a batch decoded ahead — through conc's panic catcher, so that a
// panic in one is recovered and reported instead of ending the server
// (DESIGN.md: no naked go). Work that has an owner to wait for it uses a
// conc.WaitGroup or pool instead.
package background

import (
	"fmt"
	"log/slog"

	"github.com/sourcegraph/conc/panics"
)

// Go runs f on a goroutine of its own. A panic in f is recovered
// (panics.Try) and handed to onPanic with its value and stack, then f's
// deferred calls have run and the goroutine ends; the process goes on. A
// nil onPanic logs it at error level on slog's default logger (the server
// makes that its own log).
func Go(f func(), onPanic func(*panics.Recovered)) {
	go func() {
		r := panics.Try(f)
		if r == nil {
			return
		}
		if onPanic == nil {
			onPanic = logPanic
		}
		if again := panics.Try(func() { onPanic(r) }); again != nil {
			logPanic(again)
		}
	}()
}

func logPanic(r *panics.Recovered) {
	slog.Default().Error("a background goroutine panicked; it was stopped and the server goes on",
		"panic", fmt.Sprint(r.Value), "stack", string(r.Stack))
}

// Error is the error of a recovered panic, for a goroutine whose result
// travels on a channel: the receiver gets it instead of waiting forever.
func Error(r *panics.Recovered) error {
	return fmt.Errorf("internal error: %v", r.Value)
}
