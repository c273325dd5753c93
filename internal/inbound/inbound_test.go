package inbound

import (
	"strings"
	"testing"
)

// TestMembersFindsTopLevelIDAndMethod_RW7: the streaming scan finds the
// top-level id and method wherever they are (before or after a huge
// params), never a nested "id", and keeps nothing else.
func TestMembersFindsTopLevelIDAndMethod_RW7(t *testing.T) {
	big := strings.Repeat(`x\"{[}],:`, 1000)
	for _, tc := range []struct {
		name, msg, id, method string
	}{
		{"id first", `{"jsonrpc":"2.0","id":7,"method":"workspace/executeCommand","params":{"x":"` + big + `"}}`, "7", `"workspace/executeCommand"`},
		{"id last", `{"params":{"id":99,"text":"` + big + `"},"method":"session/prompt","jsonrpc":"2.0","id":"abc"}`, `"abc"`, `"session/prompt"`},
		{"spaced", "{ \"id\" : 12 ,\n \"method\" : \"m\" , \"params\" : [1, {\"id\": 3}] }", "12", `"m"`},
		{"nested id only", `{"method":"n","params":{"id":5}}`, "", `"n"`},
		{"escaped key", `{"i\"d":1,"method":"x"}`, "", `"x"`},
		{"string id with escapes", `{"id":"a\"b","method":"x"}`, `"a\"b"`, `"x"`},
		{"id too long", `{"id":"` + strings.Repeat("i", 600) + `","method":"x"}`, "", `"x"`},
		{"not an object", `[{"id":1}]`, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m Members
			early := ""
			m.OnID = func(raw []byte) { early = string(raw) }
			for i := 0; i < len(tc.msg); i += 7 { // in small pieces, as a pipe delivers
				m.Write([]byte(tc.msg[i:min(i+7, len(tc.msg))]))
			}
			if string(m.ID) != tc.id || string(m.Method) != tc.method || early != tc.id {
				t.Fatalf("id %q method %q (OnID %q), want %q %q", m.ID, m.Method, early, tc.id, tc.method)
			}
		})
	}
}
