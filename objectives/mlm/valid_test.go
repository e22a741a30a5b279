package mlm

import (
	"math"
	"testing"

	"convrep/objectives/inputs"
	"convrep/objectives/internal/testutil"
)

// ValidationLoss is the summed NLL of the masked tokens in eval mode and their number: N times the mean
// that Loss gives without dropout, with no graph; its mean's exponential is the perplexity.
func TestMLMValidationLoss(t *testing.T) {
	m := testutil.TinyMLMBERT(t, 4, false)
	o := &mlm{model: m}
	in := testutil.Input([][]int64{{2, 7, 9, 3}, {2, 11, 3}}, 4)
	const x = inputs.IgnoreLabel
	lab := testutil.Labels(t, [][]int64{{x, 7, 9, x}, {x, 11, x, x}})
	sum, n, err := o.ValidationLoss(Batch{Input: in, Labels: lab})
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 || sum.MustRequiresGrad() {
		t.Fatalf("count %d (want 3), graph %v", n, sum.MustRequiresGrad())
	}
	mean, err := Loss(m, in, lab, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sum.Float64Values()[0], 3*mean.Float64Values()[0]; math.Abs(got-want) > 1e-6*want || !(want > 0) {
		t.Fatalf("summed NLL %v, want 3 × %v", got, want/3)
	}
}
