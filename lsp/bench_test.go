package lsp

import (
	"slices"
	"testing"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/soba-agent/soba-lsp/lsp/protocol"
)

// BenchmarkBudgetRoundTrip measures a soba.budget request from the fake
// editor through Content-Length framing over a net.Pipe to the server and
// back, idle and while the backend streams 500 soba/event text deltas a
// second. It reports p50 and p99 latency (goal: p99 under 2 ms).
func BenchmarkBudgetRoundTrip(b *testing.B) {
	for _, c := range []struct {
		name      string
		perSecond int
	}{{"idle", 0}, {"events500", 500}} {
		b.Run(c.name, func(b *testing.B) {
			e := runServer(b)
			e.initialize(false)
			stop := make(chan struct{})
			var wg conc.WaitGroup
			if c.perSecond > 0 {
				n := e.backend.notifier()
				wg.Go(func() {
					tick := time.NewTicker(time.Second / time.Duration(c.perSecond))
					defer tick.Stop()
					for {
						select {
						case <-stop:
							return
						case <-tick.C:
							n.Event(protocol.Event{TurnID: "t1", Type: "text", Delta: "some streamed tokens "})
						}
					}
				})
			}
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				if err := e.Command(protocol.CommandBudget, nil, nil); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}
