package ensemble

import (
	"math"
	"testing"
)

// Eq. 7 averages the members' softmaxes, not their scores: two members, one context, three candidates,
// against the formula written out.
func TestAverageIsEq7(t *testing.T) {
	a1, a2 := []float64{2, 0, -1}, []float64{-1, 3, 0}
	got, err := Average([][][]float64{{Softmax(a1)}, {Softmax(a2)}})
	if err != nil {
		t.Fatal(err)
	}
	z1 := math.Exp(a1[0]) + math.Exp(a1[1]) + math.Exp(a1[2])
	z2 := math.Exp(a2[0]) + math.Exp(a2[1]) + math.Exp(a2[2])
	for i := range a1 {
		want := (math.Exp(a1[i])/z1 + math.Exp(a2[i])/z2) / 2
		if math.Abs(got[0][i]-want) > 1e-12 {
			t.Errorf("candidate %d: %.12g, want %.12g", i, got[0][i], want)
		}
	}
}

func TestAverageRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		per  [][][]float64
	}{
		{"no members", nil},
		{"different candidate counts", [][][]float64{{{0.5, 0.5}}, {{1}}}},
		{"different context counts", [][][]float64{{{1}, {1}}, {{1}}}},
	} {
		if _, err := Average(c.per); err == nil {
			t.Errorf("%s: averaged", c.name)
		}
	}
}

// Softmax stays finite where exp alone would overflow, and sums to one.
func TestSoftmaxLargeScores(t *testing.T) {
	p := Softmax([]float64{1000, 999, -1000})
	sum := 0.0
	for _, v := range p {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("softmax %v", p)
		}
		sum += v
	}
	if math.Abs(sum-1) > 1e-12 || math.Abs(p[0]-1/(1+math.Exp(-1))) > 1e-12 {
		t.Fatalf("softmax %v (sum %v)", p, sum)
	}
}
