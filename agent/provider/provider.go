// Package provider holds SOBA's model clients: one Provider per wire format
// (OpenAI-compatible Chat Completions, OpenAI's Responses API, Anthropic
// Messages, Ollama's native /api/chat), each streaming one inference at a time and reporting failures
// as typed errors the agent can act on (overflow recovery R-G9, retry, a
// clear message naming the endpoint).
package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/soba-agent/soba-lsp/configschema"
)

// Provider names accepted by New and returned by Provider.Name: the values
// of the configuration's model.provider.
const (
	NameOpenAI          = configschema.ProviderOpenAI
	NameOpenAIResponses = configschema.ProviderOpenAIResponses
	NameAnthropic       = configschema.ProviderAnthropic
	NameOllama          = configschema.ProviderOllama
)

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Event kinds.
const (
	// EventText carries a piece of the answer's text in Delta, as it streams.
	EventText = "text"
	// EventToolCall carries one complete tool call. Tool calls are announced
	// only after the stream ended properly, in the order of the Response, so
	// a call announced by an event is always one the Response returns.
	EventToolCall = "tool_call"
	// EventThinking carries a piece of the model's reasoning in Delta, kept
	// apart from the answer (R-C9) whichever way the server sent it. With
	// Moved set, Delta is the answer text streamed so far in this
	// inference, which turned out to be thinking: the server's template had
	// opened the block and only its closing tag came. A front end moves what
	// it showed as the answer into the thinking.
	EventThinking = "thinking"
)

// Stop reasons, normalised across the wire formats. A provider's own value
// that has no equivalent here is passed through unchanged.
const (
	StopEnd       = "end"        // the model finished its answer
	StopToolCalls = "tool_calls" // the model asks for tool calls
	StopLength    = "length"     // the output hit MaxOutputTokens
)

// Provider sends inferences to one model server. It is safe for concurrent
// use (a turn and a summary may share one).
type Provider interface {
	// Stream sends one inference and streams events to onEvent (which may be
	// nil) on the calling goroutine; it returns the final Response or a
	// typed error (*OverflowError, *RateLimitError, *AuthError,
	// *BadRequestError, *TransportError, *StreamError).
	Stream(ctx context.Context, req Request, onEvent func(Event)) (Response, error)
	// Name is the wire format: "openai", "openai-responses", "anthropic" or
	// "ollama".
	Name() string
}

// Request is one inference.
type Request struct {
	// Model overrides the configured model when set.
	Model    string
	System   string
	Messages []Message
	Tools    []Tool
	// MaxOutputTokens overrides the configured output limit when > 0.
	MaxOutputTokens int
	// ContextWindow overrides the configured window when > 0; Ollama gets it
	// as options.num_ctx.
	ContextWindow int
	Temperature   *float64
	// CacheKey names the session the request belongs to, the same for all
	// its requests: OpenAI's API routes requests with one prompt_cache_key
	// to the same prompt cache. It is sent only where the server is known
	// to accept it (api.openai.com); "" sends nothing.
	CacheKey string
	// ExpectedPromptTokens is the caller's estimate of the prompt size. When
	// > 0 and the server reports a prompt far smaller (below half and more
	// than 1000 tokens short), the server dropped part of the prompt and the
	// inference fails with an *OverflowError (silent truncation).
	ExpectedPromptTokens int
}

// Message is one item of the conversation.
type Message struct {
	Role string `json:"role"` // user | assistant | tool
	Text string `json:"text,omitempty"`
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// ToolCallID and ToolName link a tool message to its call.
	ToolCallID string `json:"toolCallId,omitempty"`
	ToolName   string `json:"toolName,omitempty"`
	// IsError marks a tool result that reports a failure.
	IsError bool `json:"isError,omitempty"`
	// Native holds items of the provider's own format that precede this
	// message, sent verbatim: the encrypted reasoning of an assistant answer
	// (Response.Native), or a native continuation in place of the capsule's
	// text. A caller sets it only for the provider and model that made the
	// items; other providers ignore it.
	Native json.RawMessage `json:"native,omitempty"`
	// StablePrefix marks the end of the part of the conversation that the
	// session's next requests repeat unchanged until the next compaction
	// (the capsule): Anthropic requests put a cache breakpoint there.
	StablePrefix bool `json:"stablePrefix,omitempty"`
}

// ToolCall is one call the model asked for. Arguments is always valid JSON:
// an object as the model wrote it, "{}" when it wrote nothing, or — when the
// model wrote something that is not JSON — that text as a JSON string, so
// decoding it into the tool's parameters fails and the tool can say so.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Tool is a tool the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments; nil means no arguments.
	Parameters json.RawMessage
}

// Event is one streamed item.
type Event struct {
	Kind     string // EventText, EventThinking or EventToolCall
	Delta    string
	Moved    bool // EventThinking: Delta was streamed as answer text before
	ToolCall *ToolCall
}

// Response is a completed inference.
type Response struct {
	// Text is the answer alone: what the chat shows, the transcript keeps
	// as the assistant's text and the next request sends (R-C9).
	Text string
	// Thinking is the model's reasoning, however the server sent it
	// (thinking blocks in the content, reasoning_content, reasoning,
	// Ollama's thinking, Anthropic's thinking blocks); "" when none.
	Thinking   string
	ToolCalls  []ToolCall
	StopReason string
	// Usage is nil when the server reported none.
	Usage *Usage
	Model string
	// Native is what the answer carried in the provider's own format that
	// the next requests must send back with it (a JSON array of items: the
	// Responses API's encrypted reasoning); nil when none.
	Native json.RawMessage
}

// Usage is the token accounting of one inference, normalised so that
// InputTokens is the whole prompt (cached and cache-written tokens included)
// whatever the wire format.
type Usage struct {
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
	// CachedTokens is the part of InputTokens served from a prompt cache.
	CachedTokens int `json:"cachedTokens"`
}

// Config selects and configures a Provider.
type Config struct {
	// Provider is "openai", "openai-responses", "anthropic" or "ollama".
	Provider string
	// BaseURL is the server root: e.g. http://127.0.0.1:8080/v1 for an
	// OpenAI-compatible server (requests go to BaseURL + "/chat/completions"),
	// https://api.openai.com/v1 for the Responses API (BaseURL + "/responses"),
	// https://api.anthropic.com (BaseURL + "/v1/messages"),
	// http://127.0.0.1:11434 (BaseURL + "/api/chat"). Empty uses the
	// provider's default.
	BaseURL string
	Model   string
	// APIKeyEnv names the environment variable holding the API key; the key
	// is read once by New. Empty or unset means no key (local servers).
	APIKeyEnv       string
	ContextWindow   int
	MaxOutputTokens int

	// HTTPClient sends the requests; nil uses a client without an overall
	// timeout (streams last as long as the model writes; ctx bounds them).
	HTTPClient *http.Client
	// Retry is the policy for rate-limit and overload answers; zero values
	// take the defaults of DefaultRetry.
	Retry Retry
}

// Default base URLs.
const (
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
	DefaultOllamaBaseURL    = configschema.OllamaBaseURL
)

// New builds the Provider named by cfg.Provider.
func New(cfg Config) (Provider, error) {
	if cfg.ContextWindow < 0 {
		return nil, fmt.Errorf("provider: contextWindow is negative (%d)", cfg.ContextWindow)
	}
	if cfg.MaxOutputTokens < 0 {
		return nil, fmt.Errorf("provider: maxOutputTokens is negative (%d)", cfg.MaxOutputTokens)
	}
	base := strings.TrimRight(strings.TrimSpace(cfg.BaseURL), "/")
	if base != "" && !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("provider: baseURL %q is not an http:// or https:// URL", cfg.BaseURL)
	}
	key := ""
	if cfg.APIKeyEnv != "" {
		key = strings.TrimSpace(os.Getenv(cfg.APIKeyEnv))
	}
	c := client{
		base:            base,
		model:           cfg.Model,
		apiKey:          key,
		contextWindow:   cfg.ContextWindow,
		maxOutputTokens: cfg.MaxOutputTokens,
		http:            cfg.HTTPClient,
		retry:           cfg.Retry.withDefaults(),
	}
	if c.http == nil {
		c.http = &http.Client{Transport: defaultTransport}
	}
	switch strings.ToLower(strings.TrimSpace(cfg.Provider)) {
	case NameOpenAI:
		if c.base == "" {
			c.base = DefaultOpenAIBaseURL
		}
		c.name = NameOpenAI
		return &openAI{c}, nil
	case NameOpenAIResponses:
		if c.base == "" {
			c.base = DefaultOpenAIBaseURL
		}
		c.name = NameOpenAIResponses
		return &responses{client: c}, nil
	case NameAnthropic:
		if c.base == "" {
			c.base = DefaultAnthropicBaseURL
		}
		c.name = NameAnthropic
		return &anthropic{c}, nil
	case NameOllama:
		if c.base == "" {
			c.base = DefaultOllamaBaseURL
		}
		c.name = NameOllama
		return &ollama{c}, nil
	case "":
		return nil, errors.New("provider: no provider named (want openai, openai-responses, anthropic or ollama)")
	default:
		return nil, fmt.Errorf("provider: unknown provider %q (want openai, openai-responses, anthropic or ollama)", cfg.Provider)
	}
}

// defaultTransport is a clone of http.DefaultTransport (dial timeout 30s)
// with no header timeout: a local server may take minutes of prefill on a
// large prompt before its first byte, and the caller's ctx bounds the wait.
var defaultTransport http.RoundTripper = http.DefaultTransport.(*http.Transport).Clone()

// client is what the three wire formats share.
type client struct {
	name            string
	base            string
	model           string
	apiKey          string
	contextWindow   int
	maxOutputTokens int
	http            *http.Client
	retry           Retry
}

func (c *client) Name() string { return c.name }

// modelFor is the request's model, else the configured one.
func (c *client) modelFor(req Request) string {
	if req.Model != "" {
		return req.Model
	}
	return c.model
}

// isOpenAI says whether the server is OpenAI's own API, which accepts
// fields the OpenAI-compatible servers may not know.
func (c *client) isOpenAI() bool {
	u, err := url.Parse(c.base)
	return err == nil && u.Hostname() == "api.openai.com"
}

// maxCacheKey is the longest prompt_cache_key sent as is; a longer key is
// replaced by its digest.
const maxCacheKey = 64

// cacheKeyFor is the prompt_cache_key of req: its CacheKey, for OpenAI's
// own API only. Local servers (llama.cpp, vLLM, Ollama) reuse their KV
// cache for a byte-identical prefix without a key, and a strict
// OpenAI-compatible server may refuse a field it does not know.
func (c *client) cacheKeyFor(req Request) string {
	if req.CacheKey == "" || !c.isOpenAI() {
		return ""
	}
	if len(req.CacheKey) > maxCacheKey {
		sum := sha256.Sum256([]byte(req.CacheKey))
		return "soba-" + hex.EncodeToString(sum[:16])
	}
	return req.CacheKey
}

func (c *client) maxOutputFor(req Request) int {
	if req.MaxOutputTokens > 0 {
		return req.MaxOutputTokens
	}
	return c.maxOutputTokens
}

func (c *client) contextWindowFor(req Request) int {
	if req.ContextWindow > 0 {
		return req.ContextWindow
	}
	return c.contextWindow
}

// argumentsJSON makes a tool call's raw arguments text valid JSON (see
// ToolCall).
func argumentsJSON(raw string) json.RawMessage {
	s := strings.TrimSpace(raw)
	if s == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(raw)
	return json.RawMessage(b)
}

// emitToolCalls announces the completed calls, in order.
func emitToolCalls(onEvent func(Event), calls []ToolCall) {
	if onEvent == nil {
		return
	}
	for i := range calls {
		tc := calls[i]
		onEvent(Event{Kind: EventToolCall, ToolCall: &tc})
	}
}

// Compactor is a Provider with a native compaction (SPEC §11, R-N1): it
// turns a conversation into the provider's own items that stand for it in
// later requests to the same model.
type Compactor interface {
	// Compact asks the provider to compact req's conversation (System is
	// the instructions, Messages the history, with their Native items) and
	// returns the items that replace it.
	Compact(ctx context.Context, req Request) (Compacted, error)
}

// MinCompactTokens is the smallest prompt (in tokens) the named provider's
// native compaction works on: Anthropic compacts only above its minimum
// trigger. 0 means no minimum.
func MinCompactTokens(provider string) int {
	if provider == NameAnthropic {
		return AnthropicMinCompactTokens
	}
	return 0
}

// Compacted is a native compaction's result.
type Compacted struct {
	// Items is a JSON array of the provider's items, to be sent verbatim in
	// place of the compacted history (Message.Native).
	Items json.RawMessage
	// Tokens is the items' size as the provider reported it, 0 when unsaid.
	Tokens int
	// Usage is the compaction request's own usage, nil when unsaid.
	Usage *Usage
	Model string
}
