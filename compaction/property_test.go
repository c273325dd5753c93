package compaction

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/soba-agent/soba-lsp/session"
	"github.com/soba-agent/soba-lsp/tool"
)

// randomSession grows a path with tool batches of random size, text turns,
// checkpoints, settings entries (rewinds leave one on the path) and earlier
// compactions at random points.
func randomSession(r *rand.Rand, steps int) *builder {
	b := newBuilder()
	for s := 0; s < steps; s++ {
		switch k := r.IntN(10); {
		case k < 3:
			b.user(fmt.Sprintf("request %d: keep it small", s), 20+r.IntN(800))
		case k < 7:
			n := 1 + r.IntN(5)
			args := make([]string, n)
			for i := range args {
				args[i] = fmt.Sprintf(`{"path":"f%d.go"}`, r.IntN(30))
			}
			b.batch(tool.ReadFile, 50+r.IntN(1500), args...)
		case k < 8:
			b.reply("answer", 30+r.IntN(600))
		case k < 9:
			b.add(session.Entry{Type: session.TypeSettings, Settings: &session.Settings{RewindTo: "x"}}, 0)
		default:
			cfg := smallConfig()
			_, _, _ = b.compact(TriggerUser, cfg, fmt.Sprintf("ck_%d", s))
		}
	}
	return b
}

func TestPropertyCutsSafeInputsPaired_RM3(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := range 300 {
		b := randomSession(r, 20+r.IntN(120))
		base, err := FindBase(b.es)
		if err != nil {
			t.Fatal(err)
		}
		for _, keep := range []int{1, 200, 2000, 8000} {
			c, err := FindCut(b.es, base, CutOptions{KeepRecent: keep})
			if err != nil {
				t.Fatal(err)
			}
			checkSafeCut(t, b.es, c.FirstKept)
		}
		in, err := BuildInput(b.es, InputOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkPaired(t, in)
		if iter%3 == 0 {
			if _, _, err := b.compact(TriggerUser, smallConfig(), "ck_p"); err == nil {
				in, _ := BuildInput(b.es, InputOptions{})
				checkPaired(t, in)
			}
		}
	}
}

func TestPropertyForcedCompactFitsHardLimit_RG4(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	cfg := smallConfig() // hard limit 17000
	fitted, refused := 0, 0
	for range 300 {
		b := randomSession(r, 30+r.IntN(150))
		p, err := MakePlan(b.es, quarterCounter{}, PlanRequest{Trigger: TriggerHardLimit, Config: cfg, SystemTokens: 800})
		var skip *Skip
		var cf *CannotFitError
		switch {
		case errors.As(err, &skip):
			continue
		case errors.As(err, &cf):
			// Refusing is only right when the smallest safe tail cannot fit.
			small, _ := FindCut(b.es, p.Base, CutOptions{KeepRecent: 1})
			if 800+small.KeptTokens+capsuleAllowance <= cfg.HardLimit() && p.PreviousCapsuleTokens == 0 {
				t.Fatalf("refused although the smallest tail (%d) fits: %v", small.KeptTokens, err)
			}
			refused++
			continue
		case err != nil:
			t.Fatal(err)
		}
		build := func(p Plan) (Capsule, error) { return BuildCapsule(b.es, quarterCounter{}, p, nil, false) }
		p, c, err := FitForced(b.es, quarterCounter{}, p, build)
		if errors.As(err, &cf) {
			refused++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if c.TokensAfter > cfg.HardLimit() {
			t.Fatalf("forced compaction left %d tokens, over the hard limit %d", c.TokensAfter, cfg.HardLimit())
		}
		checkSafeCut(t, b.es, p.Cut.FirstKept)
		fitted++
	}
	if fitted == 0 {
		t.Fatal("no forced compaction was exercised")
	}
	t.Logf("fitted %d, refused %d", fitted, refused)
}
