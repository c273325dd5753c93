package lazyregexp

import (
	"sync"
	"testing"
)

// panics reports whether f panics.
func panics(f func()) (did bool) {
	defer func() { did = recover() != nil }()
	f()
	return false
}

// TestCompiledOnFirstUse: outside tests New does not compile; the first use
// does, once, also when many goroutines use it at once.
func TestCompiledOnFirstUse(t *testing.T) {
	inTest = false
	defer func() { inTest = true }()
	bad := New(`(`)
	if bad.rx != nil {
		t.Fatal("New compiled outside a test")
	}
	if !panics(func() { bad.MatchString("x") }) {
		t.Fatal("a pattern that does not compile did not panic at first use")
	}
	good := New(`^a(b+)$`)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if m := good.FindStringSubmatch("abb"); len(m) != 2 || m[1] != "bb" {
				t.Errorf("FindStringSubmatch = %q", m)
			}
		}()
	}
	wg.Wait()
	if good.Regexp() != good.Regexp() || good.String() != `^a(b+)$` {
		t.Fatal("the compiled expression changed between uses")
	}
}

// TestCompiledAtOnceInTests: in a test binary New compiles at once, so a bad
// pattern fails its package's tests as regexp.MustCompile would.
func TestCompiledAtOnceInTests(t *testing.T) {
	if !inTest {
		t.Fatal("a test binary is not recognised as one")
	}
	if !panics(func() { New(`[`) }) {
		t.Fatal("New did not compile a bad pattern in a test")
	}
	if New(`x`).rx == nil {
		t.Fatal("New did not compile in a test")
	}
}
