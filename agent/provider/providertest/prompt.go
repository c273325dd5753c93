package providertest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
)

// The prompt as a server caches it: a request body cut into items in the
// order the server reads them (tools, system, then each message, or each
// content block for Anthropic), each item the bytes as sent. A request
// reuses the cache of an earlier one for the items they share from the
// start, so a test can check that each request extends the one before it
// (Received.PromptItems) and the fake can report cached tokens as a real
// server would.

// anthropicMarker is a cache breakpoint as a client writes it; the cache
// key is the content, not the marker, so it is left out of an item.
var anthropicMarkers = [][]byte{[]byte(`,"cache_control":{"type":"ephemeral"}`), []byte(`"cache_control":{"type":"ephemeral"},`)}

func stripMarkers(raw []byte) []byte {
	for _, m := range anthropicMarkers {
		raw = bytes.ReplaceAll(raw, m, nil)
	}
	return raw
}

// anthropicPrompt cuts a Messages request into items and lists its cache
// breakpoints: the number of items each one ends (a prefix length), with
// where it is, and the markers that are not {"type":"ephemeral"}.
func anthropicPrompt(raw []byte) (items []string, ends []int, where []string, bad []string, err error) {
	var body struct {
		System   json.RawMessage   `json:"system"`
		Tools    []json.RawMessage `json:"tools"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, nil, nil, nil, err
	}
	add := func(prefix string, item json.RawMessage, loc string) {
		var probe struct {
			CacheControl json.RawMessage `json:"cache_control"`
		}
		if len(item) > 0 && item[0] == '{' && json.Unmarshal(item, &probe) == nil && len(probe.CacheControl) > 0 {
			if string(probe.CacheControl) != `{"type":"ephemeral"}` {
				bad = append(bad, loc+": "+string(probe.CacheControl))
			}
			ends = append(ends, len(items)+1)
			where = append(where, loc)
		}
		items = append(items, prefix+string(stripMarkers(item)))
	}
	for i, t := range body.Tools {
		add("tool:", t, fmt.Sprintf("tools[%d]", i))
	}
	var blocks []json.RawMessage
	if len(body.System) > 0 && body.System[0] == '[' {
		if err := json.Unmarshal(body.System, &blocks); err != nil {
			return nil, nil, nil, nil, err
		}
		for i, b := range blocks {
			add("system:", b, fmt.Sprintf("system[%d]", i))
		}
	} else if len(body.System) > 0 {
		add("system:", body.System, "system")
	}
	for i, m := range body.Messages {
		if len(m.Content) > 0 && m.Content[0] == '[' {
			blocks = nil
			if err := json.Unmarshal(m.Content, &blocks); err != nil {
				return nil, nil, nil, nil, err
			}
			for j, b := range blocks {
				add(m.Role+":", b, fmt.Sprintf("messages[%d].content[%d]", i, j))
			}
			continue
		}
		add(m.Role+":", m.Content, fmt.Sprintf("messages[%d]", i))
	}
	return items, ends, where, bad, nil
}

// openAIPrompt cuts a Chat Completions or Ollama request (tools, then
// messages) or a Responses request (instructions, tools, then input items)
// into items.
func openAIPrompt(format string, raw []byte) ([]string, error) {
	var body struct {
		Instructions json.RawMessage   `json:"instructions"`
		Tools        []json.RawMessage `json:"tools"`
		Messages     []json.RawMessage `json:"messages"`
		Input        []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, err
	}
	var items []string
	if format == FormatResponses && len(body.Instructions) > 0 {
		items = append(items, "instructions:"+string(body.Instructions))
	}
	for _, t := range body.Tools {
		items = append(items, "tool:"+string(t))
	}
	for _, m := range body.Messages {
		items = append(items, "message:"+string(m))
	}
	for _, m := range body.Input {
		items = append(items, "input:"+string(m))
	}
	return items, nil
}

// promptTokens is the fake's token count of items (4 bytes a token).
func promptTokens(items []string) int {
	n := 0
	for _, it := range items {
		n += len(it)
	}
	return n / 4
}

func prefixKey(items []string) [32]byte {
	h := sha256.New()
	for _, it := range items {
		fmt.Fprintf(h, "%d:%s", len(it), it)
	}
	var k [32]byte
	copy(k[:], h.Sum(nil))
	return k
}

// promptCache is the fake's prompt cache. OpenAI caches automatically:
// every prefix of a request of at least 1024 tokens, read back in steps of
// 128 tokens. Anthropic caches only the prefixes that end at a breakpoint,
// and a later request reads the longest of them that it repeats.
type promptCache struct {
	prefixes map[[32]byte]int // prefix → its tokens
	requests [][]string       // earlier prompts (automatic caching)
}

// ollama is the part of a prompt the server still holds in its KV cache:
// the items it shares from the start with the request before it (one
// model, one slot), however short.
func (c *promptCache) ollama(items []string) int {
	n := 0
	if k := len(c.requests); k > 0 {
		prev := c.requests[k-1]
		for n < len(prev) && n < len(items) && prev[n] == items[n] {
			n++
		}
	}
	c.requests = append(c.requests, items)
	return promptTokens(items[:n])
}

// openAIUsage is the cached part of a prompt of items under automatic
// prefix caching, and remembers the prompt.
func (c *promptCache) openAI(items []string) int {
	best := 0
	for _, prev := range c.requests {
		n := 0
		for n < len(prev) && n < len(items) && prev[n] == items[n] {
			n++
		}
		best = max(best, promptTokens(items[:n]))
	}
	c.requests = append(c.requests, items)
	if best < 1024 {
		return 0
	}
	return best - best%128
}

// anthropicLookback is how many blocks before a breakpoint the API looks
// for an earlier cached prefix.
const anthropicLookback = 20

// anthropic is the cache read and write of a prompt whose breakpoints end
// the given prefixes: it reads the longest cached prefix ending at one of
// them and writes the rest up to the last one.
func (c *promptCache) anthropic(items []string, ends []int) (read, write int) {
	if c.prefixes == nil {
		c.prefixes = map[[32]byte]int{}
	}
	for _, e := range ends {
		for k := e; k > 0 && k > e-anthropicLookback; k-- {
			if t, ok := c.prefixes[prefixKey(items[:k])]; ok {
				read = max(read, t)
				break
			}
		}
	}
	if len(ends) > 0 {
		last := ends[len(ends)-1]
		write = max(0, promptTokens(items[:last])-read)
	}
	for _, e := range ends {
		c.prefixes[prefixKey(items[:e])] = promptTokens(items[:e])
	}
	return read, write
}
