package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/soba-agent/soba-lsp/internal/lazyregexp"
)

// ErrorKind is what an error answer means for the agent, whichever server
// sent it and however it was worded (docs/providers.md has the table).
type ErrorKind string

const (
	// KindOverflowPrompt: the prompt does not fit the window; the agent
	// compacts once and retries once (R-G9).
	KindOverflowPrompt ErrorKind = "overflow_prompt"
	// KindOverflowOutput: the prompt fits but prompt + requested output
	// does not; the agent retries once with the output budget lowered.
	KindOverflowOutput ErrorKind = "overflow_output"
	// KindRateLimit: a limit of the account per minute or day; retried
	// with backoff (Retry-After).
	KindRateLimit ErrorKind = "rate_limit"
	// KindOverload: the server is busy or loading; retried like a rate
	// limit.
	KindOverload ErrorKind = "overload"
	// KindQuota: quota, credit or balance used up; never retried.
	KindQuota ErrorKind = "quota"
	// KindOther: anything else (auth, bad request, server error, a cut
	// stream).
	KindOther ErrorKind = "other"
)

// Kind says what err means (KindOther for nil or an unknown error).
func Kind(err error) ErrorKind {
	var (
		of *OverflowError
		rl *RateLimitError
		qe *QuotaError
	)
	switch {
	case errors.As(err, &of):
		if of.FromOutput {
			return KindOverflowOutput
		}
		return KindOverflowPrompt
	case errors.As(err, &rl):
		if rl.Overloaded {
			return KindOverload
		}
		return KindRateLimit
	case errors.As(err, &qe):
		return KindQuota
	}
	return KindOther
}

// errorBody is what an error answer says, from the union of the shapes the
// servers send: OpenAI/llama.cpp/Ollama-/v1 {"error":{...}}, vLLM
// {"object":"error","message":…}, Anthropic {"type":"error","error":{...}},
// Ollama and LM Studio {"error":"…"}, TGI {"error":"…","error_type":"…"},
// Gemini's OpenAI-compatible endpoint [{"error":{...}}] (an array),
// OpenRouter's {"error":{"message":…,"metadata":{"raw":…}}}.
type errorBody struct {
	Message string
	Type    string
	Code    string
	// Status is Google's status word (INVALID_ARGUMENT, RESOURCE_EXHAUSTED).
	Status string
	// Raw is what a gateway (OpenRouter) passes on from the upstream
	// provider in metadata.raw.
	Raw string
	// NPrompt and NCtx are llama.cpp's exceed_context_size_error fields.
	NPrompt int
	NCtx    int
}

// text is everything the body says, lowercase, for the phrase checks.
func (eb errorBody) text() string {
	return strings.ToLower(strings.Join([]string{eb.Message, eb.Type, eb.Code, eb.Status, eb.Raw}, " "))
}

type errorFields struct {
	Message       json.RawMessage `json:"message"`
	Detail        json.RawMessage `json:"detail"` // FastAPI's {"detail": …} (vLLM behind some gateways)
	Type          string          `json:"type"`
	ErrorType     string          `json:"error_type"`
	Code          json.RawMessage `json:"code"`
	Status        json.RawMessage `json:"status"`
	NPromptTokens int             `json:"n_prompt_tokens"`
	NCtx          int             `json:"n_ctx"`
	Metadata      *struct {
		Raw json.RawMessage `json:"raw"`
	} `json:"metadata"`
	Error json.RawMessage `json:"error"`
}

// scalar reads a JSON string as itself and any other value as its JSON
// text (codes are strings at OpenAI and numbers at llama.cpp and vLLM).
func scalar(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// maxBodyDepth bounds the nesting parseErrorBody follows (an error inside
// an error inside an array); hostile input cannot make it recurse further.
const maxBodyDepth = 4

// parseErrorBody reads what it can from an error body; a body that is not
// JSON becomes the message as is (trimmed).
func parseErrorBody(body []byte) errorBody {
	eb, ok := parseErrorJSON(bytes.TrimSpace(body), 0)
	if !ok || eb.Message == "" {
		eb.Message = strings.TrimSpace(string(body))
	}
	return eb
}

func parseErrorJSON(raw []byte, depth int) (errorBody, bool) {
	if depth > maxBodyDepth || len(raw) == 0 {
		return errorBody{}, false
	}
	if raw[0] == '[' {
		// Gemini's OpenAI-compatible endpoint answers with an array of
		// error objects; the first one is the answer.
		var arr []json.RawMessage
		if json.Unmarshal(raw, &arr) != nil || len(arr) == 0 {
			return errorBody{}, false
		}
		return parseErrorJSON(bytes.TrimSpace(arr[0]), depth+1)
	}
	var f errorFields
	if json.Unmarshal(raw, &f) != nil {
		return errorBody{}, false
	}
	eb := errorBody{Message: scalar(f.Message), Type: f.Type, Code: scalar(f.Code), Status: scalar(f.Status),
		NPrompt: f.NPromptTokens, NCtx: f.NCtx}
	if eb.Message == "" {
		eb.Message = scalar(f.Detail)
	}
	if f.ErrorType != "" {
		eb.Type = f.ErrorType
	}
	if f.Metadata != nil {
		eb.Raw = scalar(f.Metadata.Raw)
	}
	inner := bytes.TrimSpace(f.Error)
	switch {
	case len(inner) == 0 || string(inner) == "null":
	case inner[0] == '"':
		// Ollama, LM Studio and TGI: "error" is the message itself; TGI's
		// error_type stays.
		eb.Message = scalar(inner)
	default:
		in, ok := parseErrorJSON(inner, depth+1)
		if !ok {
			break
		}
		// The inner object is the error; the outer one only fills what
		// it leaves empty (Anthropic's outer type is just "error").
		if in.Message == "" {
			in.Message = eb.Message
		}
		if in.Type == "" {
			in.Type = eb.Type
		}
		if in.Code == "" {
			in.Code = eb.Code
		}
		if in.Status == "" {
			in.Status = eb.Status
		}
		if in.Raw == "" {
			in.Raw = eb.Raw
		}
		eb = in
	}
	return eb, true
}

// Quota wordings: the account has no quota, credit or balance left.
var (
	quotaCodes   = []string{"insufficient_quota", "insufficient_credits", "credit_limit_reached", "billing_hard_limit_reached"}
	quotaPhrases = []string{
		"insufficient_quota",                  // OpenAI type and code
		"credit balance is too low",           // Anthropic
		"insufficient balance",                // DeepSeek 402
		"insufficient credits",                // OpenRouter 402
		"requires more credits",               // OpenRouter 402 "This request requires more credits"
		"exceeded your current quota",         // OpenAI insufficient_quota message
		"billing hard limit has been reached", // OpenAI billing_hard_limit_reached
	}
)

// Overload wordings: the server is busy or still loading.
var overloadPhrases = []string{
	"overloaded",                  // Anthropic overloaded_error, TGI "Model is overloaded", Gemini 503
	"loading model",               // llama.cpp 503 while the model loads
	"unavailable_error",           // llama.cpp type
	"server is busy",              // DeepSeek 503
	"no available model provider", // OpenRouter 503
}

// Rate-limit wordings: a limit of the account per minute or per day.
var rateLimitPhrases = []string{
	"rate limit", "rate_limit", "rate-limited", "too many requests", "throttl",
	"tokens per min", "requests per min", "tokens per day", "(tpm)", "(rpm)",
	"resource_exhausted", // Gemini 429 (its per-minute quota)
	"resource exhausted",
}

// Overflow wordings, lowercase. Each is a server's answer to a prompt or an
// output budget that does not fit; testdata/errors/ has the bodies and the
// source of each.
var overflowPhrases = []string{
	"context_length_exceeded",                      // OpenAI code, Responses response.failed
	"maximum context length",                       // OpenAI, vLLM, DeepSeek, Mistral, OpenRouter, Ollama /v1
	"exceeds the available context size",           // llama.cpp server
	"exceeds context size",                         // llama.cpp server (request (N tokens) exceeds context size (M tokens))
	"exceed_context_size",                          // llama.cpp type
	"too big compared to kv size",                  // llama.cpp (2024): Input prompt is too big compared to KV size
	"prompt is too long",                           // Anthropic
	"exceed context limit",                         // Anthropic: input length and max_tokens exceed context limit
	"request_too_large",                            // Anthropic 413
	"request exceeds the maximum size",             // Anthropic 413
	"maximum request body size",                    // Google front end 413: Maximum request body size N exceeded
	"exceeds the context window",                   // OpenAI Responses
	"input length exceeds",                         // Ollama
	"input exceeds maximum context",                // Ollama runner
	"exceeds the context length",                   // Ollama, llama runner
	"longer than the context length",               // Ollama (2025): the prompt is longer than the context length currently available
	"exceeded max context length",                  // Ollama runner: prompt too long; exceeded max context length by N tokens
	"context length exceeded",                      // generic
	"context window exceeded",                      // generic
	"context size has been exceeded",               // LM Studio
	"context length of only",                       // LM Studio: model is loaded with context length of only N
	"greater than the context length",              // LM Studio: tokens to keep … is greater than the context length
	"n_keep",                                       // LM Studio: Cannot truncate prompt with n_keep (N) >= n_ctx (M)
	"input is too long for requested model",        // Bedrock and TGI-compatible servers
	"max_new_tokens` must be <=",                   // TGI: `inputs` tokens + `max_new_tokens` must be <= N
	"`inputs` must have less than",                 // TGI
	"too many tokens in the prompt",                // generic
	"prompt too long",                              // Ollama, generic
	"requested more tokens than the context",       // generic
	"is longer than the model's context length",    // vLLM (older)
	"context length is only",                       // vLLM: However, the model's context length is only N tokens
	"longer than the maximum model length",         // vLLM: The decoder prompt (length N) is longer than the maximum model length of M
	"exceeds the maximum number of tokens allowed", // Gemini: The input token count (N) exceeds the maximum number of tokens allowed (M)
	"maximum prompt length is",                     // xAI: This model's maximum prompt length is N but the request contains M tokens
	"exceeded model token limit",                   // Moonshot (Kimi)
	"model max length exceeded",                    // Moonshot (2024)
	"too large for model with",                     // Mistral: Prompt contains N tokens … too large for model with M maximum context length
}

// overflowFigures are the wordings that state figures, with named groups:
// in (the prompt), in2 (a part of it stated apart: functions, tool input),
// out (the requested output), limit (the window). The first match wins, so
// the more specific wordings come first.
var overflowFigures = []*lazyregexp.Regexp{
	// vLLM: 'max_tokens' or 'max_completion_tokens' is too large: 1000. This model's maximum context length is 1000 tokens and your request has 203 input tokens
	lazyregexp.New(`is too large: (?P<out>[\d,]+)\. this model's maximum context length is (?P<limit>[\d,]+) tokens and your request has (?P<in>[\d,]+) input tokens`),
	// vLLM (2025): You passed 40000 input tokens and requested 1024 output tokens. However, the model's context length is only 32768 tokens
	lazyregexp.New(`you passed (?P<in>[\d,]+) input tokens and requested (?P<out>[\d,]+) output tokens\. however, the model's context length is only (?P<limit>[\d,]+)`),
	// OpenAI, vLLM, DeepSeek: maximum context length is L tokens. However, you requested T tokens (I in the messages, F in the functions, and O in the completion)
	lazyregexp.New(`maximum context length is (?P<limit>[\d,]+) tokens[.,] however,? you requested [\d,]+ tokens \((?P<in>[\d,]+) in the messages, (?P<in2>[\d,]+) in the functions, and (?P<out>[\d,]+) in the completion\)`),
	lazyregexp.New(`maximum context length is (?P<limit>[\d,]+) tokens[.,] however,? you requested [\d,]+ tokens \((?P<in>[\d,]+) in (?:the messages|your prompt)[;,] (?P<out>[\d,]+) (?:in|for) the completion\)`),
	// OpenRouter: This endpoint's maximum context length is L tokens. However, you requested about T tokens (a of text input, b of tool input, O in the output)
	lazyregexp.New(`maximum context length is (?P<limit>[\d,]+) tokens\. however, you requested about [\d,]+ tokens \((?P<in>[\d,]+) of text input, (?P<in2>[\d,]+) of tool input, (?P<out>[\d,]+) in the output\)`),
	lazyregexp.New(`maximum context length is (?P<limit>[\d,]+) tokens\. however, you requested about [\d,]+ tokens \((?P<in>[\d,]+) of text input, (?P<out>[\d,]+) in the output\)`),
	// OpenAI, vLLM: … However, your messages resulted in N tokens / your request has N input tokens
	lazyregexp.New(`maximum context length is (?P<limit>[\d,]+) tokens\. however, your (?:messages resulted in|request has) (?P<in>[\d,]+)`),
	// Anthropic
	lazyregexp.New(`exceed context limit: (?P<in>[\d,]+) \+ (?P<out>[\d,]+) > (?P<limit>[\d,]+)`),
	lazyregexp.New(`prompt is too long: (?P<in>[\d,]+) tokens > (?P<limit>[\d,]+)`),
	// TGI
	lazyregexp.New("must be <= (?P<limit>[\\d,]+)\\. given: (?P<in>[\\d,]+) `inputs` tokens and (?P<out>[\\d,]+) `max_new_tokens`"),
	lazyregexp.New("`inputs` must have less than (?P<limit>[\\d,]+) tokens\\. given: (?P<in>[\\d,]+)"),
	// llama.cpp: request (N tokens) exceeds (the available) context size (M tokens)
	lazyregexp.New(`request \((?P<in>[\d,]+) tokens\) exceeds (?:the available )?context size \((?P<limit>[\d,]+) tokens\)`),
	// vLLM
	lazyregexp.New(`(?:decoder prompt \(length|prompt length of) (?P<in>[\d,]+)\)? is longer than the maximum model length of (?P<limit>[\d,]+)`),
	lazyregexp.New(`input prompt \((?P<in>[\d,]+) tokens\) is too long and exceeds limit of (?P<limit>[\d,]+)`),
	// Gemini
	lazyregexp.New(`input token count \((?P<in>[\d,]+)\) exceeds the maximum number of tokens allowed \((?P<limit>[\d,]+)\)`),
	// xAI
	lazyregexp.New(`maximum prompt length is (?P<limit>[\d,]+) but the request contains (?P<in>[\d,]+) tokens`),
	// Moonshot
	lazyregexp.New(`exceeded model token limit: (?P<limit>[\d,]+) \(requested: (?P<in>[\d,]+)\)`),
	// Mistral
	lazyregexp.New(`prompt contains (?P<in>[\d,]+) tokens.*too large for model with (?P<limit>[\d,]+) maximum context length`),
	// LM Studio
	lazyregexp.New(`keep the first (?P<in>[\d,]+) tokens.*context length of only (?P<limit>[\d,]+)`),
	lazyregexp.New(`n_keep[: (]+(?P<in>[\d,]+)\)?\s*>=\s*n_ctx[: (]+(?P<limit>[\d,]+)`),
	// generic fallbacks: a limit alone
	lazyregexp.New(`maximum context length (?:is|of) (?P<limit>[\d,]+)`),
	lazyregexp.New(`context length (?:of|is) only (?P<limit>[\d,]+)`),
	lazyregexp.New(`max length:\s*(?P<limit>[\d,]+)`),
}

// figures are the counts an overflow answer states (0 when unsaid).
type figures struct{ in, out, limit int }

func atoi(s string) int {
	n, _ := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
	return n
}

// overflowFiguresOf reads the counts from the first wording that states them.
func overflowFiguresOf(text string) figures {
	for _, re := range overflowFigures {
		m := re.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		var f figures
		for i, name := range re.Regexp().SubexpNames() {
			switch name {
			case "in", "in2":
				f.in += atoi(m[i])
			case "out":
				f.out = atoi(m[i])
			case "limit":
				f.limit = atoi(m[i])
			}
		}
		return f
	}
	return figures{}
}

func containsAny(s string, phrases []string) bool {
	for _, p := range phrases {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// kindOf decides what an error answer means from what it says; the HTTP
// status decides only when the body names nothing (a bare 429, 503 or 529).
// Quota comes first (its wording mentions quotas and limits too), then
// overload and rate limit, so neither is ever taken for an overflow (Groq's
// 413 "Request too large … tokens per minute" is a rate limit).
func kindOf(status int, eb errorBody) ErrorKind {
	text := eb.text()
	typeCode := strings.ToLower(eb.Type + " " + eb.Code + " " + eb.Status)
	gemini := strings.Contains(typeCode, "resource_exhausted")
	switch {
	case containsAny(typeCode, quotaCodes) || (!gemini && containsAny(text, quotaPhrases)):
		return KindQuota
	case containsAny(text, overloadPhrases) || strings.Contains(typeCode, "unavailable"):
		return KindOverload
	case containsAny(text, rateLimitPhrases) || eb.Type == "tokens" || eb.Type == "requests":
		return KindRateLimit
	case eb.Type == "exceed_context_size_error" || containsAny(text, overflowPhrases):
		f := overflowFiguresOf(text)
		if eb.NPrompt > 0 {
			f.in = eb.NPrompt
		}
		if eb.NCtx > 0 {
			f.limit = eb.NCtx
		}
		if f.out > 0 && f.in > 0 && f.limit > f.in {
			return KindOverflowOutput
		}
		return KindOverflowPrompt
	}
	switch status {
	case http.StatusTooManyRequests:
		return KindRateLimit
	case http.StatusServiceUnavailable, 529:
		return KindOverload
	}
	return KindOther
}

// overflowFrom builds the OverflowError of an overflow body, with the
// figures the server stated.
func overflowFrom(provider string, eb errorBody) *OverflowError {
	f := overflowFiguresOf(eb.text())
	if eb.NPrompt > 0 {
		f.in = eb.NPrompt
	}
	if eb.NCtx > 0 {
		f.limit = eb.NCtx
	}
	return &OverflowError{Provider: provider, Message: eb.Message, StatedTokens: f.in, LimitTokens: f.limit,
		OutputTokens: f.out, FromOutput: f.out > 0 && f.in > 0 && f.limit > f.in}
}

// classify turns an error answer into its typed error. status is 0 for an
// error event inside a stream (after the 200), which is classified the same
// way.
func classify(provider string, status int, header http.Header, body []byte) error {
	eb := parseErrorBody(body)
	if eb.Message == "" {
		eb.Message = http.StatusText(status)
	}
	switch kindOf(status, eb) {
	case KindQuota:
		return &QuotaError{Provider: provider, Status: status, Message: eb.Message}
	case KindOverload:
		return &RateLimitError{Provider: provider, Status: status, Message: eb.Message, Overloaded: true, RetryAfter: waitAsked(header, body)}
	case KindRateLimit:
		return &RateLimitError{Provider: provider, Status: status, Message: eb.Message, RetryAfter: waitAsked(header, body)}
	case KindOverflowPrompt, KindOverflowOutput:
		return overflowFrom(provider, eb)
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden ||
		strings.Contains(eb.Type, "authentication_error") || strings.Contains(eb.Type, "permission_error"):
		if status == 0 {
			status = http.StatusUnauthorized
		}
		return &AuthError{Provider: provider, Status: status, Message: eb.Message}
	case status >= 400 && status < 500:
		return &BadRequestError{Provider: provider, Status: status, Message: eb.Message}
	case status >= 500:
		return &ServerError{Provider: provider, Status: status, Message: eb.Message}
	default:
		return &StreamError{Provider: provider, Message: "error event: " + eb.Message}
	}
}

// Waits a body asks for when no header does: Gemini's RetryInfo
// "retryDelay": "17s", OpenAI's and Groq's "Please try again in 8s" /
// "in 9m38.016s", Moonshot's "please try again after 1 seconds".
var (
	reRetryDelay = lazyregexp.New(`"retryDelay"\s*:\s*"([\d.]+s)"`)
	reTryAgainIn = lazyregexp.New(`(?i)try again in ((?:\d+h)?(?:\d+m)?(?:[\d.]+s|\d+ms))`)
	reTryAfter   = lazyregexp.New(`(?i)try again after ([\d.]+) seconds?`)
)

// maxBodyWait bounds a wait read from a body, as a hostile or garbled body
// must not ask for a wait of years (a longer one is reported, not waited).
const maxBodyWait = 24 * time.Hour

// waitAsked is the wait the server asked for: the Retry-After header (or
// retry-after-ms), else what the body says; 0 when neither says.
func waitAsked(h http.Header, body []byte) time.Duration {
	if d := retryAfter(h); d > 0 {
		return d
	}
	if len(body) > maxErrorBody {
		body = body[:maxErrorBody]
	}
	text := string(body)
	var d time.Duration
	if m := reRetryDelay.FindStringSubmatch(text); m != nil {
		d, _ = time.ParseDuration(m[1])
	} else if m := reTryAgainIn.FindStringSubmatch(text); m != nil {
		d, _ = time.ParseDuration(m[1])
	} else if m := reTryAfter.FindStringSubmatch(text); m != nil {
		d, _ = time.ParseDuration(m[1] + "s")
	}
	if d <= 0 {
		return 0
	}
	return min(d, maxBodyWait)
}
