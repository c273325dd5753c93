package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/conc"
)

// noBackend is a Backend that opens nothing.
type noBackend struct{}

func (noBackend) NewSession(context.Context, SessionOptions) (Session, error) {
	return nil, errors.New("no sessions here")
}
func (noBackend) LoadSession(context.Context, SessionOptions) (Session, error) {
	return nil, errors.New("no sessions here")
}
func (noBackend) ListSessions(context.Context, string) ([]SessionSummary, error) { return nil, nil }
func (noBackend) DeleteSession(context.Context, string, string) (bool, error)    { return false, nil }

// Garbage lines, a JSON-RPC batch, an unknown method and requests with bad
// params are answered or dropped, and the server keeps serving: the next
// initialize is answered.
func TestServeSurvivesHostileLines(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	var wg conc.WaitGroup
	wg.Go(func() { _ = Serve(ctx, noBackend{}, inR, outW, "test", slog.New(slog.NewTextHandler(io.Discard, nil))) })
	defer func() {
		cancel()
		inW.Close()
		outW.Close()
		wg.Wait()
	}()
	lines := []string{
		"this is not json",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":",
		`[{"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}]`,
		`{"jsonrpc":"2.0","id":3,"method":"no/such/method","params":{}}`,
		`{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":"relative","mcpServers":[]}}`,
		`{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"s_x","prompt":[{"type":"text","text":"` + strings.Repeat("a", 1<<16) + `"}]}}`,
		`{"jsonrpc":"2.0","id":6,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`,
	}
	go func() {
		for _, l := range lines {
			if _, err := io.WriteString(inW, l+"\n"); err != nil {
				return
			}
		}
	}()
	answered := map[float64]json.RawMessage{}
	sc := bufio.NewScanner(outR)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	deadline := time.AfterFunc(10*time.Second, func() { outR.CloseWithError(errors.New("timed out")) })
	defer deadline.Stop()
	for sc.Scan() {
		var m struct {
			ID     *float64        `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		answered[*m.ID] = append(m.Result, m.Error...)
		if len(answered) >= 4 && answered[3] != nil && answered[4] != nil && answered[5] != nil && answered[6] != nil {
			break
		}
	}
	if r, ok := answered[6]; !ok || !strings.Contains(string(r), `"protocolVersion":1`) {
		t.Fatalf("the initialize after the hostile lines was not answered: %s (answers: %d)", r, len(answered))
	}
	for _, id := range []float64{3, 4, 5} {
		if r, ok := answered[id]; !ok || !strings.Contains(string(r), `"code"`) {
			t.Errorf("request %v was not answered with an error: %s", id, r)
		}
	}
}
