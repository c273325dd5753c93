package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
	"github.com/soba-agent/soba-lsp/compaction"
	"github.com/soba-agent/soba-lsp/session"
)

// memoryRecorder is Project Memory in miniature: it keeps what was mirrored.
type memoryRecorder struct {
	mu       sync.Mutex
	mirrored []string
}

func (m *memoryRecorder) Mirror(ck, title string, created time.Time, md []byte) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mirrored = append(m.mirrored, ck)
	return "/mem/" + ck, nil
}

func (m *memoryRecorder) list() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.mirrored...)
}

func workScript() []providertest.Reply {
	return []providertest.Reply{
		providertest.Call("w1", "write_file", map[string]any{"path": "db/schema.sql", "content": "create table orders(id int);"}),
		providertest.Text("Decided to use sqlite because it is embedded. " + bigText),
		providertest.Text("answer " + bigText), providertest.Text("answer " + bigText), providertest.Text("answer " + bigText),
		providertest.Text("answer " + bigText), providertest.Text("answer " + bigText),
	}
}

func (f *fixture) work(t *testing.T) {
	t.Helper()
	f.prompt(t, "Build the orders database. Never drop tables. "+bigText)
	if _, err := f.agent.Checkpoint(compaction.TriggerPlanPivot, "use sqlite: it is embedded and needs no server"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		f.prompt(t, "continue "+bigText)
	}
}

func TestCapsuleCreateLeavesModelInputUnchanged_RP1(t *testing.T) {
	f := newFixture(t, func(o *Options) { smallWindow(o); o.Compaction.Auto = false }, append(workScript(), providertest.Text("next"))...)
	f.work(t)
	before := len(f.entries(t))
	ck, path, err := f.agent.CapsuleCreate(context.Background(), "Orders DB handoff")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ck, "ck_") || filepath.Dir(path) != filepath.Join(f.dir, ".soba", "capsules") || !strings.HasSuffix(path, ck+"-orders-db-handoff.capsule.md") {
		t.Fatalf("ck %s path %s", ck, path)
	}
	md, _ := os.ReadFile(path)
	for _, want := range []string{"## Goal", "Build the orders database", "db/schema.sql", "## Files modified"} {
		if !strings.Contains(string(md), want) {
			t.Fatalf("capsule file lacks %q:\n%s", want, md)
		}
	}
	es := f.entries(t)
	if len(es) != before+1 || es[len(es)-1].Checkpoint == nil || es[len(es)-1].Checkpoint.Kind != "capsule" {
		t.Fatal("create must record exactly one checkpoint entry")
	}
	f.prompt(t, "go on")
	reqs := f.model.Requests()
	if strings.HasPrefix(reqs[len(reqs)-1].Messages[0].Text, compaction.CapsulePreamble) {
		t.Fatal("capsule create changed the model input")
	}
	list, _ := f.agent.CapsuleList()
	if len(list) != 1 || list[0].CheckpointID != ck || list[0].Title != "Orders DB handoff" {
		t.Fatalf("list %+v", list)
	}
}

func TestCapsuleHandoffToAnotherWorkspace_RP1_RP2(t *testing.T) {
	a := newFixture(t, func(o *Options) { smallWindow(o); o.Compaction.Auto = false }, workScript()...)
	a.work(t)
	ck, _, err := a.agent.CapsuleCreate(context.Background(), "handoff")
	if err != nil {
		t.Fatal(err)
	}
	out, err := a.agent.CapsuleExport(ck, "handoff.capsule.md", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.agent.CapsuleExport(ck, "handoff.capsule.md", false); err == nil || !strings.Contains(err.Error(), "overwrite") {
		t.Fatalf("export over an existing file: %v", err)
	}
	if _, err := a.agent.CapsuleExport(ck, "handoff.capsule.md", true); err != nil {
		t.Fatal(err)
	}
	b := newFixture(t, nil, providertest.Text("continuing"))
	data, _ := os.ReadFile(out)
	os.WriteFile(filepath.Join(b.dir, "in.capsule.md"), data, 0o644)
	lck, title, warnings, err := b.agent.CapsuleLoad("in.capsule.md")
	if err != nil || lck != ck || title != "handoff" || len(warnings) != 0 {
		t.Fatalf("load: %s %q %v %v", lck, title, warnings, err)
	}
	b.prompt(t, "continue the work")
	first := b.model.Requests()[0].Messages[0].Text
	for _, want := range []string{"Build the orders database", "sqlite", "db/schema.sql"} {
		if !strings.Contains(first, want) {
			t.Fatalf("B's first request lacks A's %q:\n%s", want, first)
		}
	}
}

func TestCapsuleLoadMalformedChangesNothing_RP2(t *testing.T) {
	f := newFixture(t, nil)
	cases := map[string]string{
		"nofront.capsule.md": "## Goal\nx\n",
		"version.capsule.md": "---\nformat: soba-capsule/9\ncheckpoint: ck_1\n---\n## Goal\nx\n",
		"binary.capsule.md":  "---\nformat: soba-capsule/1\n---\n\x00\x01\x02",
		"huge.capsule.md":    strings.Repeat("a", 2<<20),
	}
	before := len(f.entries(t))
	for name, body := range cases {
		os.WriteFile(filepath.Join(f.dir, name), []byte(body), 0o644)
		if _, _, _, err := f.agent.CapsuleLoad(name); err == nil {
			t.Errorf("%s loaded", name)
		}
	}
	if _, _, _, err := f.agent.CapsuleLoad("../../etc/passwd"); err == nil || !strings.Contains(err.Error(), "escapes") {
		t.Errorf("escaping path: %v", err)
	}
	if n := len(f.entries(t)); n != before {
		t.Fatalf("%d entries appended by failed loads", n-before)
	}
}

func TestCapsuleShowNewestOnLeafPath(t *testing.T) {
	f := newFixture(t, func(o *Options) { smallWindow(o); o.Compaction.Auto = false }, workScript()...)
	if _, _, err := f.agent.CapsuleShow(""); err == nil {
		t.Fatal("show with no capsule must say so")
	}
	f.work(t)
	r, err := f.agent.Compact(context.Background(), "")
	if err != nil || r.Outcome != compaction.OutcomeCompleted {
		t.Fatalf("compact %+v %v", r, err)
	}
	ck, md, err := f.agent.CapsuleShow("")
	if err != nil || ck != r.CheckpointID || !strings.Contains(md, "## Goal") {
		t.Fatalf("show %s %v\n%s", ck, err, md)
	}
}

func TestProjectMemoryMirrorsOnlyExplicitFull_RC4(t *testing.T) {
	mem := &memoryRecorder{}
	f := newFixture(t, func(o *Options) { smallWindow(o); o.Memory = mem }, append(workScript(),
		providertest.Text("more "+bigText), providertest.Text("more "+bigText), providertest.Text("more "+bigText), providertest.Text("more "+bigText),
		providertest.Text("later"), providertest.Text("later"), providertest.Text("later"), providertest.Text("later"))...)
	f.work(t)
	for i := 0; i < 4; i++ {
		f.prompt(t, "more "+bigText)
	}
	auto := 0
	for _, c := range f.capsules(t) {
		if c.Trigger != compaction.TriggerUser {
			auto++
		}
	}
	if auto == 0 {
		t.Fatal("the test needs an automatic compaction")
	}
	if got := mem.list(); len(got) != 0 {
		t.Fatalf("automatic capsules mirrored: %v", got)
	}
	if _, err := f.agent.SetAutoCompact(false); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		f.prompt(t, "later "+bigText)
	}
	r, err := f.agent.Compact(context.Background(), "")
	if err != nil || r.Outcome != compaction.OutcomeCompleted {
		t.Fatalf("explicit compact: %+v %v", r, err)
	}
	if got := mem.list(); len(got) != 1 || got[0] != r.CheckpointID {
		t.Fatalf("mirrored %v, want only %s", got, r.CheckpointID)
	}
	_ = session.TypeCapsule
}
