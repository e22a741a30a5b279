package simcse

import (
	"math"
	"testing"

	"convrep/objectives/internal/testutil"

	"github.com/sugarme/gotch/ts"
)

// simcseByLoops is Gao et al. 2021 Eq. 4 written out, with cosine similarity and in-batch negatives.
func simcseByLoops(h1, h2 [][]float64, tau float64) float64 {
	cos := func(a, b []float64) float64 {
		var ab, aa, bb float64
		for k := range a {
			ab, aa, bb = ab+a[k]*b[k], aa+a[k]*a[k], bb+b[k]*b[k]
		}
		return ab / (math.Sqrt(aa) * math.Sqrt(bb))
	}
	total := 0.0
	for i := range h1 {
		den := 0.0
		for j := range h2 {
			den += math.Exp(cos(h1[i], h2[j]) / tau)
		}
		total += -math.Log(math.Exp(cos(h1[i], h2[i])/tau) / den)
	}
	return total / float64(len(h1))
}

func TestSimCSELossMatchesTheEquation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n, d   int
		h1, h2 []float64
		tau    float64
	}{
		{"hand-sized", 2, 2, []float64{1, 0, 0, 2}, []float64{3, 1, -1, 1}, 0.05},
		{"four sentences", 4, 3, testutil.Pseudo(12, 5, 1), testutil.Pseudo(12, 6, 1), 0.05},
		{"temperature one", 3, 5, testutil.Pseudo(15, 7, 3), testutil.Pseudo(15, 8, 3), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testutil.GradOn(t)
			shape := []int64{int64(tc.n), int64(tc.d)}
			h1, h2 := testutil.DoubleLeaf(tc.h1, shape), testutil.DoubleLeaf(tc.h2, shape)
			loss, err := Loss(h1, h2, tc.tau)
			if err != nil {
				t.Fatal(err)
			}
			got, want := loss.Float64Values()[0], simcseByLoops(testutil.Rows(tc.h1, tc.n, tc.d), testutil.Rows(tc.h2, tc.n, tc.d), tc.tau)
			if math.Abs(got-want) > 1e-10 {
				t.Errorf("loss %.15g, the equation gives %.15g", got, want)
			}
			testutil.CheckGradient(t, h1, func(x *ts.Tensor) *ts.Tensor { l, _ := Loss(x, h2.MustDetach(false), tc.tau); return l })
			testutil.CheckGradient(t, h2, func(x *ts.Tensor) *ts.Tensor { l, _ := Loss(h1.MustDetach(false), x, tc.tau); return l })
		})
	}
	// By hand: cos(h1_0, ·) = (3/√10, −1/√2), cos(h1_1, ·) = (1/√10, 1/√2).
	c := [][]float64{{3 / math.Sqrt(10), -1 / math.Sqrt(2)}, {1 / math.Sqrt(10), 1 / math.Sqrt(2)}}
	want := 0.0
	for i := range c {
		want += math.Log(math.Exp(c[i][0]/0.05)+math.Exp(c[i][1]/0.05)) - c[i][i]/0.05
	}
	want /= 2
	if got := simcseByLoops([][]float64{{1, 0}, {0, 2}}, [][]float64{{3, 1}, {-1, 1}}, 0.05); math.Abs(got-want) > 1e-12 {
		t.Errorf("the loops give %g, by hand %g", got, want)
	}
}

func TestSimCSELossRejects(t *testing.T) {
	one := testutil.DoubleLeaf([]float64{1, 2}, []int64{1, 2})
	two := testutil.DoubleLeaf([]float64{1, 2, 3, 4}, []int64{2, 2})
	three := testutil.DoubleLeaf(testutil.Pseudo(6, 1, 1), []int64{2, 3})
	for _, tc := range []struct {
		name   string
		h1, h2 *ts.Tensor
		tau    float64
	}{
		{"one sentence, no negative", one, one, 0.05},
		{"widths differ", two, three, 0.05},
		{"zero temperature", two, two, 0},
		{"negative temperature", two, two, -1},
	} {
		if _, err := Loss(tc.h1, tc.h2, tc.tau); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}
