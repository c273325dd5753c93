// Package tokens is SOBA's token accounting: a Counter over a real BPE
// tokenizer, the estimate of one transcript entry as the model sees it, and
// the Meter that turns provider usage and estimates into the effective input
// size with its source (R-O1).
//
// Counts are estimates of what the active model's own tokenizer would give:
// local models (Qwen, Llama, DeepSeek) and Anthropic's do not publish a Go
// tokenizer, so a close BPE vocabulary is counted and the Meter calibrates it
// against the provider's reported usage.
package tokens

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"
)

// Encoding names a BPE vocabulary.
const (
	// Cl100kBase is the default: its split pattern and 100k vocabulary are
	// what Llama 3 and Qwen 2.x build on, so it tracks the local default
	// model (qwen2.5-coder) closely; it counts a little above o200k_base on
	// code and English, the safe side for a fail-closed hard limit (R-G4).
	Cl100kBase = "cl100k_base"
	// O200kBase is GPT-4o/4.1/o-series/GPT-5's vocabulary. It is counted
	// with the library's own matcher (exact, about 1 MB/s).
	O200kBase = "o200k_base"
)

// MaxTokenBytes is the longest token of both vocabularies, in bytes: no
// token stands for more, so a text of n bytes is at least n/MaxTokenBytes
// tokens (and, byte-level BPE, at most n). TestMaxTokenBytes checks it.
const MaxTokenBytes = 128

// DefaultEncoding is the vocabulary of Default.
const DefaultEncoding = Cl100kBase

// Long texts: above SampleAbove bytes Count measures sampleCount evenly
// spaced windows of sampleWindow bytes (cut at line breaks) and scales the
// count by the bytes, so an entry of any size costs about as much as one of
// SampleAbove bytes. CountExact always tokenizes everything.
const (
	SampleAbove  = 256 << 10
	sampleCount  = 16
	sampleWindow = 16 << 10
)

// Counter counts the tokens of text with one BPE vocabulary. It is safe for
// concurrent use; its tables are read-only after New.
type Counter struct {
	name  string
	codec tokenizer.Codec
	// ranks is set for cl100k_base, whose split pattern is scanned natively
	// (split.go) and merged here (bpe.go); nil means the library codec
	// tokenizes everything.
	ranks *ranks
	// merged memoises the counts of pre-tokens that need merging: code and
	// logs repeat the same identifiers and indentation runs over and over,
	// and a lookup is far cheaper than a merge. Bounded by maxMerged.
	merged  sync.Map // string → int
	mergedN atomic.Int32
}

// maxMerged bounds the memo of merged pre-tokens (about 10 MB at most).
const maxMerged = 1 << 17

// piece counts one pre-token.
func (c *Counter) piece(p string) int {
	if _, ok := c.ranks.rank(p); ok || len(p) == 1 {
		return 1
	}
	if v, ok := c.merged.Load(p); ok {
		return v.(int)
	}
	n := c.ranks.count(p)
	if c.mergedN.Load() < maxMerged {
		c.mergedN.Add(1)
		c.merged.Store(strings.Clone(p), n) // a clone: the memo must not pin the whole text
	}
	return n
}

// New returns a Counter for the named encoding (Cl100kBase or O200kBase).
// Opening cl100k_base costs nothing to speak of (its ranks are embedded as a
// ready hash table); o200k_base goes through the library's tables, about
// half a second once per process. Use Default for the shared cl100k_base one.
func New(encoding string) (*Counter, error) {
	switch encoding {
	case Cl100kBase:
		r, err := parseRanks(cl100kRanks)
		if err != nil {
			return nil, err
		}
		return &Counter{name: encoding, ranks: r}, nil
	case O200kBase:
		c, err := tokenizer.Get(tokenizer.O200kBase)
		if err != nil {
			return nil, fmt.Errorf("tokens: %s: %w", encoding, err)
		}
		return &Counter{name: encoding, codec: c}, nil
	default:
		return nil, fmt.Errorf("tokens: unknown encoding %q (known: %s, %s)", encoding, Cl100kBase, O200kBase)
	}
}

var (
	defaultOnce    sync.Once
	defaultCounter *Counter
)

// Default returns the process-wide Counter for DefaultEncoding, loading it on
// first use.
func Default() *Counter {
	defaultOnce.Do(func() {
		c, err := New(DefaultEncoding)
		if err != nil {
			// The vocabulary is compiled into the binary; failing to read
			// it is a build defect, not a runtime condition.
			panic(err)
		}
		defaultCounter = c
	})
	return defaultCounter
}

// Encoding returns the counter's vocabulary name.
func (c *Counter) Encoding() string { return c.name }

// Count returns the number of tokens of text: exact up to SampleAbove bytes,
// sampled above (typically within 1% for code, logs and prose; see the
// tests).
func (c *Counter) Count(text string) int {
	if len(text) <= SampleAbove {
		return c.CountExact(text)
	}
	return c.sampled(text)
}

// CountExact returns the exact number of tokens of text, whatever its size.
// Invalid UTF-8 is counted as the tokenizer library counts it: each invalid
// byte as U+FFFD.
func (c *Counter) CountExact(text string) int {
	if text == "" {
		return 0
	}
	if c.ranks == nil {
		n, err := c.codec.Count(text)
		if err != nil {
			return (len(text) + 3) / 4 // unreachable in the default error mode
		}
		return n
	}
	if !utf8.ValidString(text) {
		text = string([]rune(text))
	}
	n := 0
	splitCl100k(text, func(p string) { n += c.piece(p) })
	return n
}

// sampled estimates a long text from sampleCount windows spread over it,
// each starting after a line break (so a window starts where a line does)
// and scaled by bytes.
func (c *Counter) sampled(text string) int {
	stride := len(text) / sampleCount
	counted, tokens := 0, 0
	for i := range sampleCount {
		start := i * stride
		if i > 0 {
			if nl := strings.IndexByte(text[start:min(start+sampleWindow/2, len(text))], '\n'); nl >= 0 {
				start += nl + 1
			}
		}
		end := min(start+sampleWindow, len(text))
		if nl := strings.LastIndexByte(text[start:end], '\n'); nl > sampleWindow/2 {
			end = start + nl + 1
		}
		for end < len(text) && !utf8.RuneStart(text[end]) {
			end++ // never cut a character in two
		}
		for start < end && !utf8.RuneStart(text[start]) {
			start++
		}
		tokens += c.CountExact(text[start:end])
		counted += end - start
	}
	if counted == 0 {
		return c.CountExact(text)
	}
	return int(float64(tokens) * float64(len(text)) / float64(counted))
}
