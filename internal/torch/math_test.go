package torch

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

func TestScopedKeepsOnlyWhatItHandsOut(t *testing.T) {
	in := ts.MustOfSlice([]float64{3, 4, 0, 1}).MustView([]int64{2, 2}, true)
	defer in.MustDrop()
	before := ts.LiveTensors()
	var norm, same *ts.Tensor
	err := Scoped("unit rows", func(keep Keep) error {
		x := Of(in)
		norm = keep(x.Div(x.Norm(1).ClampMin(1e-12)))
		same = keep(x) // an input passed through comes back as a handle of its own
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := ts.LiveTensors() - before; got != 2 {
		t.Fatalf("%d handles outlive the scope, want 2 (the kept ones)", got)
	}
	if same == in {
		t.Fatal("a kept input came back as the caller's own handle")
	}
	want := []float64{0.6, 0.8, 0, 1}
	for i, v := range norm.Float64Values() {
		if math.Abs(v-want[i]) > 1e-15 {
			t.Fatalf("unit rows %v, want %v", norm.Float64Values(), want)
		}
	}
	Drop(norm, same)
	if in.Ctensor() == nil {
		t.Fatal("dropping the handle a kept input came back as freed the input")
	}
}

func TestScopedErrorsFreeEverything(t *testing.T) {
	before := ts.LiveTensors()
	for _, tc := range []struct {
		name string
		fn   func(keep Keep) error
		want string
	}{
		{"a panic", func(keep Keep) error {
			keep(Arange(3, gotch.Float, gotch.CPU))
			a, b := Zeros([]int64{2, 3}, gotch.Float, gotch.CPU), Zeros([]int64{2, 3}, gotch.Float, gotch.CPU)
			a.Mm(b) // [2,3]·[2,3]: libtorch refuses
			return nil
		}, "scores: "},
		{"an error", func(keep Keep) error {
			keep(Arange(3, gotch.Float, gotch.CPU))
			return errors.New("no negatives")
		}, "no negatives"},
	} {
		err := Scoped("scores", tc.fn)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
		if got := ts.LiveTensors() - before; got != 0 {
			t.Fatalf("%s: %d handles outlive a failed scope", tc.name, got)
		}
	}
}

func TestScopedNestsInAScope(t *testing.T) {
	before := ts.LiveTensors()
	outer := NewScope()
	var loss *ts.Tensor
	err := Scoped("loss", func(keep Keep) error {
		x := Arange(4, gotch.Double, gotch.CPU)
		loss = keep(x.Square().Mean(gotch.Double))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := ts.LiveTensors() - before; got != 1 {
		t.Fatalf("%d handles after the inner scope, want 1 (the loss)", got)
	}
	if v := loss.Float64Values(); v[0] != 3.5 {
		t.Fatalf("mean of squares of 0..3 is %v, want 3.5", v[0])
	}
	if err := outer.Free(); err != nil {
		t.Fatal(err)
	}
	if loss.Ctensor() != nil || ts.LiveTensors() != before {
		t.Fatal("the enclosing scope did not take the kept loss")
	}
}

// TestOpsMatchGotch checks each op against gotch's own call on the same input: the same values bit for bit.
func TestOpsMatchGotch(t *testing.T) {
	raw := ts.MustOfSlice([]float64{0.5, -1.25, 2, 3.5, -0.75, 1}).MustView([]int64{2, 3}, true)
	defer raw.MustDrop()
	x := Of(raw)
	s := NewScope()
	defer s.Free()
	f := ts.FloatScalar
	for _, tc := range []struct {
		name      string
		got, want *ts.Tensor
	}{
		{"mm", x.Mm(x.T()).Raw(), raw.MustMm(raw.MustT(false), false)},
		{"logsumexp", x.Logsumexp(1).Raw(), raw.MustLogsumexp([]int64{1}, false, false)},
		{"sum dim", x.SumDim(0, true, gotch.Double).Raw(), raw.MustSumDimIntlist([]int64{0}, true, gotch.Double, false)},
		{"norm", x.Norm(-1).Raw(), raw.MustNormScalaroptDim(f(2), []int64{-1}, true, false)},
		{"softplus", x.DivScalar(0.07).Softplus().Raw(), raw.MustDivScalar(f(0.07), false).MustSoftplus(true)},
		{"log softmax", x.LogSoftmax(1, gotch.Double).Raw(), raw.MustLogSoftmax(1, gotch.Double, false)},
		{"masked fill", x.MaskedFill(x.Gt(1), math.Inf(-1)).Raw(), raw.MustMaskedFill(raw.MustGt(f(1), false), f(math.Inf(-1)), false)},
		{"cat", Cat(0, x, x.Abs()).Raw(), ts.MustCat([]*ts.Tensor{raw, raw.MustAbs(false)}, 0)},
	} {
		g, w := tc.got.Float64Values(), tc.want.Float64Values()
		if len(g) != len(w) {
			t.Fatalf("%s: %d values, want %d", tc.name, len(g), len(w))
		}
		for i := range g {
			if math.Float64bits(g[i]) != math.Float64bits(w[i]) {
				t.Fatalf("%s: %v, gotch gives %v", tc.name, g, w)
			}
		}
	}
}

func TestTermFreesItsIntermediatesAtOnce(t *testing.T) {
	s := NewScope()
	defer s.Free()
	x := Arange(6, gotch.Double, gotch.CPU)
	before := ts.LiveTensors()
	y := Term(func() Tensor { return x.MulScalar(2).AddScalar(1).Square() })
	if got := ts.LiveTensors() - before; got != 1 {
		t.Fatalf("%d handles after the term, want 1 (its result)", got)
	}
	if v := y.Raw().Float64Values(); v[5] != 121 {
		t.Fatalf("(2·5+1)² = %v, want 121", v[5])
	}
	if s.holds(y.Raw()) == false {
		t.Fatal("the term's result is not the enclosing scope's")
	}
}
