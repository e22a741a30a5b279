package futuretod

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"convrep/objectives/internal/testutil"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// ftMatrix makes a [len(v), len(v[0])] tensor of v in dtype, tracking gradients when grad is set.
func ftMatrix(v [][]float64, dtype gotch.DType, grad bool) *ts.Tensor {
	var flat []float64
	for _, r := range v {
		flat = append(flat, r...)
	}
	x := ts.MustOfSlice(flat).MustView([]int64{int64(len(v)), int64(len(v[0]))}, true).MustTotype(dtype, true)
	if grad {
		x.MustRequiresGrad_(true)
	}
	return x
}

// distillByLoops is Eq. 2 written out: (1/B) Σ_b Σ_l Σ_h (s − t)², divided by H for MSE.
func distillByLoops(s, t [][][]float64, d Distance) float64 {
	sum := 0.0
	for l := range s {
		for b := range s[l] {
			for h := range s[l][b] {
				diff := s[l][b][h] - t[l][b][h]
				sum += diff * diff
			}
		}
	}
	sum /= float64(len(s[0]))
	if d == MSE {
		sum /= float64(len(s[0][0]))
	}
	return sum
}

// Two layers of two examples of three hidden units, written by hand.
var (
	handStudent = [][][]float64{
		{{1, 2, 0}, {0, -1, 3}},
		{{0.5, 0.25, -2}, {4, 0, 1}},
	}
	handTeacher = [][][]float64{
		{{0.5, 2, 1}, {1, 1, 1}},
		{{0.5, -0.75, 0}, {1, 2, -1}},
	}
)

func TestDistillLossMatchesEquation2(t *testing.T) {
	testutil.GradOn(t)
	// By hand: layer 1 gives (0.25+0+1) + (1+4+4) = 10.25, layer 2 (0+1+4) + (9+4+4) = 22; over B = 2 examples.
	if got := distillByLoops(handStudent, handTeacher, SquaredL2); got != (10.25+22)/2 {
		t.Fatalf("the loops give %v, the hand sum %v", got, (10.25+22)/2)
	}
	for _, tc := range []struct {
		name   string
		dist   Distance
		dtype  gotch.DType
		layers int // the top layers used: the last ones of handStudent
		tol    float64
	}{
		{"squared_l2 float32", SquaredL2, gotch.Float, 2, 1e-5},
		{"squared_l2 float64", SquaredL2, gotch.Double, 2, 1e-12},
		{"mse float64", MSE, gotch.Double, 2, 1e-12},
		{"top layer only", SquaredL2, gotch.Double, 1, 1e-12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, te := handStudent[2-tc.layers:], handTeacher[2-tc.layers:]
			var st, tt []*ts.Tensor
			for l := range s {
				st, tt = append(st, ftMatrix(s[l], tc.dtype, true)), append(tt, ftMatrix(te[l], tc.dtype, true))
			}
			loss, err := DistillLoss(st, tt, tc.dist)
			if err != nil {
				t.Fatal(err)
			}
			want := distillByLoops(s, te, tc.dist)
			if got := loss.Float64Values()[0]; math.Abs(got-want) > tc.tol*math.Max(1, want) {
				t.Fatalf("loss %v, Eq. 2 by loops %v", got, want)
			}
			loss.MustBackward()
			// d/ds of (1/B) Σ (s − t)² is 2(s − t)/B (and /H for MSE); the teacher gets nothing.
			for l := range s {
				g := st[l].MustGrad(false).Float64Values()
				for b := range s[l] {
					for h := range s[l][b] {
						want := 2 * (s[l][b][h] - te[l][b][h]) / float64(len(s[l]))
						if tc.dist == MSE {
							want /= float64(len(s[l][b]))
						}
						if got := g[b*len(s[l][b])+h]; math.Abs(got-want) > tc.tol*10 {
							t.Errorf("layer %d grad[%d][%d] = %v, want %v", l, b, h, got, want)
						}
					}
				}
				if tg := tt[l].MustGrad(false); tg.MustDefined() && testutil.AbsSum(t, tg) != 0 {
					t.Errorf("layer %d: the teacher's side received a gradient", l)
				}
			}
		})
	}
}

// The gradient of DistillLoss by backward agrees with central finite differences of DistillLoss itself, in
// float64, on random inputs of three layers.
func TestDistillLossGradientByFiniteDifferences(t *testing.T) {
	testutil.GradOn(t)
	g := rand.New(rand.NewPCG(1, 2))
	const layers, batch, hidden = 3, 4, 5
	random := func() [][][]float64 {
		out := make([][][]float64, layers)
		for l := range out {
			out[l] = make([][]float64, batch)
			for b := range out[l] {
				out[l][b] = make([]float64, hidden)
				for h := range out[l][b] {
					out[l][b][h] = g.NormFloat64()
				}
			}
		}
		return out
	}
	s, te := random(), random()
	for _, dist := range []Distance{SquaredL2, MSE} {
		eval := func(s [][][]float64, grad bool) (float64, []*ts.Tensor) {
			var st, tt []*ts.Tensor
			for l := range s {
				st, tt = append(st, ftMatrix(s[l], gotch.Double, grad)), append(tt, ftMatrix(te[l], gotch.Double, false))
			}
			loss, err := DistillLoss(st, tt, dist)
			if err != nil {
				t.Fatal(err)
			}
			if grad {
				loss.MustBackward()
			}
			return loss.Float64Values()[0], st
		}
		_, st := eval(s, true)
		const eps = 1e-6
		worst := 0.0
		for l := range s {
			analytic := st[l].MustGrad(false).Float64Values()
			for b := range s[l] {
				for h := range s[l][b] {
					keep := s[l][b][h]
					s[l][b][h] = keep + eps
					up, _ := eval(s, false)
					s[l][b][h] = keep - eps
					down, _ := eval(s, false)
					s[l][b][h] = keep
					numeric := (up - down) / (2 * eps)
					worst = math.Max(worst, math.Abs(numeric-analytic[b*hidden+h]))
				}
			}
		}
		t.Logf("%s: max |analytic − numeric| = %.3g", dist, worst)
		if worst > 1e-6 {
			t.Errorf("%s: gradient differs from finite differences by %g", dist, worst)
		}
	}
}

func TestDistillLossRejects(t *testing.T) {
	x := func(r, c int64) *ts.Tensor { return ts.MustOnes([]int64{r, c}, gotch.Float, gotch.CPU) }
	for _, tc := range []struct {
		name    string
		s, te   []*ts.Tensor
		dist    Distance
		wantErr string
	}{
		{"no layers", nil, nil, SquaredL2, "at least one"},
		{"layer counts differ", []*ts.Tensor{x(2, 3), x(2, 3)}, []*ts.Tensor{x(2, 3)}, SquaredL2, "2 student layers and 1"},
		{"shapes differ", []*ts.Tensor{x(2, 3)}, []*ts.Tensor{x(2, 4)}, SquaredL2, "[2 3] and teacher [2 4]"},
		{"not a matrix", []*ts.Tensor{ts.MustOnes([]int64{3}, gotch.Float, gotch.CPU)}, []*ts.Tensor{ts.MustOnes([]int64{3}, gotch.Float, gotch.CPU)}, SquaredL2, "[batch, hidden]"},
		{"dtypes differ", []*ts.Tensor{x(2, 3)}, []*ts.Tensor{ts.MustOnes([]int64{2, 3}, gotch.Double, gotch.CPU)}, SquaredL2, "dtypes"},
		{"missing layer", []*ts.Tensor{nil}, []*ts.Tensor{x(2, 3)}, SquaredL2, "missing"},
		{"unknown distance", []*ts.Tensor{x(2, 3)}, []*ts.Tensor{x(2, 3)}, "cosine", "cosine"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DistillLoss(tc.s, tc.te, tc.dist)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.wantErr)
			}
		})
	}
}
