package tokens

import "math"

// Measurement sources of the effective input (R-O1, PROTOCOL.md Budget).
const (
	SourceProviderUsage = "provider_usage"
	SourceEstimated     = "estimated"
)

// Calibration bounds and smoothing: a ratio outside MinRatio..MaxRatio says
// the estimate or the report is broken rather than the tokenizer different,
// so it is clamped; later samples move the ratio by calibrationWeight so one
// odd response (a cached prompt, a template change) cannot swing it.
const (
	MinRatio          = 0.5
	MaxRatio          = 2.0
	calibrationWeight = 0.3
)

// Calibration is the learned ratio between a provider's token counts and our
// estimates for one model. The zero value is uncalibrated (ratio 1).
type Calibration struct {
	ratio   float64
	samples int
}

// Ratio returns the factor applied to estimates (1 when uncalibrated).
func (c Calibration) Ratio() float64 {
	if c.samples == 0 {
		return 1
	}
	return c.ratio
}

// Samples returns how many reports the ratio was learned from.
func (c Calibration) Samples() int { return c.samples }

// Apply scales an estimate by the ratio.
func (c Calibration) Apply(estimate int) int {
	return int(math.Round(float64(estimate) * c.Ratio()))
}

// Learn takes one report: the provider counted actual tokens for what we
// estimated at estimated. The first report sets the ratio; later ones are
// smoothed into it.
func (c *Calibration) Learn(actual, estimated int) {
	c.learn(actual, estimated, calibrationWeight)
}

// LearnOverflow takes the prompt size a provider stated in a context-overflow
// error against our estimate of that prompt. Such a prompt is as large as
// prompts get, so the ratio is taken at full weight.
func (c *Calibration) LearnOverflow(promptTokensStated, estimated int) {
	c.learn(promptTokensStated, estimated, 1)
}

func (c *Calibration) learn(actual, estimated int, weight float64) {
	if actual <= 0 || estimated <= 0 {
		return
	}
	r := min(MaxRatio, max(MinRatio, float64(actual)/float64(estimated)))
	if c.samples == 0 {
		c.ratio = r
	} else {
		c.ratio += weight * (r - c.ratio)
	}
	c.samples++
}

// Meter measures the effective input of the next request (R-O1) from the
// raw estimates of what the model input holds and the provider's usage
// reports. Every update is O(1) except Reset, which is O(entries given).
// It is a plain value, guarded by whoever holds the session's state (the
// agent's state mutex).
//
// The figures it is given are raw (uncalibrated) estimates, as written in
// Entry.Tokens; the calibration of the current model is applied when the
// effective size is read.
type Meter struct {
	base     int // system prompt and tool schemas
	input    int // entries of the model-input view
	hasUsage bool
	usage    int // prompt + completion of the last response with usage
	since    int // estimates of entries added after it
	cal      Calibration
}

// Reset starts over from a new model-input view (session open, compaction,
// rewind, capsule load): base is the system prompt and tool schemas, entries
// the estimates of the view's entries (capsule included). Provider usage from
// before is dropped, and the source is estimated until the next report.
// The calibration is kept.
func (m *Meter) Reset(base int, entries []int) {
	m.base, m.input = base, 0
	for _, n := range entries {
		m.input += n
	}
	m.Invalidate()
}

// ResetWithUsage is Reset for a view whose entry entries[at] is a response
// the provider reported usage for (resume): the effective size is that
// report plus the estimates after it, and the report also calibrates.
func (m *Meter) ResetWithUsage(base int, entries []int, at, promptTokens, completionTokens int) {
	m.Reset(base, entries)
	if at < 0 || at >= len(entries) {
		return
	}
	upTo := base
	for _, n := range entries[:at+1] {
		upTo += n
	}
	m.usageAt(upTo, promptTokens, completionTokens)
	for _, n := range entries[at+1:] {
		m.since += n
	}
}

// SetBase changes the system prompt and tool schemas estimate (a skill was
// activated, the tool set changed).
func (m *Meter) SetBase(base int) {
	m.since += base - m.base
	m.base = base
}

// Add records an entry appended to the model input (its raw estimate).
func (m *Meter) Add(tokens int) {
	m.input += tokens
	m.since += tokens
}

// Usage records the provider's report for the response just added (call it
// after Add of the response's entry): the prompt it counted and the
// completion it produced. From now on the effective size is measured from
// this report, and the ratio between it and our estimate of the same request
// and response calibrates later estimates.
func (m *Meter) Usage(promptTokens, completionTokens int) {
	m.usageAt(m.base+m.input, promptTokens, completionTokens)
}

// UsageThinking is Usage for a response whose completion counted thinking
// that the transcript keeps apart and the next request does not carry
// (R-C9); thinking is its estimate. The effective size still counts the
// whole completion until the next report measures the input without it;
// the calibration compares the report with our estimate of the same
// tokens, thinking included, so a thinking model does not skew it.
func (m *Meter) UsageThinking(promptTokens, completionTokens, thinking int) {
	m.usageAt(m.base+m.input+max(0, thinking), promptTokens, completionTokens)
}

func (m *Meter) usageAt(estimated, promptTokens, completionTokens int) {
	if promptTokens <= 0 {
		return // a report without a prompt count measures nothing
	}
	actual := promptTokens + max(0, completionTokens)
	m.cal.Learn(actual, estimated)
	m.hasUsage, m.usage, m.since = true, actual, 0
}

// LearnOverflow calibrates from a context-overflow error that stated the
// prompt's size: the prompt was the whole current input.
func (m *Meter) LearnOverflow(promptTokensStated int) {
	m.cal.LearnOverflow(promptTokensStated, m.base+m.input)
}

// Invalidate drops the provider's last report (after a compaction the input
// it measured is gone): the source is estimated until the next report.
func (m *Meter) Invalidate() {
	m.hasUsage, m.usage, m.since = false, 0, 0
}

// Effective returns the effective input in tokens and its source: the last
// report plus calibrated estimates of what was added since, or the
// calibrated estimate of the whole input.
func (m *Meter) Effective() (tokens int, source string) {
	if m.hasUsage {
		return m.usage + m.cal.Apply(m.since), SourceProviderUsage
	}
	return m.cal.Apply(m.base + m.input), SourceEstimated
}

// Estimated returns the calibrated estimate of the whole input, ignoring
// any report (for checks that must not trust a stale report).
func (m *Meter) Estimated() int { return m.cal.Apply(m.base + m.input) }

// Calibration returns the current model's calibration.
func (m *Meter) Calibration() Calibration { return m.cal }

// SetCalibration switches to another model's calibration (keep one
// Calibration per model and set it when the active model changes).
func (m *Meter) SetCalibration(c Calibration) { m.cal = c }
