package trainer

import (
	"math"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/objectives"
)

// The window sums each metric over the micro-batches that reported it and gives their means at one read,
// then starts afresh; a metric it cannot add is reported by that read.
func TestObjWindowMeans(t *testing.T) {
	metric := func(v float64) *ts.Tensor { return objectives.Known(v, gotch.CPU) }
	var w objWindow
	if m, err := w.mean(); m != nil || err != nil {
		t.Fatalf("empty window: %v, %v", m, err)
	}
	w.add(map[string]*ts.Tensor{"a": metric(1), "b": metric(10)})
	w.add(map[string]*ts.Tensor{"a": metric(2)})
	w.add(nil)
	w.add(map[string]*ts.Tensor{"a": metric(6), "b": metric(20)})
	got, err := w.mean()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || math.Abs(got["a"]-3) > 1e-12 || math.Abs(got["b"]-15) > 1e-12 {
		t.Errorf("means %v, want a 3 (of 3 batches), b 15 (of 2)", got)
	}
	w.add(map[string]*ts.Tensor{"a": metric(5)})
	if got, err := w.mean(); err != nil || len(got) != 1 || got["a"] != 5 {
		t.Errorf("after a read: %v, %v; want a window of its own, a = 5", got, err)
	}
	w.add(map[string]*ts.Tensor{"a": metric(1)})
	w.add(map[string]*ts.Tensor{"a": ts.MustOnes([]int64{3}, gotch.Float, gotch.CPU)}) // not 0-dim
	if _, err := w.mean(); err == nil || !strings.Contains(err.Error(), "objective metrics") {
		t.Errorf("a metric of the wrong shape: %v", err)
	}
	if m, err := w.mean(); m != nil || err != nil {
		t.Errorf("after the failed read the window is not empty: %v, %v", m, err)
	}
}
