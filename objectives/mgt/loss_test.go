package mgt

import (
	"math"
	"testing"

	"convrep/objectives/internal/testutil"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// mgtEq6 is Eq. 6 of MGT by plain loops: for each context i, α_ij = Σ_d c_id·r_(ik+j)d and
// ℓ_i = −log(exp(α_i0) / (exp(α_i0) + Σ_{j≥1} exp(α_ij))); the loss is the mean of ℓ_i.
func mgtEq6(c, r []float64, b, k, d int) float64 {
	total := 0.0
	for i := 0; i < b; i++ {
		alpha := make([]float64, k)
		for j := 0; j < k; j++ {
			for x := 0; x < d; x++ {
				alpha[j] += c[i*d+x] * r[(i*k+j)*d+x]
			}
		}
		den := math.Exp(alpha[0])
		for j := 1; j < k; j++ {
			den += math.Exp(alpha[j])
		}
		total += -math.Log(math.Exp(alpha[0]) / den)
	}
	return total / float64(b)
}

func leafOf(vals []float64, shape []int64) *ts.Tensor {
	x := ts.MustOfSlice(append([]float64(nil), vals...)).MustView(shape, true)
	x.MustRequiresGrad_(true)
	return x
}

func gradValues(t *testing.T, x *ts.Tensor) []float64 {
	t.Helper()
	g := x.MustGrad(false)
	defer g.MustDrop()
	return g.MustTotype(gotch.Double, false).Float64Values(true)
}

func TestDualEncoderLossMatchesEq6(t *testing.T) {
	testutil.GradOn(t)
	for _, tc := range []struct {
		name    string
		b, k, d int
		c, r    []float64
	}{
		{name: "one context, two candidates", b: 1, k: 2, d: 2,
			c: []float64{1, 0}, r: []float64{2, 0, 1, 5}},
		{name: "two contexts, three candidates", b: 2, k: 3, d: 3,
			c: []float64{0.5, -1, 2, 1, 1, 0},
			r: []float64{1, 0, 1, 0, 1, 0, -1, 2, 0.5, 0.2, 0.3, -0.4, 3, -1, 0, 0, 0, 1}},
		{name: "ground truth far below a negative", b: 2, k: 4, d: 2,
			c: []float64{3, -2, -1, 4},
			r: []float64{-5, 0, 5, 1, 0, 0, 1, 1, 2, -3, 0, 9, 1, 1, -2, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := leafOf(tc.c, []int64{int64(tc.b), int64(tc.d)})
			r := leafOf(tc.r, []int64{int64(tc.b * tc.k), int64(tc.d)})
			loss, scores, err := DualEncoderLoss(c, r, int64(tc.k))
			if err != nil {
				t.Fatal(err)
			}
			defer scores.MustDrop()
			got := loss.Float64Values()[0]
			want := mgtEq6(tc.c, tc.r, tc.b, tc.k, tc.d)
			if math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
				t.Fatalf("loss %.15g, Eq. 6 by loops gives %.15g", got, want)
			}
			if err := loss.Backward(); err != nil {
				t.Fatal(err)
			}
			loss.MustDrop()
			// Central differences of the loop reference, in float64.
			const h = 1e-6
			for _, side := range []struct {
				name string
				x    *ts.Tensor
				vals []float64
			}{{"contexts", c, tc.c}, {"candidates", r, tc.r}} {
				grad := gradValues(t, side.x)
				for i := range side.vals {
					plus := append([]float64(nil), side.vals...)
					minus := append([]float64(nil), side.vals...)
					plus[i] += h
					minus[i] -= h
					var fp, fm float64
					if side.name == "contexts" {
						fp, fm = mgtEq6(plus, tc.r, tc.b, tc.k, tc.d), mgtEq6(minus, tc.r, tc.b, tc.k, tc.d)
					} else {
						fp, fm = mgtEq6(tc.c, plus, tc.b, tc.k, tc.d), mgtEq6(tc.c, minus, tc.b, tc.k, tc.d)
					}
					fd := (fp - fm) / (2 * h)
					if math.Abs(grad[i]-fd) > 1e-6 {
						t.Errorf("d loss / d %s[%d] = %.9g, finite differences give %.9g", side.name, i, grad[i], fd)
					}
				}
			}
			c.MustDrop()
			r.MustDrop()
		})
	}
}

func TestDualEncoderLossRejects(t *testing.T) {
	c := ts.MustOnes([]int64{2, 3}, gotch.Double, gotch.CPU)
	defer c.MustDrop()
	for _, tc := range []struct {
		name  string
		shape []int64
		k     int64
	}{
		{"one candidate", []int64{2, 3}, 1},
		{"rows not B·k", []int64{5, 3}, 3},
		{"dims differ", []int64{6, 4}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.MustOnes(tc.shape, gotch.Double, gotch.CPU)
			defer r.MustDrop()
			if _, _, err := DualEncoderLoss(c, r, tc.k); err == nil {
				t.Fatalf("no error for candidates %v with k=%d", tc.shape, tc.k)
			}
		})
	}
}
