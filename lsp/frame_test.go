package lsp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/soba-agent/soba-lsp/lsp/lsptest"
	"github.com/soba-agent/soba-lsp/lsp/protocol"
)

// TestInvalidMessagesSayWhatIsWrong: every message the server cannot
// handle is answered with JSON-RPC 2.0's code (-32700 for a body that is not
// JSON, -32600 for JSON that is not a valid request), a message saying what
// is wrong, the request's id when it could be read (else null), and never a
// long value echoed; the server keeps serving.
func TestInvalidMessagesSayWhatIsWrong(t *testing.T) {
	huge := strings.Repeat("m", 10<<20) // under maxFrameBytes: read, refused by its content
	cases := []struct {
		name, body string
		code       int64
		id         string
		has        string
	}{
		{"not JSON", `{"jsonrpc":"2.0","id":1,"method":`, -32700, "null", "parse error: the message is not valid JSON"},
		{"a number", `42`, -32600, "null", "a message must be a JSON object, got a number"},
		{"a string", `"hi"`, -32600, "null", "a message must be a JSON object, got a string"},
		{"a batch", `[{"jsonrpc":"2.0","id":1,"method":"shutdown"}]`, -32600, "null", "batches are not used by LSP"},
		{"no jsonrpc member", `{"id":7,"method":"soba/x"}`, -32600, "7", `the "jsonrpc" member is missing`},
		{"wrong version", `{"jsonrpc":"1.0","id":7,"method":"soba/x"}`, -32600, "7", `"jsonrpc" must be "2.0", got "1.0"`},
		{"method not a string", `{"jsonrpc":"2.0","id":"a","method":5}`, -32600, `"a"`, `"method" must be a string, got 5`},
		{"id null", `{"jsonrpc":"2.0","id":null,"method":"workspace/executeCommand"}`, -32600, "null", `"id" is null`},
		{"id an object", `{"jsonrpc":"2.0","id":{"x":1},"method":"shutdown"}`, -32600, "null", `"id" must be an integer or a string, got {"x":1}`},
		{"method and result", `{"jsonrpc":"2.0","id":8,"method":"x","result":1}`, -32600, "8", `cannot carry both "method" and "result"`},
		{"10 MB method name", `{"jsonrpc":"2.0","id":9,"method":"` + huge + `"}`, -32600, "9", `"method" is 10485760 bytes long`},
		{"10 MB string id", `{"jsonrpc":"2.0","id":"` + huge + `","method":"soba/none"}`, -32600, "null", `"id" is a string of 10485760 bytes`},
	}
	e := runServer(t)
	e.initialize(false)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(e.Snapshot().Stray)
			var ch <-chan lsptest.Msg
			if c.id != "null" {
				ch = e.Expect(c.id)
			}
			// A 50 MB message takes the race-instrumented server seconds to
			// read on a loaded machine: its deadline only tells a hang apart.
			d := wait
			if len(c.body) > 1<<20 {
				d = 6 * wait
			}
			e.WriteRaw(lsptest.Frame([]byte(c.body)))
			var m lsptest.Msg
			if c.id == "null" {
				s := e.Await(func(s lsptest.State) bool { return len(s.Stray) > before }, d)
				m = s.Stray[len(s.Stray)-1]
			} else {
				select {
				case m = <-ch:
				case <-time.After(d):
					t.Fatal("no reply")
				}
			}
			if m.Error == nil || int64(m.Error.Code) != c.code || string(m.ID) != c.id || !strings.Contains(m.Error.Message, c.has) {
				t.Fatalf("reply %.300v (id %.80s)\nwant code %d, id %s, message containing %q", m.Error, m.ID, c.code, c.id, c.has)
			}
			if b, _ := json.Marshal(m); len(b) > 1024 {
				t.Errorf("reply is %d bytes: a long value was echoed", len(b))
			}
		})
	}
	if err := e.Command(protocol.CommandBudget, nil, nil); err != nil {
		t.Fatalf("server stopped serving: %v", err)
	}
	if err := e.Call(MethodExecuteCommand, map[string]any{"command": huge[:1<<20]}, nil); err == nil || len(err.Message) > 1024 {
		t.Errorf("unknown 1 MB command: error of %d bytes, want a short one", len(fmt.Sprint(err)))
	}
}

// TestOversizedMessagesSkipped_RW7: a message over the limit is streamed
// past unread and answered with -32600 naming its size and the limit: with
// its id when it has one (found before or after its params), null when it
// has neither id nor method, not at all when it is a notification (logged);
// the server keeps serving, and a header line longer than the reader's
// buffer ends the input instead of growing it.
func TestOversizedMessagesSkipped_RW7(t *testing.T) {
	const limit = 1 << 20
	big := strings.Repeat("a", 3*limit)
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	e := runServer(t, WithMaxMessage(limit), WithLogger(log))
	e.initialize(false)
	size := func(body string) string {
		return fmt.Sprintf("the message is %d bytes, over the limit of %d bytes", len(body), limit)
	}
	for _, c := range []struct {
		name, body, id string
	}{
		{"request, id first", `{"jsonrpc":"2.0","id":31,"method":"workspace/executeCommand","params":{"command":"soba.prompt","arguments":[{"text":"` + big + `"}]}}`, "31"},
		{"request, id last", `{"params":{"command":"soba.prompt","arguments":[{"text":"` + big + `"}]},"method":"workspace/executeCommand","jsonrpc":"2.0","id":"late"}`, `"late"`},
		{"neither id nor method", `{"jsonrpc":"2.0","params":"` + big + `"}`, "null"},
		{"notification", `{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"text":"` + big + `"}}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(e.Snapshot().Stray)
			var ch <-chan lsptest.Msg
			if c.id != "null" && c.id != "" {
				ch = e.Expect(c.id)
			}
			e.WriteRaw(lsptest.Frame([]byte(c.body)))
			var m lsptest.Msg
			switch c.id {
			case "":
				if err := e.Command(protocol.CommandBudget, nil, nil); err != nil {
					t.Fatalf("server stopped serving: %v", err)
				}
				if n := len(e.Snapshot().Stray); n != before {
					t.Fatalf("a notification was answered")
				}
				if !strings.Contains(buf.String(), "a notification was skipped") || !strings.Contains(buf.String(), size(c.body)) {
					t.Fatalf("the skipped notification is not logged:\n%s", buf.String())
				}
				return
			case "null":
				s := e.Await(func(s lsptest.State) bool { return len(s.Stray) > before }, wait)
				m = s.Stray[len(s.Stray)-1]
			default:
				select {
				case m = <-ch:
				case <-time.After(wait):
					t.Fatal("no reply")
				}
			}
			if m.Error == nil || m.Error.Code != -32600 || string(m.ID) != c.id || !strings.Contains(m.Error.Message, size(c.body)) {
				t.Fatalf("reply %.300v (id %.80s), want -32600 with id %s saying %q", m.Error, m.ID, c.id, size(c.body))
			}
			if err := e.Command(protocol.CommandBudget, nil, nil); err != nil {
				t.Fatalf("server stopped serving: %v", err)
			}
		})
	}
	t.Run("header line over the buffer", func(t *testing.T) {
		e.WriteRaw([]byte("Content-Length: 5\r\nX-Pad: " + strings.Repeat("p", 2*frameBufBytes) + "\r\n\r\n{}"))
		if code := e.exitCode(wait); code != ExitNoShutdown {
			t.Errorf("exit code %d, want %d", code, ExitNoShutdown)
		}
	})
}

// TestBrokenHeaderLoggedBeforeExit: a header that cannot be resynchronised
// ends the server, and the reason is logged at the default level first.
func TestBrokenHeaderLoggedBeforeExit(t *testing.T) {
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	e := runServer(t, WithLogger(log))
	e.initialize(false)
	e.WriteRaw([]byte("Content-Length: banana\r\n\r\n{}"))
	if code := e.exitCode(wait); code != ExitNoShutdown {
		t.Errorf("exit code %d, want %d", code, ExitNoShutdown)
	}
	out := buf.String()
	if !strings.Contains(out, "level=ERROR") || !strings.Contains(out, "input is broken") || !strings.Contains(out, `near=`) || !strings.Contains(out, `Content-Length: banana`) {
		t.Errorf("log does not say why the server stopped:\n%s", out)
	}
}

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

// TestApprovalRequestCarriesWholeSummary_RW3: the approval question on the
// wire holds the agent's whole summary (every line, padding markers and
// all) below a first line naming the tool, and Deny is the first action,
// the one editors focus by default.
func TestApprovalRequestCarriesWholeSummary_RW3(t *testing.T) {
	e := runServer(t)
	e.initialize(false)
	var asked struct {
		Message string `json:"message"`
		Actions []struct {
			Title string `json:"title"`
		} `json:"actions"`
	}
	e.Answer(func(method string, params json.RawMessage) (any, *lsptest.Error) {
		if method == MethodShowMessageRequest {
			_ = json.Unmarshal(params, &asked)
		}
		return map[string]any{"title": ActionAllowOnce}, nil
	})
	summary := "command:\necho checking build status[300 spaces]; rm -rf ~/important\nmake"
	if got, _ := e.backend.approver().Approve(t.Context(), ApprovalRequest{Tool: "bash", Summary: summary}); got != AllowOnce {
		t.Fatalf("approval = %v", got)
	}
	if want := "SOBA wants to run bash\n" + summary; asked.Message != want {
		t.Errorf("message %q\nwant %q", asked.Message, want)
	}
	if len(asked.Actions) != 3 || asked.Actions[0].Title != ActionDeny {
		t.Errorf("actions %+v, want Deny first of three", asked.Actions)
	}

	// A write carries the path and the proposed content for a diff.
	var raw json.RawMessage
	e.Answer(func(method string, params json.RawMessage) (any, *lsptest.Error) {
		if method == MethodShowMessageRequest {
			raw = params
		}
		return nil, nil
	})
	proposed := "package a\n\nfunc A() {}\n"
	if got, _ := e.backend.approver().Approve(t.Context(), ApprovalRequest{Tool: "write_file", Summary: "write a.go (23 bytes):\n" + proposed,
		Path: "a.go", Proposed: &proposed}); got != Deny {
		t.Fatalf("dismissed approval = %v, want Deny", got)
	}
	var w struct {
		Soba protocol.ApprovalDetail `json:"soba"`
	}
	if err := json.Unmarshal(raw, &w); err != nil || w.Soba.Tool != "write_file" || w.Soba.Path != "a.go" || w.Soba.Proposed == nil ||
		*w.Soba.Proposed != proposed || w.Soba.Summary != "write a.go (23 bytes):\n"+proposed {
		t.Errorf("request %s: want soba {tool write_file, summary, path a.go, proposed the content}", raw)
	}
}
