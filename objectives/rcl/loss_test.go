package rcl

import (
	"math"
	"testing"

	"convrep/objectives/internal/testutil"

	"github.com/sugarme/gotch/ts"
)

// rclByLoops is TOD-BERT §2.2 written out: M = Softmax(C Rᵀ) row-wise, L = −(1/b) Σ_i log M_ii.
func rclByLoops(c, r [][]float64) float64 {
	total := 0.0
	for i := range c {
		scores := make([]float64, len(r))
		for j := range r {
			for k := range c[i] {
				scores[j] += c[i][k] * r[j][k]
			}
		}
		den := 0.0
		for _, s := range scores {
			den += math.Exp(s)
		}
		total += -math.Log(math.Exp(scores[i]) / den)
	}
	return total / float64(len(c))
}

func TestRCLLossMatchesTheEquation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		b, n, d int
		c, r    []float64
	}{
		{"hand-sized", 2, 2, 2, []float64{1, 0, 0, 1}, []float64{0.5, -1, 2, 0.25}},
		{"three dialogues", 3, 3, 4, testutil.Pseudo(12, 1, 1), testutil.Pseudo(12, 2, 1)},
		{"extra negative responses", 2, 5, 3, testutil.Pseudo(6, 3, 2), testutil.Pseudo(15, 4, 2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testutil.GradOn(t)
			c := testutil.DoubleLeaf(tc.c, []int64{int64(tc.b), int64(tc.d)})
			r := testutil.DoubleLeaf(tc.r, []int64{int64(tc.n), int64(tc.d)})
			loss, err := Loss(c, r)
			if err != nil {
				t.Fatal(err)
			}
			got, want := loss.Float64Values()[0], rclByLoops(testutil.Rows(tc.c, tc.b, tc.d), testutil.Rows(tc.r, tc.n, tc.d))
			if math.Abs(got-want) > 1e-12 {
				t.Errorf("loss %.15g, the equation gives %.15g", got, want)
			}
			testutil.CheckGradient(t, c, func(x *ts.Tensor) *ts.Tensor { l, _ := Loss(x, r.MustDetach(false)); return l })
			testutil.CheckGradient(t, r, func(x *ts.Tensor) *ts.Tensor { l, _ := Loss(c.MustDetach(false), x); return l })
		})
	}
	// The hand-sized case by hand: scores [[0.5, 2], [-1, 0.25]]; row 0 picks 0.5, row 1 picks 0.25.
	want := (math.Log(math.Exp(0.5)+math.Exp(2)) - 0.5 + math.Log(math.Exp(-1)+math.Exp(0.25)) - 0.25) / 2
	if got := rclByLoops([][]float64{{1, 0}, {0, 1}}, [][]float64{{0.5, -1}, {2, 0.25}}); math.Abs(got-want) > 1e-15 {
		t.Errorf("the loops give %g, by hand %g", got, want)
	}
}

func TestRCLLossRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		c, r []int64
	}{
		{"fewer responses than contexts", []int64{3, 4}, []int64{2, 4}},
		{"one pair, no negative", []int64{1, 4}, []int64{1, 4}},
		{"widths differ", []int64{2, 4}, []int64{2, 5}},
		{"not matrices", []int64{2, 4, 1}, []int64{2, 4}},
	} {
		c := testutil.DoubleLeaf(testutil.Pseudo(int(prod(tc.c)), 1, 1), tc.c)
		r := testutil.DoubleLeaf(testutil.Pseudo(int(prod(tc.r)), 2, 1), tc.r)
		if _, err := Loss(c, r); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if _, err := Loss(nil, nil); err == nil {
		t.Error("nil tensors: no error")
	}
}

func prod(xs []int64) int64 {
	p := int64(1)
	for _, x := range xs {
		p *= x
	}
	return p
}
