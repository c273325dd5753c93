package providertest

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/soba-agent/soba-lsp/agent/provider"
)

// writeResponses streams a reply in the Responses API's event format:
// response.created, then per output item output_item.added, its deltas and
// output_item.done, then response.completed with the usage (or, with Cut,
// nothing after the content).
func writeResponses(w http.ResponseWriter, r *http.Request, model string, reply Reply, u *provider.Usage) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	e := &sse{w: w, r: r, delay: reply.ChunkDelay}
	seq := 0
	ev := func(typ string, fields map[string]any) bool {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		return e.event(typ, fields)
	}
	const id = "resp_providertest"
	head := map[string]any{"id": id, "object": "response", "status": "in_progress", "model": model, "output": []any{}, "store": false, "usage": nil}
	if !ev("response.created", map[string]any{"response": head}) || !ev("response.in_progress", map[string]any{"response": head}) {
		return
	}
	var output []any
	idx := 0
	if reply.Reasoning != "" || reply.Thinking != "" {
		item := map[string]any{"id": fmt.Sprintf("rs_%d", idx), "type": "reasoning", "summary": []any{}}
		if !ev("response.output_item.added", map[string]any{"output_index": idx, "item": item}) {
			return
		}
		for _, p := range pieces(reply.Thinking, 8) {
			if !ev("response.reasoning_text.delta", map[string]any{"item_id": fmt.Sprintf("rs_%d", idx), "output_index": idx, "content_index": 0, "delta": p}) {
				return
			}
		}
		done := map[string]any{"id": fmt.Sprintf("rs_%d", idx), "type": "reasoning", "summary": []any{}, "encrypted_content": reply.Reasoning}
		if !ev("response.output_item.done", map[string]any{"output_index": idx, "item": done}) {
			return
		}
		output = append(output, done)
		idx++
	}
	if reply.Text != "" {
		mid := fmt.Sprintf("msg_%d", idx)
		if !ev("response.output_item.added", map[string]any{"output_index": idx, "item": map[string]any{"id": mid, "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}}) {
			return
		}
		for _, p := range pieces(reply.Text, 8) {
			if !ev("response.output_text.delta", map[string]any{"item_id": mid, "output_index": idx, "content_index": 0, "delta": p}) {
				return
			}
		}
		done := map[string]any{"id": mid, "type": "message", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": reply.Text, "annotations": []any{}}}}
		if !ev("response.output_text.done", map[string]any{"item_id": mid, "output_index": idx, "content_index": 0, "text": reply.Text}) ||
			!ev("response.output_item.done", map[string]any{"output_index": idx, "item": done}) {
			return
		}
		output = append(output, done)
		idx++
	}
	for _, tc := range reply.ToolCalls {
		fid := fmt.Sprintf("fc_%d", idx)
		item := map[string]any{"id": fid, "type": "function_call", "status": "in_progress", "arguments": "", "call_id": tc.ID, "name": tc.Name}
		if !ev("response.output_item.added", map[string]any{"output_index": idx, "item": item}) {
			return
		}
		for _, p := range pieces(string(tc.Arguments), 7) {
			if !ev("response.function_call_arguments.delta", map[string]any{"item_id": fid, "output_index": idx, "delta": p}) {
				return
			}
		}
		if reply.Cut {
			return
		}
		done := map[string]any{"id": fid, "type": "function_call", "status": "completed", "arguments": string(tc.Arguments), "call_id": tc.ID, "name": tc.Name}
		if !ev("response.function_call_arguments.done", map[string]any{"item_id": fid, "output_index": idx, "arguments": string(tc.Arguments)}) ||
			!ev("response.output_item.done", map[string]any{"output_index": idx, "item": done}) {
			return
		}
		output = append(output, done)
		idx++
	}
	if reply.Cut {
		return
	}
	end := map[string]any{"id": id, "object": "response", "status": "completed", "model": model, "output": output, "store": false,
		"usage": responsesUsage(u)}
	typ := "response.completed"
	if reply.StopReason == "max_output_tokens" {
		typ = "response.incomplete"
		end["status"] = "incomplete"
		end["incomplete_details"] = map[string]any{"reason": "max_output_tokens"}
	}
	ev(typ, map[string]any{"response": end})
}

func responsesUsage(u *provider.Usage) map[string]any {
	return map[string]any{"input_tokens": u.InputTokens, "input_tokens_details": map[string]any{"cached_tokens": u.CachedTokens},
		"output_tokens": u.OutputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": u.InputTokens + u.OutputTokens}
}

// writeCompacted answers POST /responses/compact with the compacted
// response object: the user messages of the input, kept verbatim, then one
// compaction item with the reply's encrypted content. A reply without
// Compaction answers 500, so a script that did not expect a compaction
// fails loudly.
func writeCompacted(w http.ResponseWriter, rec Received, reply Reply, u *provider.Usage) {
	w.Header().Set("Content-Type", "application/json")
	if reply.Compaction == "" {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error":{"message":"providertest: the compact reply has no compaction","type":"server_error"}}`)
		return
	}
	var output []any
	for _, m := range rec.Messages {
		if m.Role == provider.RoleUser && m.Text != "" {
			output = append(output, map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": m.Text}}})
		}
	}
	output = append(output, map[string]any{"id": "cmp_providertest", "type": "compaction", "encrypted_content": reply.Compaction})
	usage := *u
	if reply.Usage == nil {
		usage.OutputTokens = len(reply.Compaction) / 4
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "resp_compact_providertest", "object": "response.compaction", "created_at": 1764720000,
		"output": output, "usage": responsesUsage(&usage)})
}

// decodeResponses reads a /responses or /responses/compact body: messages
// and function calls in provider terms, reasoning and compaction items as
// NativeItems.
func decodeResponses(raw []byte) Received {
	var body struct {
		Model           string            `json:"model"`
		Stream          bool              `json:"stream"`
		Store           *bool             `json:"store"`
		Include         []string          `json:"include"`
		Instructions    string            `json:"instructions"`
		MaxOutputTokens int               `json:"max_output_tokens"`
		Input           []json.RawMessage `json:"input"`
		Tools           []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	var rec Received
	if err := json.Unmarshal(raw, &body); err != nil {
		rec.DecodeError = err.Error()
		return rec
	}
	rec.Model, rec.Stream, rec.Store, rec.Include, rec.System, rec.MaxTokens = body.Model, body.Stream, body.Store, body.Include, body.Instructions, body.MaxOutputTokens
	for i, rawItem := range body.Input {
		var it struct {
			Type      string          `json:"type"`
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			CallID    string          `json:"call_id"`
			Name      string          `json:"name"`
			Arguments string          `json:"arguments"`
			Output    string          `json:"output"`
		}
		if err := json.Unmarshal(rawItem, &it); err != nil {
			rec.DecodeError = fmt.Sprintf("input[%d]: %v", i, err)
			continue
		}
		switch {
		case it.Type == "function_call":
			n := len(rec.Messages)
			if n == 0 || rec.Messages[n-1].Role != provider.RoleAssistant {
				rec.Messages = append(rec.Messages, provider.Message{Role: provider.RoleAssistant})
				n++
			}
			rec.Messages[n-1].ToolCalls = append(rec.Messages[n-1].ToolCalls, provider.ToolCall{ID: it.CallID, Name: it.Name, Arguments: json.RawMessage(it.Arguments)})
		case it.Type == "function_call_output":
			rec.Messages = append(rec.Messages, provider.Message{Role: provider.RoleTool, ToolCallID: it.CallID, Text: it.Output})
		case it.Type == "message" || (it.Type == "" && it.Role != ""):
			if it.Role == "system" || it.Role == "developer" {
				rec.System += contentText(it.Content)
				continue
			}
			rec.Messages = append(rec.Messages, provider.Message{Role: it.Role, Text: contentText(it.Content)})
		default:
			rec.NativeItems = append(rec.NativeItems, rawItem)
		}
	}
	for _, t := range body.Tools {
		rec.Tools = append(rec.Tools, t.Name)
	}
	return rec
}
