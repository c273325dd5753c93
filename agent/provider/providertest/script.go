package providertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Script is a JSON script file for the fakemodel program:
//
//	{"format": "openai", "repeatLast": false, "replies": [
//	  {"text": "Hello", "delay": "200ms", "chunkDelay": "5ms",
//	   "usage": {"inputTokens": 1200, "outputTokens": 40}},
//	  {"toolCalls": [{"id": "c1", "name": "read_file", "arguments": {"path": "go.mod"}}]},
//	  {"status": 400, "body": "{\"error\":{\"code\":\"context_length_exceeded\",\"message\":\"...\"}}"},
//	  {"text": "partial", "cut": true}],
//	 "compacts": [{"compaction": "gAAAA…"}]}
//
// Format is openai, openai-responses or anthropic; compacts (Responses
// only) answer POST /v1/responses/compact in order.
// Durations are Go duration strings. Unknown keys are errors.
type Script struct {
	Format     string  `json:"format"`
	RepeatLast bool    `json:"repeatLast"`
	Replies    []Reply `json:"-"`
	Compacts   []Reply `json:"-"`
}

// scriptReply is a Reply as JSON, with durations as strings.
type scriptReply struct {
	Reply
	Delay      string `json:"delay,omitempty"`
	ChunkDelay string `json:"chunkDelay,omitempty"`
}

// LoadScript reads a Script; Format defaults to openai.
func LoadScript(r io.Reader) (Script, error) {
	var raw struct {
		Format     string            `json:"format"`
		RepeatLast bool              `json:"repeatLast"`
		Replies    []json.RawMessage `json:"replies"`
		Compacts   []json.RawMessage `json:"compacts"`
	}
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return Script{}, fmt.Errorf("script: %w", err)
	}
	s := Script{Format: raw.Format, RepeatLast: raw.RepeatLast}
	if s.Format == "" {
		s.Format = FormatOpenAI
	}
	if s.Format != FormatOpenAI && s.Format != FormatAnthropic && s.Format != FormatResponses && s.Format != FormatOllama {
		return Script{}, fmt.Errorf("script: format %q (want openai, openai-responses, anthropic or ollama)", s.Format)
	}
	if len(raw.Compacts) > 0 && s.Format != FormatResponses {
		return Script{}, fmt.Errorf("script: compacts need format %q", FormatResponses)
	}
	var err error
	if s.Replies, err = loadReplies("reply", raw.Replies); err != nil {
		return Script{}, err
	}
	if s.Compacts, err = loadReplies("compact", raw.Compacts); err != nil {
		return Script{}, err
	}
	return s, nil
}

func loadReplies(what string, raws []json.RawMessage) ([]Reply, error) {
	var out []Reply
	for i, rr := range raws {
		var sr scriptReply
		d := json.NewDecoder(bytes.NewReader(rr))
		d.DisallowUnknownFields()
		if err := d.Decode(&sr); err != nil {
			return nil, fmt.Errorf("script: %s %d: %w", what, i, err)
		}
		for _, f := range []struct {
			name string
			src  string
			dst  *time.Duration
		}{{"delay", sr.Delay, &sr.Reply.Delay}, {"chunkDelay", sr.ChunkDelay, &sr.Reply.ChunkDelay}} {
			if f.src == "" {
				continue
			}
			v, err := time.ParseDuration(f.src)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("script: %s %d: %s %q is not a duration like \"250ms\"", what, i, f.name, f.src)
			}
			*f.dst = v
		}
		for j, tc := range sr.ToolCalls {
			if tc.Name == "" {
				return nil, fmt.Errorf("script: %s %d: tool call %d has no name", what, i, j)
			}
			if len(tc.Arguments) == 0 {
				sr.ToolCalls[j].Arguments = json.RawMessage("{}")
			}
		}
		out = append(out, sr.Reply)
	}
	return out, nil
}
