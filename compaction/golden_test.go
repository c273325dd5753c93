package compaction

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soba-agent/soba-lsp/compaction/tokens"
	"github.com/soba-agent/soba-lsp/internal/text"
	"github.com/soba-agent/soba-lsp/session"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// loadPath reads a linear session file into a path, estimating tokens as
// the store would.
func loadPath(t testing.TB, path string) Entries {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var es Entries
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		e, err := session.DecodeLine(sc.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if e.Tokens == 0 {
			e.Tokens = tokens.EntryTokens(&e)
		}
		es = append(es, e)
	}
	return es
}

// describeInput renders a model input compactly for a golden file.
func describeInput(in Input) string {
	var b strings.Builder
	fmt.Fprintf(&b, "capsule: %s (%d bytes)\n", in.CheckpointID, len(in.CapsuleText))
	for _, m := range in.Messages {
		line := m.Text
		if i := strings.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		line = text.Clip(line, 70)
		calls := ""
		for _, c := range m.ToolCalls {
			calls += " " + c.Name + "#" + c.ID
		}
		fmt.Fprintf(&b, "%-9s %-8s %s%s\n", m.Role, m.EntryID, line, calls)
	}
	for _, r := range in.Repairs {
		fmt.Fprintf(&b, "repair: %s\n", r)
	}
	return b.String()
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./compaction -run Golden -args -update)", err)
	}
	if !bytes.Equal(want, []byte(got)) {
		t.Errorf("%s differs from the golden file; got:\n%s", name, got)
	}
}

// TestGoldenCompactions compacts a realistic long session (36 turns over six
// files, failing and passing test runs) three times in a row, and checks the
// capsules and model inputs against golden files (R-C1, R-C2, R-M1, R-M4).
func TestGoldenCompactions(t *testing.T) {
	es := loadPath(t, filepath.Join("testdata", "golden", "orders-service.jsonl"))
	cfg := DefaultConfig()
	cfg.KeepRecentTokens = 6000
	b := &builder{es: es}
	third := len(es) / 3
	for round, end := range []int{third, 2 * third, len(es)} {
		b.es = append(Entries(nil), b.es...)
		// Compact the path as it stood after `end` recorded entries (plus
		// the capsules appended so far).
		path := pathUpTo(es, b.es, end)
		p, err := MakePlan(path, tokens.Default(), PlanRequest{Trigger: TriggerUser, Config: cfg, CheckpointID: fmt.Sprintf("ck_gold%d", round+1), SystemTokens: 1200})
		if err != nil {
			t.Fatalf("round %d: %v", round+1, err)
		}
		c, err := BuildCapsule(path, tokens.Default(), p, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		entry := c.Entry
		last := path[len(path)-1].ID
		path = append(path, session.Entry{ID: fmt.Sprintf("cap%d", round+1), ParentID: &last, Type: session.TypeCapsule, Capsule: &entry})
		in, err := BuildInput(path, InputOptions{MaxToolResultChars: 2000})
		if err != nil {
			t.Fatal(err)
		}
		checkPaired(t, in)
		checkSafeCut(t, path, p.Cut.FirstKept)
		checkGolden(t, fmt.Sprintf("orders-service.round%d.capsule.md", round+1), ResultLine(CompactionResult{Outcome: OutcomeCompleted, Trigger: TriggerUser,
			TokensBefore: c.Entry.TokensBefore, TokensAfter: c.TokensAfter, ReclaimedRatio: float64(c.Entry.TokensBefore-c.TokensAfter) / float64(c.Entry.TokensBefore),
			CheckpointID: c.Entry.CheckpointID, Quality: c.Entry.Quality})+"\n\n"+ModelText(c.Entry.State))
		checkGolden(t, fmt.Sprintf("orders-service.round%d.input.txt", round+1), describeInput(in))
		b.es = path
	}
}

// pathUpTo is the session's first n recorded entries with the capsules
// appended so far (from grown) spliced in where they were appended.
func pathUpTo(recorded, grown Entries, n int) Entries {
	var out Entries
	ri := 0
	for _, e := range grown {
		if e.Type == session.TypeCapsule {
			out = append(out, e)
			continue
		}
		if ri < n {
			out = append(out, recorded[ri])
			ri++
		}
	}
	for ; ri < n; ri++ {
		out = append(out, recorded[ri])
	}
	// re-link parents along the new order
	for i := 1; i < len(out); i++ {
		p := out[i-1].ID
		out[i].ParentID = &p
	}
	return out
}
