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
//	  {"text": "partial", "cut": true}]}
//
// Durations are Go duration strings. Unknown keys are errors.
type Script struct {
	Format     string  `json:"format"`
	RepeatLast bool    `json:"repeatLast"`
	Replies    []Reply `json:"-"`
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
	if s.Format != FormatOpenAI && s.Format != FormatAnthropic {
		return Script{}, fmt.Errorf("script: format %q (want openai or anthropic)", s.Format)
	}
	for i, rr := range raw.Replies {
		var sr scriptReply
		d := json.NewDecoder(bytes.NewReader(rr))
		d.DisallowUnknownFields()
		if err := d.Decode(&sr); err != nil {
			return Script{}, fmt.Errorf("script: reply %d: %w", i, err)
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
				return Script{}, fmt.Errorf("script: reply %d: %s %q is not a duration like \"250ms\"", i, f.name, f.src)
			}
			*f.dst = v
		}
		for j, tc := range sr.ToolCalls {
			if tc.Name == "" {
				return Script{}, fmt.Errorf("script: reply %d: tool call %d has no name", i, j)
			}
			if len(tc.Arguments) == 0 {
				sr.ToolCalls[j].Arguments = json.RawMessage("{}")
			}
		}
		s.Replies = append(s.Replies, sr.Reply)
	}
	return s, nil
}
