package acp

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/iotest"
)

// TestLinesOverTheLimitSkipped_RW7: a line over the limit never reaches the
// SDK's reader (whose own limit would end the connection); a request is
// answered with -32600 (its id when it could be read, else null), a
// notification only logged, and every line within the limit passes through
// whole and in order, however the pipe cuts the input.
func TestLinesOverTheLimitSkipped_RW7(t *testing.T) {
	const limit = 1000
	big := strings.Repeat("b", 5*limit)
	ok1 := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`
	ok2 := `{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"/x"}}`
	atLimit := `{"jsonrpc":"2.0","method":"n","params":"` + strings.Repeat("c", limit-42) + `"}`
	for _, tc := range []struct {
		name    string
		line    string
		replyID string // "" for no reply
		sized   bool   // the reply names the line's size
	}{
		{"request, id first", `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"prompt":[{"type":"text","text":"` + big + `"}]}}`, "2", false},
		{"request, id last", `{"jsonrpc":"2.0","method":"session/prompt","params":{"prompt":[{"type":"text","text":"` + big + `"}]},"id":"z"}`, `"z"`, false},
		{"neither id nor method", `{"jsonrpc":"2.0","params":"` + big + `"}`, "null", true},
		{"notification", `{"jsonrpc":"2.0","method":"session/cancel","params":{"x":"` + big + `"}}`, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(atLimit) != limit {
				t.Fatalf("the line at the limit is %d bytes", len(atLimit))
			}
			input := ok1 + "\n" + tc.line + "\n" + atLimit + "\n" + ok2 + "\n"
			var out, logged bytes.Buffer
			b := &boundedLines{r: iotest.OneByteReader(strings.NewReader(input)), out: &out, log: slog.New(slog.NewTextHandler(&logged, nil)), limit: limit}
			got, err := io.ReadAll(iotest.HalfReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if want := ok1 + "\n" + atLimit + "\n" + ok2 + "\n"; string(got) != want {
				t.Fatalf("passed through %d bytes, want the three lines within the limit (%d bytes)", len(got), len(want))
			}
			if tc.replyID == "" {
				if out.Len() != 0 || !strings.Contains(logged.String(), "a notification was skipped") {
					t.Fatalf("a notification: reply %q, log %q", out.String(), logged.String())
				}
				return
			}
			var reply struct {
				ID    json.RawMessage `json:"id"`
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(out.Bytes(), &reply); err != nil || strings.Count(out.String(), "\n") != 1 {
				t.Fatalf("reply %q: %v", out.String(), err)
			}
			want := "over the limit of 1000 bytes"
			if tc.sized {
				want = "the message is " + itoa(len(tc.line)) + " bytes, over the limit of 1000 bytes"
			}
			if string(reply.ID) != tc.replyID || reply.Error.Code != -32600 || !strings.Contains(reply.Error.Message, want) {
				t.Fatalf("reply %s, want id %s, -32600 saying %q", out.String(), tc.replyID, want)
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
