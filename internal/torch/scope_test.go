package torch

import (
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

func ones(t *testing.T) *ts.Tensor {
	t.Helper()
	x, err := ts.Ones([]int64{4}, gotch.Float, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func TestScopeFreesWhatItsGoroutineMade(t *testing.T) {
	before := ts.LiveTensors()
	s := NewScope()
	a, b := ones(t), ones(t)
	c := a.MustAdd(b, false)
	b.MustDrop() // dropped already: Free skips it
	if got := ts.LiveTensors() - before; got != 2 {
		t.Fatalf("%d live handles inside the scope, want 2 (a and c)", got)
	}
	if err := s.Free(); err != nil {
		t.Fatal(err)
	}
	if got := ts.LiveTensors() - before; got != 0 {
		t.Fatalf("%d handles made in the scope outlive it", got)
	}
	for _, x := range []*ts.Tensor{a, b, c} {
		if x.Ctensor() != nil {
			t.Fatal("a tensor of a freed scope still has its handle")
		}
	}
	if err := s.Free(); err != nil || ts.LiveTensors() != before {
		t.Fatalf("second Free: %v, live %d, want %d", err, ts.LiveTensors(), before)
	}
}

func TestScopeKeep(t *testing.T) {
	before := ts.LiveTensors()
	outer := NewScope()
	inner := NewScope()
	x, y := ones(t), ones(t)
	inner.Keep(y)
	if err := inner.Free(); err != nil {
		t.Fatal(err)
	}
	if x.Ctensor() != nil || y.Ctensor() == nil {
		t.Fatalf("after the inner scope: x freed %v (want true), y freed %v (want false)", x.Ctensor() == nil, y.Ctensor() == nil)
	}
	if v := y.Float64Values(); len(v) != 4 || v[0] != 1 {
		t.Fatalf("kept tensor reads %v", v)
	}
	if err := outer.Free(); err != nil {
		t.Fatal(err)
	}
	if y.Ctensor() != nil || ts.LiveTensors() != before {
		t.Fatalf("the outer scope did not free what the inner one kept (live %d, want %d)", ts.LiveTensors(), before)
	}

	s := NewScope()
	z := ones(t)
	s.Keep(z) // no enclosing scope: the caller owns z
	if err := s.Free(); err != nil {
		t.Fatal(err)
	}
	if z.Ctensor() == nil {
		t.Fatal("a kept tensor was freed")
	}
	z.MustDrop()
	if ts.LiveTensors() != before {
		t.Fatalf("live %d, want %d", ts.LiveTensors(), before)
	}
}

func TestScopeIgnoresOtherGoroutines(t *testing.T) {
	s := NewScope()
	made := make(chan *ts.Tensor)
	go func() {
		x, err := ts.Ones([]int64{2}, gotch.Float, gotch.CPU)
		if err != nil {
			panic(err)
		}
		made <- x
	}()
	x := <-made
	if err := s.Free(); err != nil {
		t.Fatal(err)
	}
	if x.Ctensor() == nil {
		t.Fatal("a scope freed a tensor another goroutine made")
	}
	x.MustDrop()
}

func TestScopeFreedOutOfOrder(t *testing.T) {
	outer := NewScope()
	inner := NewScope()
	if err := outer.Free(); err == nil {
		t.Fatal("freeing a scope before the scope it encloses returned no error")
	}
	if err := inner.Free(); err != nil {
		t.Fatal(err)
	}
	if _, ok := scopes.Load(outer.tid); ok {
		t.Fatal("a freed scope is still registered for its thread")
	}
}

func TestPersist(t *testing.T) {
	before := ts.LiveTensors()
	free := ones(t)
	Persist(free) // outside any scope: nothing to do
	outer := NewScope()
	inner := NewScope()
	state, tmp := ones(t), ones(t)
	Persist(state)
	inner.Keep(tmp) // now the outer scope's
	Persist(tmp)
	if err := inner.Free(); err != nil {
		t.Fatal(err)
	}
	if err := outer.Free(); err != nil {
		t.Fatal(err)
	}
	if state.Ctensor() == nil || tmp.Ctensor() == nil {
		t.Fatal("a persisted tensor was freed by a scope")
	}
	live := ts.LiveTensors() - before
	Drop(state, tmp, free)
	if live != 3 || ts.LiveTensors() != before {
		t.Fatalf("live handles %d after the scopes (want 3), %d after the drops (want 0)", live, ts.LiveTensors()-before)
	}
}
