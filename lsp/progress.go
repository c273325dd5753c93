package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"
	lsproto "go.lsp.dev/protocol"

	"github.com/soba-agent/soba-lsp/lsp/protocol"
)

// ProgressTitle is the title of a compaction's progress when the backend
// gave none; the agent says "Compacting context before response" only when
// a response waits, "Compacting context" otherwise.
const ProgressTitle = "Compacting context"

// progressTracker reports work-done progress, gopls style: Start(ctx, title,
// token) returns a WorkDone with Report and End. With a client that announced
// window.workDoneProgress it speaks $/progress (creating a token with
// window/workDoneProgress/create unless the request brought one); otherwise
// it falls back to window/logMessage at the start and window/showMessage
// with the end message.
//
// Start, Report and End do I/O and run on the outbox's writer goroutine;
// begin, report and end are the non-blocking entry points the Notifier uses,
// which queue them in order with the other notifications.
type progressTracker struct {
	conn          jsonrpc2.Conn
	out           *outbox
	createTimeout time.Duration
	log           *slog.Logger

	// mu guards every field below.
	mu        sync.Mutex
	supported bool                     // client announced window.workDoneProgress
	offered   lsproto.ProgressToken    // a soba.compact request's workDoneToken
	byOp      map[string]*WorkDone     // running barriers by operation id
	byToken   map[string]*WorkDone     // running $/progress by token key
	cancelOp  func(operationID string) // cancels a compaction in the backend
	seq       int
}

func newProgressTracker(conn jsonrpc2.Conn, out *outbox, createTimeout time.Duration, log *slog.Logger) *progressTracker {
	return &progressTracker{
		conn: conn, out: out, createTimeout: createTimeout, log: log,
		byOp: map[string]*WorkDone{}, byToken: map[string]*WorkDone{},
	}
}

func (t *progressTracker) setClientSupport(ok bool) {
	t.mu.Lock()
	t.supported = ok
	t.mu.Unlock()
}

func (t *progressTracker) setCanceller(f func(operationID string)) {
	t.mu.Lock()
	t.cancelOp = f
	t.mu.Unlock()
}

// WorkDone is one running progress. Its methods run on the writer goroutine.
type WorkDone struct {
	t      *progressTracker
	token  lsproto.ProgressToken // nil: fallback to messages
	cancel func()
}

// Start begins a progress. token is the client's workDoneToken or nil; with
// a nil token and a capable client a token is created first. cancel runs
// when the user cancels the progress.
func (t *progressTracker) Start(ctx context.Context, title string, token lsproto.ProgressToken, cancel func()) *WorkDone {
	t.mu.Lock()
	supported := t.supported
	if token == nil && supported {
		t.seq++
		token = lsproto.String("soba-compaction-" + strconv.Itoa(t.seq))
		t.mu.Unlock()
		cctx, done := context.WithTimeout(ctx, t.createTimeout)
		_, err := t.conn.Call(cctx, MethodWorkDoneCreate, &lsproto.WorkDoneProgressCreateParams{Token: token}, nil)
		done()
		if err != nil {
			t.log.Warn("progress token not created; falling back to messages", "err", err)
			token = nil
		}
		t.mu.Lock()
	}
	wd := &WorkDone{t: t, token: token, cancel: cancel}
	if token != nil {
		t.byToken[tokenKey(token)] = wd
	}
	t.mu.Unlock()

	if token == nil {
		t.sendLSP(ctx, MethodLogMessage, &lsproto.LogMessageParams{Type: lsproto.MessageTypeInfo, Message: title})
		return wd
	}
	// No percentage: how long a summary model takes is not known, so the
	// progress is indeterminate, and its reports say what it waits for.
	yes := true
	wd.progress(ctx, &lsproto.WorkDoneProgressBegin{Kind: "begin", Title: title, Cancellable: &yes})
	return wd
}

// Report reports what the work is doing and, when it is real, a percentage
// (clamped to 1..100: some clients drop 0 and spin forever).
func (wd *WorkDone) Report(ctx context.Context, message string, percentage *int) {
	if wd.token == nil {
		return
	}
	r := &lsproto.WorkDoneProgressReport{Kind: "report"}
	if message != "" {
		r.Message = &message
	}
	if percentage != nil {
		pct := uint32(min(max(*percentage, 1), 100))
		r.Percentage = &pct
	}
	wd.progress(ctx, r)
}

// End ends the progress with message (the result line).
func (wd *WorkDone) End(ctx context.Context, message string) {
	if wd.token == nil {
		if message != "" {
			wd.t.sendLSP(ctx, MethodShowMessage, &lsproto.ShowMessageParams{Type: lsproto.MessageTypeInfo, Message: message})
		}
		return
	}
	wd.t.mu.Lock()
	delete(wd.t.byToken, tokenKey(wd.token))
	wd.t.mu.Unlock()
	end := &lsproto.WorkDoneProgressEnd{Kind: "end"}
	if message != "" {
		end.Message = &message
	}
	wd.progress(ctx, end)
}

func (wd *WorkDone) progress(ctx context.Context, value any) {
	raw, err := lsproto.Marshal(value)
	if err != nil {
		wd.t.log.Error("encoding progress", "err", err)
		return
	}
	wd.t.sendLSP(ctx, MethodProgress, &lsproto.ProgressParams{Token: wd.token, Value: raw})
}

func (t *progressTracker) sendLSP(ctx context.Context, method string, params any) {
	if err := t.conn.Notify(ctx, method, params); err != nil {
		t.log.Debug("progress not sent", "method", method, "err", err)
	}
}

// begin starts the progress of a compaction (non-blocking).
func (t *progressTracker) begin(operationID string, trigger protocol.Trigger, title string) {
	if title == "" {
		title = ProgressTitle
	}
	t.mu.Lock()
	var token lsproto.ProgressToken
	if trigger == protocol.TriggerUser && t.offered != nil {
		token, t.offered = t.offered, nil
	}
	cancelOp := t.cancelOp
	t.byOp[operationID] = nil // running; the WorkDone arrives with Start
	t.mu.Unlock()

	cancel := func() {
		if cancelOp != nil {
			cancelOp(operationID)
		}
	}
	t.out.push(outgoing{method: MethodProgress, run: func(ctx context.Context) {
		wd := t.Start(ctx, title, token, cancel)
		t.mu.Lock()
		if _, running := t.byOp[operationID]; running {
			t.byOp[operationID] = wd
		}
		t.mu.Unlock()
	}})
}

// report reports a compaction's progress (non-blocking).
func (t *progressTracker) report(operationID, message string, percentage *int) {
	t.out.push(outgoing{method: MethodProgress, run: func(ctx context.Context) {
		t.mu.Lock()
		wd := t.byOp[operationID]
		t.mu.Unlock()
		if wd != nil {
			wd.Report(ctx, message, percentage)
		}
	}})
}

// end ends a barrier's progress with the result line (non-blocking).
func (t *progressTracker) end(operationID, line string) {
	t.out.push(outgoing{method: MethodProgress, run: func(ctx context.Context) {
		t.mu.Lock()
		wd := t.byOp[operationID]
		delete(t.byOp, operationID)
		t.mu.Unlock()
		if wd != nil {
			wd.End(ctx, line)
		}
	}})
}

// offerToken makes a soba.compact request's workDoneToken the token of the
// next user-triggered barrier. release withdraws it if no barrier took it.
func (t *progressTracker) offerToken(raw json.RawMessage) (release func()) {
	token, err := parseToken(raw)
	if err != nil {
		t.log.Warn("ignoring workDoneToken", "err", err)
		return func() {}
	}
	t.mu.Lock()
	t.offered = token
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		if t.offered != nil && tokenKey(t.offered) == tokenKey(token) {
			t.offered = nil
		}
		t.mu.Unlock()
	}
}

// cancelFromClient handles window/workDoneProgress/cancel: the barrier on
// that token is cancelled in the backend.
func (t *progressTracker) cancelFromClient(raw jsonrpc2.RawMessage) error {
	var p struct {
		Token json.RawMessage `json:"token"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return fmt.Errorf("%s: bad params: %w", MethodWorkDoneCancel, err)
	}
	token, err := parseToken(p.Token)
	if err != nil {
		return fmt.Errorf("%s: %w", MethodWorkDoneCancel, err)
	}
	t.mu.Lock()
	wd := t.byToken[tokenKey(token)]
	t.mu.Unlock()
	if wd == nil {
		return fmt.Errorf("%s: no running progress with token %s", MethodWorkDoneCancel, p.Token)
	}
	if wd.cancel != nil {
		wd.cancel()
	}
	return nil
}

// parseToken reads a progress token: an integer or a string.
func parseToken(raw json.RawMessage) (lsproto.ProgressToken, error) {
	var n int32
	if err := json.Unmarshal(raw, &n); err == nil {
		return lsproto.Integer(n), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return lsproto.String(s), nil
	}
	return nil, fmt.Errorf("progress token must be an integer or a string, got %s", raw)
}

func tokenKey(t lsproto.ProgressToken) string {
	switch v := t.(type) {
	case lsproto.Integer:
		return "n:" + strconv.Itoa(int(v))
	case lsproto.String:
		return "s:" + string(v)
	}
	return fmt.Sprintf("?:%v", t)
}
