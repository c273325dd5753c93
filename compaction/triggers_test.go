package compaction

import (
	"slices"
	"strings"
	"testing"
)

func TestHardLimitExample_RG4(t *testing.T) {
	c := DefaultConfig()
	if got := c.HardLimit(); got != 48808 {
		t.Fatalf("hard limit of 65000/8000/8192 = %d, want 48808", got)
	}
}

func TestSoftLimitExample_RS2(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		want int
	}{
		{"defaults", func(*Config) {}, 39046},
		// max(minTokensForAutoCompact, floor) picks the floor of 32000.
		{"minimum wins", func(c *Config) { c.AutoCompactThresholdRatio = 0.5 }, 32000},
		// min(hardLimit-1, …) caps a ratio of 1.
		{"capped below hard limit", func(c *Config) { c.AutoCompactThresholdRatio = 1 }, 48807},
		{"minimum above hard limit is capped", func(c *Config) { c.MinTokensForAutoCompact = 60000 }, 48807},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mod(&c)
			if got := c.SoftLimit(); got != tt.want {
				t.Fatalf("soft limit = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestDefaults_RS1(t *testing.T) {
	c := DefaultConfig()
	want := Config{Keys: Keys{Auto: true, CompactOnTurnComplete: true, CompactOnMilestone: true, MinTokensForAutoCompact: 32000,
		MinReclaimableTokens: 12000, MinSavingsRatio: 0.25, KeepRecentTokens: 20000, SafetyReserveTokens: 8192,
		AutoCompactThresholdRatio: 0.8, TimeoutMs: 15000}, ContextWindow: 65000, MaxOutputTokens: 8000}
	if c != want {
		t.Fatalf("defaults = %+v, want %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidateNamesKey_RS1(t *testing.T) {
	tests := []struct {
		mod func(*Config)
		key string
	}{
		{func(c *Config) { c.MinSavingsRatio = 1.5 }, "compaction.minSavingsRatio"},
		{func(c *Config) { c.AutoCompactThresholdRatio = -0.1 }, "compaction.autoCompactThresholdRatio"},
		{func(c *Config) { c.KeepRecentTokens = 48808 }, "compaction.keepRecentTokens"},
		{func(c *Config) { c.SafetyReserveTokens = 60000 }, "compaction.safetyReserveTokens"},
		{func(c *Config) { c.TimeoutMs = 0 }, "compaction.timeoutMs"},
		{func(c *Config) { c.ContextWindow = 0 }, "model.contextWindow"},
		{func(c *Config) { c.MinReclaimableTokens = -1 }, "compaction.minReclaimableTokens"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			c := DefaultConfig()
			tt.mod(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.key) {
				t.Fatalf("Validate() = %v, want an error naming %s", err, tt.key)
			}
		})
	}
}

func intents(ts ...string) Intents {
	var in Intents
	for _, t := range ts {
		in.Add(t)
	}
	return in
}

func TestPreflightPriority_RG2(t *testing.T) {
	c := DefaultConfig() // hard 48808, soft 39046
	tests := []struct {
		name      string
		effective int
		pending   Intents
		want      string
		consume   []string
	}{
		{"nothing due", 10000, Intents{}, "", nil},
		{"hard limit beats every intent", 50000, intents(TriggerMilestone, TriggerPlanPivot, TriggerTurnComplete), TriggerHardLimit, nil},
		{"hard limit answers a pending user request", 50000, intents(TriggerUser), TriggerHardLimit, []string{TriggerUser}},
		{"milestone beats turn_complete", 40000, intents(TriggerTurnComplete, TriggerMilestone), TriggerMilestone, []string{TriggerMilestone}},
		{"plan pivot beats turn_complete", 40000, intents(TriggerTurnComplete, TriggerPlanPivot), TriggerPlanPivot, []string{TriggerPlanPivot}},
		{"turn_complete beats auto threshold", 40000, intents(TriggerTurnComplete), TriggerTurnComplete, []string{TriggerTurnComplete}},
		{"auto threshold when nothing pending", 40000, Intents{}, TriggerAutoThreshold, nil},
		{"below soft limit, intent still runs", 36000, intents(TriggerMilestone), TriggerMilestone, []string{TriggerMilestone}},
		{"user request before soft intents", 40000, intents(TriggerMilestone, TriggerUser), TriggerUser, []string{TriggerUser}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Preflight(PreflightInput{Effective: tt.effective, Config: c, AutoCompact: true, Pending: tt.pending})
			if d.Trigger != tt.want || !slices.Equal(d.Consume, tt.consume) {
				t.Fatalf("Preflight = %+v, want trigger %q consuming %v", d, tt.want, tt.consume)
			}
		})
	}
}

func TestIntentConsumedOnce_RG2(t *testing.T) {
	c := DefaultConfig()
	in := PreflightInput{Effective: 36000, Config: c, AutoCompact: true, Pending: intents(TriggerMilestone, TriggerTurnComplete)}
	var order []string
	for range 3 {
		d := Preflight(in)
		for _, x := range d.Consume {
			in.Pending.Consume(x)
		}
		order = append(order, d.Trigger)
	}
	if want := []string{TriggerMilestone, TriggerTurnComplete, ""}; !slices.Equal(order, want) {
		t.Fatalf("successive preflights ran %q, want %q", order, want)
	}
}

func TestHardLimitForcedWhenAutoOff_RG4_RG10(t *testing.T) {
	c := DefaultConfig()
	c.Auto = false
	for _, auto := range []bool{true, false} {
		d := Preflight(PreflightInput{Effective: 48809, Config: c, AutoCompact: auto, SoftAttempted: true})
		if d.Trigger != TriggerHardLimit {
			t.Fatalf("auto=%v session=%v: Preflight = %+v, want hard_limit", c.Auto, auto, d)
		}
	}
	// Exactly at the hard limit still fits: "exceeds" is strict.
	if d := Preflight(PreflightInput{Effective: 48808, Config: c}); d.Trigger != "" {
		t.Fatalf("at the hard limit: %+v, want nothing due", d)
	}
}

func TestSoftAttemptOncePerTurn_RG5(t *testing.T) {
	c := DefaultConfig()
	first := Preflight(PreflightInput{Effective: 40000, Config: c, AutoCompact: true})
	if first.Trigger != TriggerAutoThreshold {
		t.Fatalf("first attempt: %+v", first)
	}
	second := Preflight(PreflightInput{Effective: 40000, Config: c, AutoCompact: true, SoftAttempted: true, Pending: intents(TriggerMilestone)})
	if second.Due() || !strings.Contains(second.Reason, "already attempted") {
		t.Fatalf("second soft attempt in one turn: %+v, want refused", second)
	}
	if len(second.Consume) != 0 {
		t.Fatalf("a refused attempt must leave intents pending, consumed %v", second.Consume)
	}
}

func TestAutoThresholdNeedsROI_RG5_RR1(t *testing.T) {
	c := DefaultConfig()
	c.KeepRecentTokens = 30000 // 40000 - 30000 = 10000 < 12000 reclaimable
	d := Preflight(PreflightInput{Effective: 40000, Config: c, AutoCompact: true})
	if d.Due() || !strings.Contains(d.Reason, "minReclaimableTokens") {
		t.Fatalf("Preflight = %+v, want declined by R-R1", d)
	}
}

func TestTurnCompleteIntent_RG6(t *testing.T) {
	c := DefaultConfig()
	tests := []struct {
		name      string
		effective int
		mod       func(*Config)
		auto      bool
		want      bool
	}{
		{"worthwhile", 33000, func(*Config) {}, true, true},
		{"below minTokensForAutoCompact", 31999, func(*Config) {}, true, false},
		{"ROI fails", 33000, func(c *Config) { c.KeepRecentTokens = 25000 }, true, false},
		{"compactOnTurnComplete off", 40000, func(c *Config) { c.CompactOnTurnComplete = false }, true, false},
		{"auto off", 40000, func(c *Config) { c.Auto = false }, true, false},
		{"session auto-compact off", 40000, func(*Config) {}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cc := c
			tt.mod(&cc)
			if got := TurnCompleteIntent(tt.effective, cc, tt.auto, nil); got != tt.want {
				t.Fatalf("TurnCompleteIntent = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMilestoneAndPivotIntents_RG7(t *testing.T) {
	c := DefaultConfig()
	if !MilestoneIntent(TriggerMilestone, c, true) || !MilestoneIntent(TriggerPlanPivot, c, true) {
		t.Fatal("milestone and plan pivot record intents by default")
	}
	c.CompactOnMilestone = false
	if MilestoneIntent(TriggerMilestone, c, true) {
		t.Fatal("compactOnMilestone false must not record a milestone intent")
	}
	if MilestoneIntent(TriggerPlanPivot, c, false) {
		t.Fatal("auto-compact off must not record soft intents")
	}
}

func TestAutoCompactOffDisablesSoftOnly_RG10(t *testing.T) {
	c := DefaultConfig()
	for _, p := range []Intents{intents(TriggerMilestone), intents(TriggerTurnComplete), intents(TriggerPlanPivot), {}} {
		if d := Preflight(PreflightInput{Effective: 45000, Config: c, AutoCompact: false, Pending: p}); d.Due() {
			t.Fatalf("auto-compact off, pending %v: %+v, want no soft compaction", p.List(), d)
		}
	}
	if d := Preflight(PreflightInput{Effective: 45000, Config: c, AutoCompact: false, Pending: intents(TriggerUser)}); d.Trigger != TriggerUser {
		t.Fatalf("explicit compact with auto-compact off: %+v, want user", d)
	}
	if d := Preflight(PreflightInput{Effective: 50000, Config: c, AutoCompact: false}); d.Trigger != TriggerHardLimit {
		t.Fatalf("hard limit with auto-compact off: %+v", d)
	}
	for _, tr := range []string{TriggerAutoThreshold, TriggerTurnComplete, TriggerMilestone, TriggerPlanPivot} {
		if !IsSoft(tr) {
			t.Fatalf("%s must be soft", tr)
		}
	}
	for _, tr := range []string{TriggerHardLimit, TriggerContextOverflow, TriggerUser} {
		if IsSoft(tr) {
			t.Fatalf("%s must not be soft", tr)
		}
	}
}

func TestSevenTriggers_RG1(t *testing.T) {
	for _, tr := range []string{"hard_limit", "milestone", "plan_pivot", "turn_complete", "auto_threshold", "user", "context_overflow"} {
		if !ValidTrigger(tr) {
			t.Fatalf("%s is a trigger of R-G1", tr)
		}
	}
	if ValidTrigger("background") {
		t.Fatal("unknown trigger accepted")
	}
}

func TestPreGenerationROI_RR1(t *testing.T) {
	c := DefaultConfig() // keep 20000, min reclaimable 12000, ratio 0.25
	tests := []struct {
		effective int
		ok        bool
	}{
		{32000, true},  // 12000 reclaimable, 0.375
		{31999, false}, // 11999 < 12000
		{0, false},
	}
	for _, tt := range tests {
		if ok, why := PreGenerationROI(tt.effective, c); ok != tt.ok {
			t.Fatalf("PreGenerationROI(%d) = %v (%s), want %v", tt.effective, ok, why, tt.ok)
		}
	}
	c.MinReclaimableTokens = 0
	c.MinSavingsRatio = 0.5
	if ok, why := PreGenerationROI(30000, c); ok || !strings.Contains(why, "minSavingsRatio") {
		t.Fatalf("ratio 0.33 < 0.5: ok=%v %s", ok, why)
	}
}

func TestPostGenerationGate_RR2(t *testing.T) {
	c := DefaultConfig()
	tests := []struct {
		trigger       string
		before, after int
		ok            bool
	}{
		{TriggerAutoThreshold, 40000, 20000, true},
		{TriggerAutoThreshold, 40000, 30000, false}, // 10000 < 12000
		{TriggerTurnComplete, 100000, 80000, false}, // ratio 0.2 < 0.25
		{TriggerMilestone, 40000, 39000, false},
		{TriggerHardLimit, 40000, 39000, true},
		{TriggerContextOverflow, 40000, 39000, true},
		{TriggerUser, 40000, 39999, true},
	}
	for _, tt := range tests {
		if ok, why := PostGenerationROI(tt.trigger, tt.before, tt.after, c); ok != tt.ok {
			t.Fatalf("%s %d→%d: ok=%v (%s), want %v", tt.trigger, tt.before, tt.after, ok, why, tt.ok)
		}
	}
}

// TestDeclinedWaitsForGrowth_RG6_RR2: after the exact check (R-R2) declined
// a soft compaction, soft triggers wait until the history added since could
// make the same compaction pass; the hard limit and the user never wait.
func TestDeclinedWaitsForGrowth_RG6_RR2(t *testing.T) {
	c := DefaultConfig() // minReclaimableTokens 12000, minSavingsRatio 0.25, keepRecentTokens 20000
	// 36,140 tokens measured, the capsule would have left 24,779: 11,361
	// reclaimed (the replay of the real pi session).
	d := &Declined{Before: 36140, After: 24779, Effective: 36140}
	for _, tc := range []struct {
		name      string
		effective int
		blocked   bool
	}{
		{"no growth", 36140, true},
		{"638 tokens more: 11,999 at best", 36778, true},
		{"639 tokens more: could reach 12,000", 36779, false},
		{"smaller input (a rewind would reset it anyway)", 30000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blocked, why := d.Blocks(tc.effective, c)
			if blocked != tc.blocked || (blocked && !strings.Contains(why, "11361")) {
				t.Fatalf("Blocks(%d) = %v %q, want %v", tc.effective, blocked, why, tc.blocked)
			}
			if got := TurnCompleteIntent(tc.effective, c, true, d); got == tc.blocked {
				t.Errorf("TurnCompleteIntent = %v while blocked = %v", got, tc.blocked)
			}
		})
	}
	// A whole keep window appended: the cut may have moved past what held
	// the old tail, so nothing is blocked any more, whatever the ratio says.
	tail := &Declined{Before: 100000, After: 96000, Effective: 100000}
	if blocked, _ := tail.Blocks(100000+c.KeepRecentTokens-1, c); !blocked {
		t.Error("a big declined tail is unblocked before a keep window was appended")
	}
	if blocked, _ := tail.Blocks(100000+c.KeepRecentTokens, c); blocked {
		t.Error("still blocked after a whole keep window was appended")
	}
	// The savings ratio is part of the gate too: 10% saved needs growth.
	ratio := &Declined{Before: 100000, After: 90000, Effective: 100000}
	rc := c
	rc.MinReclaimableTokens, rc.MinSavingsRatio = 1000, 0.2
	if blocked, _ := ratio.Blocks(100000, rc); !blocked {
		t.Error("a declined 10% saving does not block at the same size")
	}
	if blocked, _ := (*Declined)(nil).Blocks(1, c); blocked {
		t.Error("nil blocks")
	}

	soft := PreflightInput{Effective: 40000, Config: c, AutoCompact: true, Declined: &Declined{Before: 40000, After: 30000, Effective: 40000}}
	if got := Preflight(soft); got.Due() || !strings.Contains(got.Reason, "cannot make it worthwhile") {
		t.Errorf("auto_threshold after a decline: %+v", got)
	}
	soft.Pending.Add(TriggerTurnComplete)
	if got := Preflight(soft); got.Due() || len(got.Consume) != 1 {
		t.Errorf("turn_complete intent after a decline: %+v, want consumed and declined", got)
	}
	hard := soft
	hard.Effective = c.HardLimit() + 1
	if got := Preflight(hard); got.Trigger != TriggerHardLimit {
		t.Errorf("hard limit after a decline: %+v", got)
	}
	user := soft
	user.Pending = Intents{}
	user.Pending.Add(TriggerUser)
	if got := Preflight(user); got.Trigger != TriggerUser {
		t.Errorf("user compact after a decline: %+v", got)
	}
}
