package provider

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestThinkingKeptApartFromTheAnswer_RC9 replays each way a server sends
// a model's thinking: the answer alone is the response's text and the
// streamed text events, the thinking is apart, and the events say the same.
func TestThinkingKeptApartFromTheAnswer_RC9(t *testing.T) {
	tests := []struct {
		name, provider, file string
		answer, thinking     string
		moved                bool // the thinking was first streamed as answer text
		calls                int
	}{
		{"llama.cpp reasoning_content with a tool call", NameOpenAI, "llamacpp_reasoning_content_tool.sse", "", "We need to read go.mod first.", false, 1},
		{"DeepSeek reasoning_content", NameOpenAI, "deepseek_reasoning_content.sse", "9.8 is greater.", "9.11 vs 9.8: compare tenths, 1 < 8.", false, 0},
		{"vLLM and OpenRouter reasoning", NameOpenAI, "vllm_reasoning.sse", "Hello there!", "The user greets me.", false, 0},
		{"<think> split across chunks", NameOpenAI, "llamacpp_think_tags_split.sse", "Hello! I am <think> aware.", "\nThe user wants a greeting. Draft: hi", false, 0},
		{"<thinking> tags", NameOpenAI, "thinking_tags.sse", "Done.", "Plan: answer briefly.", false, 0},
		{"opening tag in the template, lone </think>", NameOpenAI, "llamacpp_open_tag_missing.sse", "Hi! How can I help?", "Hmm, the user just said \"hi\". Keep it simple.\n", true, 0},
		{"Ollama thinking", NameOllama, "ollama_thinking.ndjson", "Hello!", "Okay, the user says hi.", false, 0},
		{"Anthropic thinking blocks", NameAnthropic, "anthropic_thinking_tool_use.sse", "Reading it.", "I should read go.mod.", false, 1},
		{"Responses reasoning text", NameOpenAIResponses, "responses_reasoning_summary.sse", "Hello!", "User greets; reply politely.", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWire(t, answer{file: "reasoning/" + tt.file})
			p := newFor(t, tt.provider, baseFor(tt.provider, w), nil)
			var text, thinking strings.Builder
			moved := false
			resp, err := p.Stream(context.Background(), userReq("hi"), func(e Event) {
				switch e.Kind {
				case EventText:
					text.WriteString(e.Delta)
				case EventThinking:
					if e.Moved {
						moved = true
						// A front end takes back what it showed as the answer.
						if !strings.HasPrefix(e.Delta, text.String()) {
							t.Errorf("moved %q does not start with the answer streamed so far %q", e.Delta, text.String())
						}
						text.Reset()
					}
					thinking.WriteString(e.Delta)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != tt.answer {
				t.Errorf("Text = %q, want the answer alone %q", resp.Text, tt.answer)
			}
			if resp.Thinking != tt.thinking {
				t.Errorf("Thinking = %q, want %q", resp.Thinking, tt.thinking)
			}
			if text.String() != tt.answer {
				t.Errorf("text events = %q, want %q", text.String(), tt.answer)
			}
			if thinking.String() != tt.thinking {
				t.Errorf("thinking events = %q, want %q", thinking.String(), tt.thinking)
			}
			if moved != tt.moved {
				t.Errorf("moved = %v, want %v", moved, tt.moved)
			}
			if len(resp.ToolCalls) != tt.calls {
				t.Errorf("%d tool calls, want %d", len(resp.ToolCalls), tt.calls)
			}
		})
	}
}

// TestThinkSplitterAnyChunking_RC9 feeds the same content cut at every
// byte: the split never depends on where the server cut its chunks.
func TestThinkSplitterAnyChunking_RC9(t *testing.T) {
	tests := []struct{ content, answer, thinking string }{
		{"<think>a</think>\n\nB", "B", "a"},
		{"  <thinking>x y</thinking>Z <think>kept</think>", "Z <think>kept</think>", "x y"},
		{"plan</think>answer", "answer", "plan"},
		{"no tags at all, a < b", "no tags at all, a < b", ""},
		{"<think>never closed", "", "never closed"},
		{"<thi", "<thi", ""},
		{"ends with </", "ends with </", ""},
		{"<think>a</think><think>b</think>c", "c", "ab"},
		{"answer first, then </think> in prose", "in prose", "answer first, then "},
	}
	for _, tt := range tests {
		for cut := 0; cut <= len(tt.content); cut++ {
			var s thinkSplitter
			var events strings.Builder
			s.onAnswer = func(x string) { events.WriteString(x) }
			s.onMoved = func(string) { events.Reset() }
			s.feed(tt.content[:cut])
			s.feed(tt.content[cut:])
			s.finish()
			if s.answer.String() != tt.answer || s.thinking.String() != tt.thinking || events.String() != tt.answer {
				t.Errorf("%q cut at %d: answer %q (events %q), thinking %q; want %q, %q", tt.content, cut, s.answer.String(), events.String(), s.thinking.String(), tt.answer, tt.thinking)
			}
		}
	}
}

// TestThinkingSentBackOnlyWhereRequired_RC9: the next request carries the
// answer alone; DeepSeek's reasoning_content goes back only with the
// tool-call message it came with (the API refuses the follow-up without
// it), Anthropic's thinking blocks go back verbatim with their signature
// before the tool_use, and thinking from tags or Ollama never goes back.
func TestThinkingSentBackOnlyWhereRequired_RC9(t *testing.T) {
	tests := []struct {
		name, provider, file string
		check                func(t *testing.T, body map[string]any)
	}{
		{"reasoning_content with tool calls", NameOpenAI, "llamacpp_reasoning_content_tool.sse", func(t *testing.T, body map[string]any) {
			m := body["messages"].([]any)[2].(map[string]any)
			if m["reasoning_content"] != "We need to read go.mod first." {
				t.Errorf("assistant message %v: want reasoning_content sent back with its tool call", m)
			}
		}},
		{"reasoning_content without tool calls", NameOpenAI, "deepseek_reasoning_content.sse", func(t *testing.T, body map[string]any) {
			m := body["messages"].([]any)[2].(map[string]any)
			if _, ok := m["reasoning_content"]; ok || m["content"] != "9.8 is greater." {
				t.Errorf("assistant message %v: want the answer alone", m)
			}
		}},
		{"think tags", NameOpenAI, "llamacpp_think_tags_split.sse", func(t *testing.T, body map[string]any) {
			m := body["messages"].([]any)[2].(map[string]any)
			if _, ok := m["reasoning_content"]; ok || m["content"] != "Hello! I am <think> aware." {
				t.Errorf("assistant message %v: want the answer alone", m)
			}
		}},
		{"Ollama thinking", NameOllama, "ollama_thinking.ndjson", func(t *testing.T, body map[string]any) {
			m := body["messages"].([]any)[2].(map[string]any)
			if _, ok := m["thinking"]; ok || m["content"] != "Hello!" {
				t.Errorf("assistant message %v: want the answer alone", m)
			}
		}},
		{"Anthropic thinking blocks", NameAnthropic, "anthropic_thinking_tool_use.sse", func(t *testing.T, body map[string]any) {
			content := body["messages"].([]any)[1].(map[string]any)["content"].([]any)
			var types []string
			for _, b := range content {
				types = append(types, b.(map[string]any)["type"].(string))
			}
			if strings.Join(types, ",") != "thinking,redacted_thinking,text,tool_use" {
				t.Fatalf("assistant blocks %v, want thinking,redacted_thinking,text,tool_use", types)
			}
			th := content[0].(map[string]any)
			if th["signature"] != "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds" || th["thinking"] != "I should read go.mod." {
				t.Errorf("thinking block %v: want it verbatim with its signature", th)
			}
			if content[2].(map[string]any)["text"] != "Reading it." {
				t.Errorf("text block %v: want the answer alone", content[2])
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWire(t, answer{file: "reasoning/" + tt.file})
			p := newFor(t, tt.provider, baseFor(tt.provider, w), nil)
			resp, err := p.Stream(context.Background(), userReq("hi"), nil)
			if err != nil {
				t.Fatal(err)
			}
			// The agent sends an answer's native items back to the same
			// provider and model only; here that is this one.
			msgs := []Message{{Role: RoleUser, Text: "hi"}, {Role: RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls, Native: resp.Native}}
			for _, c := range resp.ToolCalls {
				msgs = append(msgs, Message{Role: RoleTool, ToolCallID: c.ID, ToolName: c.Name, Text: "module x"})
			}
			msgs = append(msgs, Message{Role: RoleUser, Text: "and?"})
			if _, err := p.Stream(context.Background(), Request{System: "s", Messages: msgs}, nil); err != nil {
				t.Fatal(err)
			}
			body := w.body(t, 1)
			raw, _ := json.Marshal(body)
			for _, leak := range []string{"<think>\n", "</think>", "Keep it simple", "Okay, the user"} {
				if strings.Contains(string(raw), leak) {
					t.Errorf("the next request carries thinking %q: %s", leak, raw)
				}
			}
			tt.check(t, body)
		})
	}
}
