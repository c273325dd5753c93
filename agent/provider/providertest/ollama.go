package providertest

import (
	"encoding/json"
	"net/http"

	"github.com/soba-agent/soba-lsp/agent/provider"
)

// writeOllama streams a reply as Ollama's /api/chat does: NDJSON lines of
// message content, each tool call whole in a line of its own, then the
// done line with the counts: prompt_eval_count is the whole prompt and
// prompt_eval_cached_count the part the server still held in its KV cache
// (as Ollama reports them since it reports the cached part).
func writeOllama(w http.ResponseWriter, r *http.Request, model string, reply Reply, u *provider.Usage) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	e := &sse{w: w, r: r, delay: reply.ChunkDelay}
	line := func(v map[string]any) bool {
		v["model"] = model
		v["created_at"] = "2026-01-01T00:00:00Z"
		if e.n > 0 && !wait(e.r, e.delay) {
			return false
		}
		e.n++
		b, _ := json.Marshal(v)
		_, _ = w.Write(append(b, '\n'))
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		return r.Context().Err() == nil
	}
	content := reply.Text
	if reply.Thinking != "" && reply.ThinkingAs == "tags" {
		content = InContent(reply.Thinking, "tags") + content
	} else {
		for _, p := range pieces(reply.Thinking, 8) {
			if !line(map[string]any{"message": map[string]any{"role": "assistant", "content": "", "thinking": p}, "done": false}) {
				return
			}
		}
	}
	for _, p := range pieces(content, 8) {
		if !line(map[string]any{"message": map[string]any{"role": "assistant", "content": p}, "done": false}) {
			return
		}
	}
	for _, tc := range reply.ToolCalls {
		call := map[string]any{"id": tc.ID, "function": map[string]any{"name": tc.Name, "arguments": json.RawMessage(tc.Arguments)}}
		if !line(map[string]any{"message": map[string]any{"role": "assistant", "content": "", "tool_calls": []any{call}}, "done": false}) {
			return
		}
	}
	if reply.Cut {
		return
	}
	stop := reply.StopReason
	if stop == "" {
		stop = "stop"
	}
	line(map[string]any{"message": map[string]any{"role": "assistant", "content": ""}, "done": true, "done_reason": stop,
		"prompt_eval_count": u.InputTokens, "prompt_eval_cached_count": u.CachedTokens, "eval_count": u.OutputTokens})
}

func decodeOllama(raw []byte) Received {
	var body struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role       string `json:"role"`
			Content    string `json:"content"`
			ToolName   string `json:"tool_name"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
		Options struct {
			NumPredict int `json:"num_predict"`
		} `json:"options"`
	}
	var rec Received
	if err := json.Unmarshal(raw, &body); err != nil {
		rec.DecodeError = err.Error()
		return rec
	}
	rec.Model, rec.Stream, rec.MaxTokens = body.Model, body.Stream, body.Options.NumPredict
	for _, m := range body.Messages {
		if m.Role == "system" {
			rec.System += m.Content
			continue
		}
		pm := provider.Message{Role: m.Role, Text: m.Content, ToolCallID: m.ToolCallID, ToolName: m.ToolName}
		for _, tc := range m.ToolCalls {
			pm.ToolCalls = append(pm.ToolCalls, provider.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		rec.Messages = append(rec.Messages, pm)
	}
	for _, t := range body.Tools {
		rec.Tools = append(rec.Tools, t.Function.Name)
	}
	return rec
}
