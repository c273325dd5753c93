package lsp

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soba-agent/soba-lsp/lsp/lsptest"
	"github.com/soba-agent/soba-lsp/lsp/protocol"
)

const wait = 5 * time.Second

// protocolCommands reads the command table of PROTOCOL.md when the shared
// folder sits beside the repository (as on developer machines and in CI).
func protocolCommands(t *testing.T) []string {
	b, err := os.ReadFile("../../shared/PROTOCOL.md")
	if err != nil {
		t.Logf("PROTOCOL.md not found beside the repository (%v); checking the Go list only", err)
		return nil
	}
	var out []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(soba\\.[a-zA-Z.]+)` \\|").FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
	}
	return out
}

func TestInitializeResult_Protocol(t *testing.T) {
	e := runServer(t)
	res := e.initialize(true)

	caps := res["capabilities"].(map[string]any)
	var got []string
	for _, c := range caps["executeCommandProvider"].(map[string]any)["commands"].([]any) {
		got = append(got, c.(string))
	}
	if !slices.Equal(got, Commands) {
		t.Errorf("advertised commands %v, want lsp.Commands %v", got, Commands)
	}
	// The advertised list is PROTOCOL.md's table exactly, in its order; the
	// additions of docs/protocol.md are answered but not advertised.
	if want := protocolCommands(t); want != nil && !slices.Equal(got, want) {
		t.Errorf("advertised commands %v, want PROTOCOL.md's table %v", got, want)
	}
	for _, c := range protocol.Additions {
		if slices.Contains(got, c) {
			t.Errorf("addition %s is advertised; PROTOCOL.md's table is the advertised list", c)
		}
	}
	if len(commandTable) != len(knownCommands) {
		t.Errorf("command table has %d entries, known commands %d", len(commandTable), len(knownCommands))
	}
	for _, c := range knownCommands {
		if commandTable[c] == nil {
			t.Errorf("command %s has no handler", c)
		}
	}
	sync := caps["textDocumentSync"].(map[string]any)
	if sync["openClose"] != true || sync["save"] != true || (sync["change"] != 1.0 && sync["change"] != 2.0) {
		t.Errorf("textDocumentSync = %v, want openClose, save and change full/incremental", sync)
	}
	info := res["serverInfo"].(map[string]any)
	if info["name"] != "soba-lsp" || info["version"] != "test" {
		t.Errorf("serverInfo = %v", info)
	}

	b := e.backend
	b.mu.Lock()
	opts := b.opts
	b.mu.Unlock()
	if opts.Root != "/tmp/soba-ws" || opts.ClientName != "fake-editor" || !strings.Contains(string(opts.InitializationOptions), `"test"`) {
		t.Errorf("backend options = root %q client %q init %s", opts.Root, opts.ClientName, opts.InitializationOptions)
	}
	if opts.Notifier == nil || opts.Approver == nil {
		t.Error("backend got no Notifier or Approver")
	}
}

func TestRequestBeforeInitialize_ServerNotInitialized(t *testing.T) {
	e := runServer(t)
	err := e.Command(protocol.CommandBudget, nil, nil)
	if err == nil || err.Code != -32002 {
		t.Fatalf("budget before initialize: %v, want code -32002", err)
	}
	e.initialize(false)
	if err := e.Command(protocol.CommandBudget, nil, nil); err != nil {
		t.Fatalf("budget after initialize: %v", err)
	}
	if err := e.Call(MethodInitialize, map[string]any{"capabilities": map[string]any{}}, nil); err == nil || err.Code != -32600 {
		t.Errorf("second initialize: %v, want -32600", err)
	}
}

func TestInitializeFactoryError(t *testing.T) {
	e := runServer(t)
	e.backend.factoryErr = errScripted
	err := e.Call(MethodInitialize, map[string]any{"capabilities": map[string]any{}}, nil)
	if err == nil || err.Code != -32803 || !strings.Contains(err.Message, "ck_9") {
		t.Fatalf("initialize with a failing factory: %v, want -32803 with the factory's message", err)
	}
}

// TestCommandArguments_RO3 checks each command's strict decoding: -32602 with a
// message naming the field (PROTOCOL.md "Commands").
func TestCommandArguments_RO3(t *testing.T) {
	e := runServer(t)
	e.initialize(false)
	cases := []struct {
		command string
		args    any
		want    string // substring of the error message; "" = must succeed
	}{
		{protocol.CommandPrompt, map[string]any{"text": "hi"}, ""},
		{protocol.CommandPrompt, nil, "soba.prompt: text is required"},
		{protocol.CommandPrompt, map[string]any{"text": 3}, "soba.prompt: text must be a string, got a number"},
		{protocol.CommandPrompt, map[string]any{"text": ""}, "soba.prompt: text must not be empty"},
		{protocol.CommandPrompt, map[string]any{"text": "hi", "txt": "x"}, "soba.prompt: txt is not a known field"},
		{protocol.CommandPrompt, "hi", "soba.prompt: arguments[0] must be an object, got a string"},
		{protocol.CommandRun, map[string]any{"text": "hi"}, ""},
		{protocol.CommandRun, map[string]any{"text": "/budget"}, ""},
		{protocol.CommandRun, map[string]any{"text": "/budget now"}, ""}, // a usage error is a result with lines, not a bad request
		{protocol.CommandRun, map[string]any{"text": ""}, "soba.run: text must not be empty"},
		{protocol.CommandRun, map[string]any{"text": "hi", "prompt": "hi"}, "soba.run: prompt is not a known field"},
		{protocol.CommandCancel, nil, ""},
		{protocol.CommandCancel, map[string]any{"what": "turn"}, "soba.cancel: what is not a known field"},
		{protocol.CommandBudget, nil, ""},
		{protocol.CommandBudget, map[string]any{}, ""},
		{protocol.CommandBudget, map[string]any{"x": 1}, "soba.budget: x is not a known field"},
		{protocol.CommandCompact, nil, ""},
		{protocol.CommandCompact, map[string]any{"instructions": "keep the API notes"}, ""},
		{protocol.CommandCompact, map[string]any{"instructions": true}, "soba.compact: instructions must be a string, got a boolean"},
		{protocol.CommandAutoCompact, map[string]any{"enabled": false}, ""},
		{protocol.CommandAutoCompact, nil, "soba.autoCompact: enabled is required"},
		{protocol.CommandAutoCompact, map[string]any{"enabled": "off"}, "soba.autoCompact: enabled must be a boolean, got a string"},
		{protocol.CommandCheckpoint, map[string]any{"kind": "milestone", "note": "tests pass"}, ""},
		{protocol.CommandCheckpoint, map[string]any{"kind": "plan_pivot", "note": ""}, ""},
		{protocol.CommandCheckpoint, map[string]any{"kind": "done", "note": "x"}, `soba.checkpoint: kind must be "milestone" or "plan_pivot"`},
		{protocol.CommandCheckpoint, map[string]any{"kind": "milestone"}, "soba.checkpoint: note is required"},
		{protocol.CommandCheckpoint, map[string]any{"note": "x"}, "soba.checkpoint: kind is required"},
		{protocol.CommandCapsuleCreate, map[string]any{"title": "handoff"}, ""},
		{protocol.CommandCapsuleCreate, map[string]any{"title": nil}, "soba.capsule.create: title must be a string, got null"},
		{protocol.CommandCapsuleCreate, nil, "soba.capsule.create: title is required"},
		{protocol.CommandCapsuleExport, map[string]any{"checkpointId": "ck_1", "path": "./h.capsule.md"}, ""},
		{protocol.CommandCapsuleExport, map[string]any{"checkpointId": "ck_1", "path": "./h.capsule.md", "overwrite": true}, ""},
		{protocol.CommandCapsuleExport, map[string]any{"checkpointId": "ck_1"}, "soba.capsule.export: path is required"},
		{protocol.CommandCapsuleExport, map[string]any{"checkpointId": "ck_1", "path": "p", "overwrite": "yes"}, "soba.capsule.export: overwrite must be a boolean"},
		{protocol.CommandCapsuleLoad, map[string]any{"path": "./h.capsule.md"}, ""},
		{protocol.CommandCapsuleLoad, map[string]any{"path": []string{"a"}}, "soba.capsule.load: path must be a string, got an array"},
		{protocol.CommandCapsuleList, nil, ""},
		{protocol.CommandCapsuleShow, nil, ""},
		{protocol.CommandCapsuleShow, map[string]any{"checkpointId": "ck_1"}, ""},
		{protocol.CommandCapsuleShow, map[string]any{"checkpointId": 1}, "soba.capsule.show: checkpointId must be a string"},
		{protocol.CommandSessionInfo, nil, ""},
		{protocol.CommandSessionList, nil, ""},
		{protocol.CommandSessionNew, nil, ""},
		{protocol.CommandSessionNew, map[string]any{"id": "x"}, "soba.session.new: id is not a known field"},
		{protocol.CommandSessionResume, map[string]any{"sessionId": "s1"}, ""},
		{protocol.CommandSessionResume, map[string]any{}, "soba.session.resume: sessionId is required"},
		{protocol.CommandSessionRewind, map[string]any{"entryId": "e1"}, ""},
		{protocol.CommandSessionRewind, map[string]any{"entryId": 7}, "soba.session.rewind: entryId must be a string, got a number"},
		{protocol.CommandSessionHistory, nil, ""},
		{protocol.CommandSessionHistory, map[string]any{"leaf": "e1"}, "soba.session.history: leaf is not a known field"},
		{protocol.CommandSessionTranscript, nil, ""},
		{protocol.CommandSessionTranscript, map[string]any{"before": "e1", "limit": 20}, ""},
		{protocol.CommandSessionTranscript, map[string]any{"limit": "20"}, "soba.session.transcript: limit must be a number, got a string"},
		{protocol.CommandSessionTranscript, map[string]any{"limit": 900}, "soba.session.transcript: limit must be between 1 and 500 (0 for the default), got 900"},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.command] = true
		var result json.RawMessage
		err := e.Command(c.command, c.args, &result)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %v: unexpected error %v", c.command, c.args, err)
		case c.want != "" && err == nil:
			t.Errorf("%s %v: succeeded with %s, want error %q", c.command, c.args, result, c.want)
		case c.want != "" && (err.Code != -32602 || !strings.Contains(err.Message, c.want)):
			t.Errorf("%s %v: error %v, want -32602 containing %q", c.command, c.args, err, c.want)
		}
	}
	for _, c := range knownCommands {
		if !covered[c] {
			t.Errorf("command %s has no argument case", c)
		}
	}
}

// TestCommandResults_RO3 checks result shapes: arrays are never null.
func TestCommandResults_RO3(t *testing.T) {
	e := runServer(t)
	e.initialize(false)
	var raw json.RawMessage
	if err := e.Command(protocol.CommandCapsuleList, nil, &raw); err != nil || string(raw) != "[]" {
		t.Errorf("capsule.list = %s, %v; want []", raw, err)
	}
	var load map[string]any
	if err := e.Command(protocol.CommandCapsuleLoad, map[string]any{"path": "x.capsule.md"}, &load); err != nil {
		t.Fatal(err)
	}
	if w, ok := load["warnings"].([]any); !ok || len(w) != 0 {
		t.Errorf("capsule.load warnings = %#v, want []", load["warnings"])
	}
	var budget map[string]any
	if err := e.Command(protocol.CommandBudget, nil, &budget); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"effectiveTokens", "hardLimit", "softLimit", "contextWindow", "maxOutputTokens",
		"safetyReserveTokens", "source", "autoCompact", "pending", "state", "lastCompaction"} {
		if _, ok := budget[k]; !ok {
			t.Errorf("budget lacks %q: %v", k, budget)
		}
	}
	if p, ok := budget["pending"].([]any); !ok || len(p) != 0 {
		t.Errorf("budget.pending = %#v, want []", budget["pending"])
	}
}

func TestUnknownCommand(t *testing.T) {
	e := runServer(t)
	e.initialize(false)
	err := e.Command("soba.frobnicate", nil, nil)
	if err == nil || err.Code != -32602 || !strings.Contains(err.Message, `"soba.frobnicate"`) {
		t.Fatalf("unknown command: %v, want -32602 naming it", err)
	}
	if err := e.Call("textDocument/hover", map[string]any{}, nil); err == nil || err.Code != -32601 {
		t.Errorf("unsupported method: %v, want -32601", err)
	}
}

func TestRequestFailed(t *testing.T) {
	e := runServer(t)
	e.initialize(false)
	e.script(func(b *testBackend) { b.failWith = errScripted })
	err := e.Command(protocol.CommandCapsuleShow, map[string]any{"checkpointId": "ck_9"}, nil)
	if err == nil || err.Code != -32803 || !strings.Contains(err.Message, "capsule ck_9 not found on the leaf path") {
		t.Fatalf("failing backend: %v, want -32803 with the backend's message", err)
	}
	e.script(func(b *testBackend) { b.failWith = nil })
	if err := e.Command(protocol.CommandBudget, nil, nil); err != nil {
		t.Errorf("server stopped serving after a failed command: %v", err)
	}
}

func TestMalformedJSON_KeepsServing(t *testing.T) {
	e := runServer(t)
	e.initialize(false)
	e.WriteRaw(lsptest.Frame([]byte(`{"jsonrpc":"2.0","id":99,"method":"workspace/executeCommand","params":{`)))
	s := e.Await(func(s lsptest.State) bool { return len(s.Stray) > 0 }, wait)
	if s.Stray[0].Error == nil || s.Stray[0].Error.Code != -32700 || string(s.Stray[0].ID) != "null" {
		t.Errorf("reply to malformed JSON = %+v, want -32700 with id null", s.Stray[0])
	}
	e.WriteRaw(lsptest.Frame([]byte(`[]`)))
	e.Await(func(s lsptest.State) bool { return len(s.Stray) > 1 }, wait)
	if err := e.Command(protocol.CommandBudget, nil, nil); err != nil {
		t.Fatalf("server stopped serving after malformed JSON: %v", err)
	}
}

func TestHandlerPanic_ErrorReply(t *testing.T) {
	e := runServer(t)
	e.initialize(false)
	e.script(func(b *testBackend) { b.panicOn = "Checkpoint" })
	err := e.Command(protocol.CommandCheckpoint, map[string]any{"kind": "milestone", "note": "n"}, nil)
	if err == nil || err.Code != -32603 || !strings.Contains(err.Message, "soba.checkpoint") {
		t.Fatalf("panicking handler: %v, want -32603 naming the command", err)
	}
	if err := e.Command(protocol.CommandBudget, nil, nil); err != nil {
		t.Fatalf("server stopped serving after a panic: %v", err)
	}
	// A panic in a notification handler must not end the connection either.
	e.Notify(MethodDidOpen, map[string]any{"textDocument": "not an object"})
	if err := e.Command(protocol.CommandBudget, nil, nil); err != nil {
		t.Fatalf("server stopped serving after a bad notification: %v", err)
	}
}

// TestBudgetDuringSlowCompact_RB3: the editor stays responsive during a
// barrier — soba.budget is answered while soba.compact runs.
func TestBudgetDuringSlowCompact_RB3(t *testing.T) {
	e := runServer(t)
	e.initialize(false)
	compactCh, _ := e.slowCompact()
	e.Await(func(s lsptest.State) bool { return len(lsptest.Of(s.Notes, MethodCompaction)) >= 1 }, wait)
	for range 3 {
		if err := e.Command(protocol.CommandBudget, nil, nil); err != nil {
			t.Fatalf("budget during compaction: %v", err)
		}
	}
	select {
	case m := <-compactCh:
		t.Fatalf("compact answered before release: %+v", m)
	default:
	}
	close(e.backend.release)
	var res protocol.CompactionResult
	if err := e.Wait("compact", compactCh, &res); err != nil || res.Outcome != protocol.OutcomeCompleted {
		t.Fatalf("compact = %+v, %v", res, err)
	}
}

// TestProgressLifecycle_RB3: a barrier shows create → begin (cancellable,
// indeterminate: no invented percentage) → report → end whose message is
// the result line.
func TestProgressLifecycle_RB3(t *testing.T) {
	e := runServer(t)
	e.initialize(true)
	var res protocol.CompactionResult
	if err := e.Command(protocol.CommandCompact, nil, &res); err != nil {
		t.Fatal(err)
	}
	s := e.Await(func(s lsptest.State) bool {
		ended := false
		for _, p := range lsptest.Of(s.Notes, MethodProgress) {
			ended = ended || strings.Contains(string(p.Params), `"end"`)
		}
		return ended && len(lsptest.Of(s.Notes, MethodLogMessage)) > 0
	}, wait)
	creates := lsptest.Of(s.Requests, MethodWorkDoneCreate)
	if len(creates) != 1 {
		t.Fatalf("workDoneProgress/create requests = %d, want 1", len(creates))
	}
	var create struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(creates[0].Params, &create); err != nil || create.Token == "" {
		t.Fatalf("create params %s: token must be a string: %v", creates[0].Params, err)
	}
	progress := lsptest.Of(s.Notes, MethodProgress)
	if len(progress) != 2 {
		t.Fatalf("progress notifications = %d, want begin and end", len(progress))
	}
	var begin struct {
		Token string `json:"token"`
		Value struct {
			Kind        string `json:"kind"`
			Title       string `json:"title"`
			Cancellable bool   `json:"cancellable"`
			Percentage  *int   `json:"percentage"`
		} `json:"value"`
	}
	_ = json.Unmarshal(progress[0].Params, &begin)
	if begin.Token != create.Token || begin.Value.Kind != "begin" || begin.Value.Title != ProgressTitle ||
		!begin.Value.Cancellable || begin.Value.Percentage != nil {
		t.Errorf("begin = %s", progress[0].Params)
	}
	var end struct {
		Token string `json:"token"`
		Value struct {
			Kind    string `json:"kind"`
			Message string `json:"message"`
		} `json:"value"`
	}
	_ = json.Unmarshal(progress[1].Params, &end)
	if end.Token != create.Token || end.Value.Kind != "end" || end.Value.Message != res.Line || res.Line == "" {
		t.Errorf("end = %s, want message %q", progress[1].Params, res.Line)
	}
	logs := lsptest.Of(s.Notes, MethodLogMessage)
	if len(logs) == 0 || !strings.Contains(string(logs[len(logs)-1].Params), "ck_8f2a1c") {
		t.Errorf("result line not logged: %v", logs)
	}
	comp := lsptest.Of(s.Notes, MethodCompaction)
	if len(comp) != 2 || !strings.Contains(string(comp[0].Params), `"phase":"start"`) ||
		!strings.Contains(string(comp[1].Params), `"phase":"end"`) || !strings.Contains(string(comp[1].Params), `"tokensAfter":14870`) {
		t.Errorf("soba/compaction = %v", comp)
	}
}

// TestProgressSaysWhatWaits_RB3: the begin's title is the one the backend
// gave (what the compaction holds up); each report carries the backend's
// message, and a percentage only when the backend sent one, 0 sent as 1.
func TestProgressSaysWhatWaits_RB3(t *testing.T) {
	tests := []struct {
		title, wantTitle string
	}{
		{"", ProgressTitle},
		{"Compacting context before response", "Compacting context before response"},
	}
	for _, tt := range tests {
		t.Run(tt.wantTitle, func(t *testing.T) {
			e := runServer(t)
			e.backend.compactTitle = tt.title
			e.initialize(true)
			ch, _ := e.slowCompact()
			s := e.Await(func(s lsptest.State) bool { return len(lsptest.Of(s.Notes, MethodProgress)) >= 4 }, wait)
			var vals []map[string]any
			for _, p := range lsptest.Of(s.Notes, MethodProgress) {
				var pp struct {
					Value map[string]any `json:"value"`
				}
				if err := json.Unmarshal(p.Params, &pp); err != nil {
					t.Fatal(err)
				}
				vals = append(vals, pp.Value)
			}
			want := []map[string]any{
				{"kind": "begin", "title": tt.wantTitle, "cancellable": true},
				{"kind": "report", "message": "waiting for the summary model · 0 s"},
				{"kind": "report", "message": "waiting for the summary model · part 1 of 2 · 1 s", "percentage": float64(1)},
				{"kind": "report", "message": "summarizing part 2 of 2 · 640 tokens · 15 s", "percentage": float64(50)},
			}
			for i, w := range want {
				if !reflect.DeepEqual(vals[i], w) {
					t.Errorf("progress %d = %v, want %v", i, vals[i], w)
				}
			}
			comp := lsptest.Of(s.Notes, MethodCompaction)
			if len(comp) < 2 || !strings.Contains(string(comp[1].Params), `"message":"waiting for the summary model · 0 s"`) {
				t.Errorf("soba/compaction progress does not carry the message: %v", comp)
			}
			close(e.backend.release)
			e.Wait("compact", ch, nil)
		})
	}
}

// TestProgressCancel_RF2: cancelling the progress cancels the compaction;
// soba.compact resolves with outcome "cancelled", not an error.
func TestProgressCancel_RF2(t *testing.T) {
	e := runServer(t)
	e.initialize(true)
	ch, _ := e.slowCompact()
	s := e.Await(func(s lsptest.State) bool { return len(lsptest.Of(s.Notes, MethodProgress)) >= 1 }, wait)
	var begin struct {
		Token json.RawMessage `json:"token"`
	}
	_ = json.Unmarshal(lsptest.Of(s.Notes, MethodProgress)[0].Params, &begin)
	e.Notify(MethodWorkDoneCancel, map[string]any{"token": begin.Token})
	var res protocol.CompactionResult
	if err := e.Wait("compact", ch, &res); err != nil {
		t.Fatalf("cancelled compact answered an error: %v", err)
	}
	if res.Outcome != protocol.OutcomeCancelled {
		t.Errorf("outcome = %q, want cancelled", res.Outcome)
	}
	calls, _, _, _ := e.backend.snapshot()
	if !slices.Contains(calls, "CancelCompaction:"+res.OperationID) {
		t.Errorf("backend calls %v lack CancelCompaction:%s", calls, res.OperationID)
	}
	e.Await(func(s lsptest.State) bool {
		p := lsptest.Of(s.Notes, MethodProgress)
		return strings.Contains(string(p[len(p)-1].Params), `"end"`)
	}, wait)
}

// TestProgressClientToken: a soba.compact request's workDoneToken is used
// instead of creating one.
func TestProgressClientToken(t *testing.T) {
	e := runServer(t)
	e.initialize(true)
	if err := e.Call(MethodExecuteCommand, map[string]any{"command": protocol.CommandCompact, "workDoneToken": 42}, nil); err != nil {
		t.Fatal(err)
	}
	s := e.Await(func(s lsptest.State) bool { return len(lsptest.Of(s.Notes, MethodProgress)) >= 2 }, wait)
	if n := len(lsptest.Of(s.Requests, MethodWorkDoneCreate)); n != 0 {
		t.Errorf("created %d tokens despite the client's token", n)
	}
	for _, p := range lsptest.Of(s.Notes, MethodProgress) {
		if !strings.HasPrefix(string(p.Params), `{"token":42,`) {
			t.Errorf("progress %s not on the client's token 42", p.Params)
		}
	}
}

// TestNoWorkDoneProgressFallback: without window.workDoneProgress the
// barrier is reported by logMessage (start) and showMessage (result line).
func TestNoWorkDoneProgressFallback(t *testing.T) {
	e := runServer(t)
	e.initialize(false)
	var res protocol.CompactionResult
	if err := e.Command(protocol.CommandCompact, nil, &res); err != nil {
		t.Fatal(err)
	}
	s := e.Await(func(s lsptest.State) bool { return len(lsptest.Of(s.Notes, MethodShowMessage)) >= 1 }, wait)
	if len(lsptest.Of(s.Notes, MethodProgress)) != 0 || len(lsptest.Of(s.Requests, MethodWorkDoneCreate)) != 0 {
		t.Errorf("$/progress used without the capability")
	}
	if !strings.Contains(string(lsptest.Of(s.Notes, MethodShowMessage)[0].Params), res.Line) {
		t.Errorf("showMessage %s lacks the result line %q", lsptest.Of(s.Notes, MethodShowMessage)[0].Params, res.Line)
	}
	found := false
	for _, l := range lsptest.Of(s.Notes, MethodLogMessage) {
		found = found || strings.Contains(string(l.Params), ProgressTitle)
	}
	if !found {
		t.Errorf("no logMessage with %q", ProgressTitle)
	}
}

// TestBudgetCoalescing_RO1: 100 rapid budgets are coalesced to a few
// notifications, and the last one sent is the last state.
func TestBudgetCoalescing_RO1(t *testing.T) {
	e := runServer(t)
	e.initialize(false)
	n := e.backend.notifier()
	start := time.Now()
	for i := 1; i <= 100; i++ {
		n.Budget(protocol.Budget{EffectiveTokens: i, State: protocol.StateGenerating})
	}
	s := e.Await(func(s lsptest.State) bool {
		b := lsptest.Of(s.Notes, MethodBudget)
		return len(b) > 0 && strings.Contains(string(b[len(b)-1].Params), `"effectiveTokens":100,`)
	}, wait)
	time.Sleep(300 * time.Millisecond) // nothing more may arrive
	s = e.Snapshot()
	budgets := lsptest.Of(s.Notes, MethodBudget)
	if len(budgets) > 3 {
		t.Errorf("%d budget notifications for 100 rapid changes, want ≤ 3", len(budgets))
	}
	last := budgets[len(budgets)-1]
	if !strings.Contains(string(last.Params), `"effectiveTokens":100,`) || !strings.Contains(string(last.Params), `"pending":[]`) {
		t.Errorf("last budget = %s, want the last state", last.Params)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("coalescing took %v", time.Since(start))
	}
}

func TestEventsInOrder(t *testing.T) {
	e := runServer(t)
	e.initialize(false)
	n := e.backend.notifier()
	n.Event(protocol.Event{TurnID: "t1", Type: "turn_start"})
	for i := range 50 {
		n.Event(protocol.Event{TurnID: "t1", Type: "text", Delta: strings.Repeat("x", i%3+1)})
	}
	n.Event(protocol.Event{TurnID: "t1", Type: "turn_end", Outcome: "completed"})
	n.Warn("Compaction used the local fallback capsule (degraded)")
	s := e.Await(func(s lsptest.State) bool { return len(lsptest.Of(s.Notes, MethodShowMessage)) == 1 }, wait)
	ev := lsptest.Of(s.Notes, MethodEvent)
	if len(ev) != 52 || !strings.Contains(string(ev[0].Params), "turn_start") || !strings.Contains(string(ev[51].Params), `"outcome":"completed"`) {
		t.Fatalf("events = %d, first %s", len(ev), ev[0].Params)
	}
	if !strings.Contains(string(lsptest.Of(s.Notes, MethodShowMessage)[0].Params), `"type":2`) {
		t.Errorf("fallback warning not of type Warning: %s", lsptest.Of(s.Notes, MethodShowMessage)[0].Params)
	}
}

// TestCancelRequestNumericID: $/cancelRequest with a numeric id cancels the
// request's context (v0.12's float64 ids ignored it).
func TestCancelRequestNumericID(t *testing.T) {
	e := runServer(t)
	e.initialize(false)
	ch, id := e.slowCompact()
	e.Await(func(s lsptest.State) bool { return len(lsptest.Of(s.Notes, MethodCompaction)) >= 1 }, wait)
	e.Notify(MethodCancelRequest, map[string]any{"id": id})
	select {
	case m := <-ch:
		var res protocol.CompactionResult
		if m.Error == nil {
			_ = json.Unmarshal(m.Result, &res)
		}
		if m.Error == nil && res.Outcome != protocol.OutcomeCancelled {
			t.Errorf("cancelled request answered %s", m.Result)
		}
	case <-time.After(wait):
		t.Fatal("$/cancelRequest with a numeric id was ignored")
	}
}

func TestDidChangeConfiguration_RS1(t *testing.T) {
	e := runServer(t)
	e.initialize(false)
	e.Notify(MethodDidChangeConfig, map[string]any{"settings": map[string]any{"soba": map[string]any{"tools": map[string]any{"approval": "auto"}}}})
	// Notifications are handled in wire order, before this request.
	if err := e.Command(protocol.CommandBudget, nil, nil); err != nil {
		t.Fatal(err)
	}
	e.script(func(b *testBackend) {
		b.configErr = &ArgError{Command: "config", Field: "compaction.keepRecentTokens", Problem: "must not be negative"}
	})
	e.Notify(MethodDidChangeConfig, map[string]any{"settings": map[string]any{"soba": map[string]any{"compaction": map[string]any{"keepRecentTokens": -1}}}})
	s := e.Await(func(s lsptest.State) bool { return len(lsptest.Of(s.Notes, MethodShowMessage)) == 1 }, wait)
	msg := string(lsptest.Of(s.Notes, MethodShowMessage)[0].Params)
	if !strings.Contains(msg, `"type":1`) || !strings.Contains(msg, "compaction.keepRecentTokens") {
		t.Errorf("config error message = %s, want type Error naming the key", msg)
	}
	e.Notify(MethodDidChangeConfig, map[string]any{"settings": map[string]any{"other": 1}})
	if err := e.Command(protocol.CommandBudget, nil, nil); err != nil {
		t.Fatalf("server stopped after a config error: %v", err)
	}
	_, _, configured, _ := e.backend.snapshot()
	if len(configured) != 2 || !strings.Contains(configured[0], `"approval":"auto"`) {
		t.Errorf("backend configured with %v", configured)
	}
}

func TestDocumentSync(t *testing.T) {
	e := runServer(t)
	e.initialize(false)
	uri := "file:///tmp/soba-ws/main.go"
	e.Notify(MethodDidOpen, map[string]any{"textDocument": map[string]any{"uri": uri, "languageId": "go", "version": 1, "text": "package main"}})
	e.Notify(MethodDidChange, map[string]any{"textDocument": map[string]any{"uri": uri, "version": 2}, "contentChanges": []any{map[string]any{"text": "x"}}})
	e.Notify(MethodDidSave, map[string]any{"textDocument": map[string]any{"uri": uri}})
	e.Notify(MethodDidClose, map[string]any{"textDocument": map[string]any{"uri": uri}})
	if err := e.Command(protocol.CommandBudget, nil, nil); err != nil {
		t.Fatal(err)
	}
	_, docs, _, _ := e.backend.snapshot()
	want := []string{"open " + uri, "change@2 " + uri, "save " + uri, "close " + uri}
	if !slices.Equal(docs, want) {
		t.Errorf("document callbacks %v, want %v", docs, want)
	}
}

// TestApprovals_RW3: window/showMessageRequest with the three actions, the
// one for the session naming its scope (in its title and in soba.scope), or
// two for a call asked every time; only an action offered allows, anything
// else is Deny.
func TestApprovals_RW3(t *testing.T) {
	const edits = "Allow file edits for this session"
	cases := []struct {
		name      string
		scope     string
		answer    any
		rerr      *lsptest.Error
		want      Approval
		wantTitle string // the third action; "" when only two are offered
		everyTime bool
	}{
		{"allow once", "bash commands", map[string]any{"title": ActionAllowOnce}, nil, AllowOnce, "Allow bash commands for this session", false},
		{"allow file edits for the session", "file edits", map[string]any{"title": edits}, nil, AllowSession, edits, false},
		{"allow an MCP server for the session", `the tools of MCP server "github"`, map[string]any{"title": `Allow the tools of MCP server "github" for this session`}, nil, AllowSession, `Allow the tools of MCP server "github" for this session`, false},
		{"no scope: the plain title", "", map[string]any{"title": ActionAllowSession}, nil, AllowSession, ActionAllowSession, false},
		{"the plain title when a scope was offered", "file edits", map[string]any{"title": ActionAllowSession}, nil, Deny, edits, false},
		{"another scope's title", "bash commands", map[string]any{"title": edits}, nil, Deny, "Allow bash commands for this session", false},
		{"deny", "bash commands", map[string]any{"title": ActionDeny}, nil, Deny, "Allow bash commands for this session", false},
		{"dismissed", "bash commands", nil, nil, Deny, "Allow bash commands for this session", false},
		{"error", "bash commands", nil, &lsptest.Error{Code: -32603, Message: "no UI"}, Deny, "Allow bash commands for this session", false},
		{"asked every time: allow once", "file edits", map[string]any{"title": ActionAllowOnce}, nil, AllowOnce, "", true},
		{"asked every time: no answer for the session", "file edits", map[string]any{"title": edits}, nil, Deny, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := runServer(t)
			e.initialize(false)
			var asked json.RawMessage
			e.Answer(func(method string, params json.RawMessage) (any, *lsptest.Error) {
				if method == MethodShowMessageRequest {
					asked = params
				}
				return c.answer, c.rerr
			})
			got, _ := e.backend.approver().Approve(t.Context(), ApprovalRequest{Tool: "bash", Summary: "go test ./...", Scope: c.scope, EveryTime: c.everyTime})
			if got != c.want {
				t.Errorf("approval = %v, want %v", got, c.want)
			}
			var params struct {
				Message string `json:"message"`
				Actions []struct {
					Title string `json:"title"`
				} `json:"actions"`
				Soba protocol.ApprovalDetail `json:"soba"`
			}
			if err := json.Unmarshal(asked, &params); err != nil {
				t.Fatalf("request %s: %v", asked, err)
			}
			var titles []string
			for _, a := range params.Actions {
				titles = append(titles, a.Title)
			}
			want := []string{ActionDeny, ActionAllowOnce}
			wantScope := ""
			if c.wantTitle != "" {
				want, wantScope = append(want, c.wantTitle), c.scope
			}
			if !slices.Equal(titles, want) {
				t.Errorf("actions %q, want %q", titles, want)
			}
			if params.Soba.Scope != wantScope || params.Soba.Tool != "bash" || !strings.Contains(params.Message, "go test ./...") {
				t.Errorf("request %s: want soba.scope %q, the tool and the command", asked, wantScope)
			}
		})
	}
}

// TestPipelinedShutdownExit: shutdown and exit written back to back in one
// write; the shutdown reply still arrives and the exit code is 0.
func TestPipelinedShutdownExit(t *testing.T) {
	e := runServer(t)
	e.initialize(false)
	ch := e.Expect("77")
	batch := append(lsptest.Frame([]byte(`{"jsonrpc":"2.0","id":77,"method":"shutdown"}`)), lsptest.Frame([]byte(`{"jsonrpc":"2.0","method":"exit"}`))...)
	e.WriteRaw(batch)
	select {
	case m := <-ch:
		if m.Error != nil || string(m.Result) != "null" {
			t.Errorf("shutdown reply = %+v, want result null", m)
		}
	case <-time.After(wait):
		t.Fatal("pipelined shutdown reply lost on exit")
	}
	e.ended(0)
	// The server closes the connection on exit.
	e.Await(func(s lsptest.State) bool { return s.EOF }, wait)
}

func TestRequestAfterShutdown(t *testing.T) {
	e := runServer(t)
	e.initialize(false)
	if err := e.Call(MethodShutdown, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.Command(protocol.CommandBudget, nil, nil); err == nil || err.Code != -32600 {
		t.Errorf("request after shutdown: %v, want -32600", err)
	}
	e.Notify(MethodExit, nil)
	if code := e.exitCode(wait); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
}

func TestExitWithoutShutdown(t *testing.T) {
	e := runServer(t)
	e.initialize(false)
	e.Notify(MethodExit, nil)
	e.ended(1)
	e.Await(func(s lsptest.State) bool { return s.EOF }, wait)
}

// TestInputEOF: losing stdin ends the server and closes the backend, even
// with a compaction running.
func TestInputEOF(t *testing.T) {
	e := runServer(t)
	e.initialize(false)
	e.slowCompact()
	e.Await(func(s lsptest.State) bool { return len(lsptest.Of(s.Notes, MethodCompaction)) >= 1 }, wait)
	e.Hangup()
	e.ended(1)
}
