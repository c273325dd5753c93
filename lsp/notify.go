package lsp

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/conc/panics"
	"go.lsp.dev/jsonrpc2"
	lsproto "go.lsp.dev/protocol"

	"github.com/soba-agent/soba-lsp/lsp/protocol"
)

// outbox is the server's queue of messages to the editor. Producers (the
// backend's Notifier calls, handlers) append and return at once; one writer
// goroutine, owned by Serve, sends in order. The queue is unbounded so that
// no producer ever blocks on a slow editor, and no text delta is dropped.
type outbox struct {
	conn jsonrpc2.Conn
	log  *slog.Logger
	wake chan struct{} // capacity 1: "the queue may be non-empty"
	done chan struct{} // closed when the writer returns

	// mu guards queue, closed and idle.
	mu     sync.Mutex
	queue  []outgoing
	closed bool
	idle   []chan struct{} // flush waiters, closed when the queue drains
}

// outgoing is one queued item: a notification, or a step run on the writer
// goroutine (progress create/begin/report/end, an order marker).
type outgoing struct {
	method string
	params jsonrpc2.RawMessage
	run    func(ctx context.Context)
}

func newOutbox(conn jsonrpc2.Conn, log *slog.Logger) *outbox {
	return &outbox{conn: conn, log: log, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// push queues item; it reports false when the outbox is closed.
func (o *outbox) push(item outgoing) bool {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return false
	}
	o.queue = append(o.queue, item)
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return true
}

// notify queues a notification whose params are already encoded.
func (o *outbox) notify(method string, params jsonrpc2.RawMessage) {
	o.push(outgoing{method: method, params: params})
}

// notifyJSON encodes v with encoding/json and queues it.
func (o *outbox) notifyJSON(method string, v any) {
	raw, err := encodeJSON(v)
	if err != nil {
		o.log.Error("encoding notification", "method", method, "err", err)
		return
	}
	o.notify(method, raw)
}

// notifyLSP encodes a protocol value with the LSP codec and queues it.
func (o *outbox) notifyLSP(method string, v any) {
	raw, err := lsproto.Marshal(v)
	if err != nil {
		o.log.Error("encoding notification", "method", method, "err", err)
		return
	}
	o.notify(method, raw)
}

func (o *outbox) showMessage(t lsproto.MessageType, msg string) {
	o.notifyLSP(MethodShowMessage, &lsproto.ShowMessageParams{Type: t, Message: msg})
}

func (o *outbox) logMessage(t lsproto.MessageType, msg string) {
	o.notifyLSP(MethodLogMessage, &lsproto.LogMessageParams{Type: t, Message: msg})
}

// reached returns a channel closed when everything queued before it has
// been written: a request that must follow earlier notifications (an
// approval after its tool_call event) waits on it.
func (o *outbox) reached() <-chan struct{} {
	ch := make(chan struct{})
	if !o.push(outgoing{run: func(context.Context) { close(ch) }}) {
		close(ch)
	}
	return ch
}

// run is the writer goroutine. It returns when ctx ends or the outbox is
// closed and drained.
func (o *outbox) run(ctx context.Context) {
	defer close(o.done)
	for {
		o.mu.Lock()
		batch := o.queue
		o.queue = nil
		closed := o.closed
		if len(batch) == 0 {
			for _, ch := range o.idle {
				close(ch)
			}
			o.idle = nil
		}
		o.mu.Unlock()
		if len(batch) == 0 {
			if closed {
				return
			}
			select {
			case <-o.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		for _, item := range batch {
			o.send(ctx, item)
		}
	}
}

func (o *outbox) send(ctx context.Context, item outgoing) {
	r := panics.Try(func() {
		if item.run != nil {
			item.run(ctx)
			return
		}
		if err := o.conn.Notify(ctx, item.method, item.params); err != nil {
			o.log.Debug("notification not sent", "method", item.method, "err", err)
		}
	})
	if r != nil {
		o.log.Error("sending to the editor panicked", "method", item.method, "panic", r.String())
	}
}

// flush waits until the queue is empty, at most timeout.
func (o *outbox) flush(timeout time.Duration) {
	ch := make(chan struct{})
	o.mu.Lock()
	o.idle = append(o.idle, ch)
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
	select {
	case <-ch:
	case <-o.done:
	case <-time.After(timeout):
		o.log.Warn("notifications not flushed in time")
	}
}

// close stops accepting items; the writer drains what is queued and returns.
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// budgetCoalescer sends soba/budget at most once per interval, and always
// sends the last state: a budget offered too soon after the previous send
// is held and sent by a trailing timer (only the newest one held).
type budgetCoalescer struct {
	interval time.Duration
	send     func(jsonrpc2.RawMessage)

	// mu guards every field below; send is called with mu held so that the
	// immediate and trailing sends stay in order.
	mu       sync.Mutex
	latest   jsonrpc2.RawMessage // held budget, nil when none
	lastSent time.Time
	timer    *time.Timer
	stopped  bool
}

func newBudgetCoalescer(interval time.Duration, send func(jsonrpc2.RawMessage)) *budgetCoalescer {
	return &budgetCoalescer{interval: interval, send: send}
}

func (c *budgetCoalescer) offer(raw jsonrpc2.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	c.latest = raw
	if c.timer != nil {
		return // the trailing send will take the newest
	}
	wait := c.interval - time.Since(c.lastSent)
	if wait <= 0 {
		c.sendLocked()
		return
	}
	c.timer = time.AfterFunc(wait, c.trailing)
}

func (c *budgetCoalescer) trailing() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timer = nil
	if !c.stopped {
		c.sendLocked()
	}
}

func (c *budgetCoalescer) sendLocked() {
	if c.latest == nil {
		return
	}
	c.lastSent = time.Now()
	c.send(c.latest)
	c.latest = nil
}

// stop sends a held budget at once and ignores later offers.
func (c *budgetCoalescer) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if !c.stopped {
		c.sendLocked()
	}
	c.stopped = true
}

// editorNotifier is the Notifier the backend gets: every method only
// queues (never blocks).
type editorNotifier struct{ s *Server }

var _ Notifier = (*editorNotifier)(nil)

// Event sends soba/event; a failed turn is also shown as an error
// (window/showMessage) so a generic LSP client, which ignores soba/event,
// still tells the user.
func (n *editorNotifier) Event(e protocol.Event) {
	n.s.out.notifyJSON(MethodEvent, e)
	if e.Type == protocol.EventTurnEnd && e.Outcome == protocol.TurnFailed {
		n.s.out.showMessage(lsproto.MessageTypeError, TurnFailedMessage(e.Error))
	}
}

// TurnFailedMessage is the window/showMessage text of a failed turn.
func TurnFailedMessage(reason string) string {
	if strings.TrimSpace(reason) == "" {
		return "SOBA: the turn failed"
	}
	if strings.HasPrefix(reason, "SOBA ") {
		// A sentence written for the user already names SOBA and says
		// what happened (agent/messages.go).
		return reason
	}
	return "SOBA: the turn failed: " + reason
}

func (n *editorNotifier) Budget(b protocol.Budget) {
	raw, err := encodeJSON(normalBudget(b))
	if err != nil {
		n.s.log.Error("encoding budget", "err", err)
		return
	}
	n.s.budgets.offer(raw)
}

// Compaction sends soba/compaction and drives the compaction's work-done
// progress: start begins it with the event's title, progress reports its
// message (and a percentage only when the backend has a real one), end ends
// it with the result line.
func (n *editorNotifier) Compaction(e protocol.CompactionEvent) {
	n.s.out.notifyJSON(MethodCompaction, e)
	switch e.Phase {
	case protocol.PhaseStart:
		n.s.progress.begin(e.OperationID, e.Trigger, e.Title)
	case protocol.PhaseProgress:
		if e.Message != "" || e.Percentage != nil {
			n.s.progress.report(e.OperationID, e.Message, e.Percentage)
		}
	case protocol.PhaseEnd:
		line := ""
		if e.CompactionResult != nil {
			line = e.Line
		}
		n.s.progress.end(e.OperationID, line)
	}
}

func (n *editorNotifier) Log(message string) { n.s.out.logMessage(lsproto.MessageTypeInfo, message) }

func (n *editorNotifier) Warn(message string) {
	n.s.out.showMessage(lsproto.MessageTypeWarning, message)
}
