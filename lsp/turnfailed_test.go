package lsp

import "testing"

// A failed turn's window/showMessage names SOBA once: a sentence already
// written for the user (agent/messages.go) is shown as it is.
func TestTurnFailedMessage(t *testing.T) {
	cases := []struct{ reason, want string }{
		{"", "SOBA: the turn failed"},
		{"  ", "SOBA: the turn failed"},
		{"openai: request rejected (HTTP 400): bad tool", "SOBA: the turn failed: openai: request rejected (HTTP 400): bad tool"},
		{"SOBA could not fit this turn into the model's 17,000-token limit even after compacting: the latest tool result alone is 12,000 tokens. Raise `model.contextWindow` if the model allows it, or ask for a smaller part.",
			"SOBA could not fit this turn into the model's 17,000-token limit even after compacting: the latest tool result alone is 12,000 tokens. Raise `model.contextWindow` if the model allows it, or ask for a smaller part."},
	}
	for _, tc := range cases {
		if got := TurnFailedMessage(tc.reason); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.reason, got, tc.want)
		}
	}
}
