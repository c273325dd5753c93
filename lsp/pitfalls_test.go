package lsp

import (
	"strings"
	"testing"

	lsproto "go.lsp.dev/protocol"

	"github.com/soba-agent/soba-lsp/lsp/protocol"
)

// Tests for the go.lsp.dev v0.12 pitfalls of DESIGN.md that v1.0.1 could
// still have; the wire-level ones (numeric $/cancelRequest, pipelined
// shutdown before exit, connection closed on exit, custom methods) are in
// server_test.go. Findings are in docs/dependencies.md.

// TestProgressTokenMarshal: a ProgressToken marshals as its concrete arm
// (v0.12 marshalled it to {} by value).
func TestProgressTokenMarshal(t *testing.T) {
	cases := []struct {
		token lsproto.ProgressToken
		want  string
	}{
		{lsproto.String("soba-compaction-1"), `{"token":"soba-compaction-1","value":{}}`},
		{lsproto.Integer(7), `{"token":7,"value":{}}`},
	}
	for _, c := range cases {
		for _, byPointer := range []bool{true, false} {
			p := lsproto.ProgressParams{Token: c.token, Value: []byte(`{}`)}
			var v any = p
			if byPointer {
				v = &p
			}
			got, err := wireCodec{}.Marshal(v)
			if err != nil || string(got) != c.want {
				t.Errorf("Marshal(%T by pointer=%v) = %s, %v; want %s", c.token, byPointer, got, err, c.want)
			}
		}
	}
	got, _ := wireCodec{}.Marshal(&lsproto.WorkDoneProgressCreateParams{Token: lsproto.String("x")})
	if string(got) != `{"token":"x"}` {
		t.Errorf("create params = %s", got)
	}
}

// TestPercentageZeroKept: percentage 0 is not dropped by omitempty (the
// server still starts at 1, see TestProgressLifecycle_RB3).
func TestPercentageZeroKept(t *testing.T) {
	zero := uint32(0)
	for _, v := range []any{
		&lsproto.WorkDoneProgressReport{Kind: "report", Percentage: &zero},
		&lsproto.WorkDoneProgressBegin{Kind: "begin", Title: "t", Percentage: &zero},
	} {
		got, err := lsproto.Marshal(v)
		if err != nil || !strings.Contains(string(got), `"percentage":0`) {
			t.Errorf("Marshal(%T) = %s, %v; want percentage 0 kept", v, got, err)
		}
	}
}

// TestCustomMethodsReachable: methods outside the standard LSP server set
// reach the server (v0.12's ServerHandler ignored its fallback), and an
// unsupported one is MethodNotFound without ending the connection.
func TestCustomMethodsReachable(t *testing.T) {
	e := runServer(t)
	e.initialize(true)
	if err := e.Call("soba/unknown", map[string]any{}, nil); err == nil || err.Code != -32601 {
		t.Errorf("soba/unknown: %v, want -32601", err)
	}
	e.Notify(MethodWorkDoneCancel, map[string]any{"token": "no-such-token"})
	if err := e.Command(protocol.CommandBudget, nil, nil); err != nil {
		t.Fatalf("server stopped serving: %v", err)
	}
}
