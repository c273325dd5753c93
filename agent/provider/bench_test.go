package provider

import (
	"bytes"
	"context"
	"fmt"
	"testing"
)

// longOpenAIStream is an SSE stream of n text chunks, then finish, usage
// and [DONE], shaped like OpenAI's.
func longOpenAIStream(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{"content":"token%d "},"logprobs":null,"finish_reason":null}],"usage":null}`+"\n\n", i)
	}
	b.WriteString(`data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n")
	b.WriteString(`data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

func longOpenAIToolStream(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"write_file","arguments":""}}]}}]}` + "\n\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"%s"}}]}}]}`+"\n\n", map[bool]string{true: `{\"c\":\"`, false: `abcdefgh`}[i == 0])
	}
	b.WriteString(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"}"}}]},"finish_reason":"tool_calls"}]}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

func longAnthropicStream(n int) []byte {
	var b bytes.Buffer
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude\",\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"token%d \"}}\n\n", i)
	}
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	b.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":15}}\n\n")
	b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return b.Bytes()
}

func longOllamaStream(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"model":"qwen2.5-coder:7b","created_at":"2025-01-01T00:00:00.000Z","message":{"role":"assistant","content":"token%d "},"done":false}`+"\n", i)
	}
	b.WriteString(`{"model":"qwen2.5-coder:7b","created_at":"2025-01-01T00:00:00.1Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":26,"eval_count":298}` + "\n")
	return b.Bytes()
}

// BenchmarkParseStream measures the stream parsers alone (no HTTP) on a
// 10,000-chunk answer; bytes/s is stream bytes parsed.
func BenchmarkParseStream(b *testing.B) {
	const n = 10000
	cases := []struct {
		name string
		data []byte
		read func(context.Context, *bytes.Reader) error
	}{
		{"openai_text", longOpenAIStream(n), func(ctx context.Context, r *bytes.Reader) error {
			_, err := (&openAI{client{name: NameOpenAI}}).read(ctx, r, func(Event) {})
			return err
		}},
		{"openai_tool_args", longOpenAIToolStream(n), func(ctx context.Context, r *bytes.Reader) error {
			_, err := (&openAI{client{name: NameOpenAI}}).read(ctx, r, func(Event) {})
			return err
		}},
		{"anthropic_text", longAnthropicStream(n), func(ctx context.Context, r *bytes.Reader) error {
			_, err := (&anthropic{client{name: NameAnthropic}}).read(ctx, r, func(Event) {})
			return err
		}},
		{"ollama_text", longOllamaStream(n), func(ctx context.Context, r *bytes.Reader) error {
			_, err := (&ollama{client{name: NameOllama}}).read(ctx, r, func(Event) {})
			return err
		}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			b.SetBytes(int64(len(tc.data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := tc.read(ctx, bytes.NewReader(tc.data)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "chunks/s")
		})
	}
}

// BenchmarkStreamOverHTTP is one whole inference against a loopback server
// streaming the 10,000-chunk OpenAI answer.
func BenchmarkStreamOverHTTP(b *testing.B) {
	data := longOpenAIStream(10000)
	srv := newBenchServer(b, data)
	p, err := New(Config{Provider: NameOpenAI, BaseURL: srv + "/v1"})
	if err != nil {
		b.Fatal(err)
	}
	req := userReq("x")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Stream(context.Background(), req, nil); err != nil {
			b.Fatal(err)
		}
	}
}
