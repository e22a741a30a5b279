package mlm

import (
	"math"
	"slices"
	"testing"

	"convrep/objectives"
	"convrep/objectives/internal/testutil"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// mlmByLoops is the MLM loss written out: at each position with a label, −log softmax(logits)[label],
// averaged over those positions.
func mlmByLoops(logits []float64, v int, labels []int64) float64 {
	total, n := 0.0, 0
	for p, l := range labels {
		if l == objectives.IgnoreLabel {
			continue
		}
		row := logits[p*v : (p+1)*v]
		mx := slices.Max(row)
		den := 0.0
		for _, x := range row {
			den += math.Exp(x - mx)
		}
		total += -(row[l] - mx - math.Log(den))
		n++
	}
	return total / float64(n)
}

// The loss counts the chosen positions only, each by −log p(original token), with the head's logits; its
// gradient with respect to the hidden states matches finite differences in float64.
func TestMLMLossMatchesTheEquation(t *testing.T) {
	m := testutil.TinyMLMBERT(t, 3, true)
	const b, T, h, v = 2, 5, 16, 50
	labels := []int64{objectives.IgnoreLabel, 7, objectives.IgnoreLabel, objectives.IgnoreLabel, 33, objectives.IgnoreLabel, objectives.IgnoreLabel, 12, 12, objectives.IgnoreLabel}
	lab := ts.MustOfSlice(labels).MustView([]int64{b, T}, true)
	hidden := testutil.DoubleLeaf(testutil.Pseudo(b*T*h, 11, 2), []int64{b, T, h})

	loss, err := LossFromHidden(m, hidden, lab)
	if err != nil {
		t.Fatal(err)
	}
	if loss.DType() != gotch.Double {
		t.Fatalf("loss dtype %v, want float64", loss.DType())
	}
	logits, err := m.MLMLogits(hidden.MustView([]int64{b * T, h}, false))
	if err != nil {
		t.Fatal(err)
	}
	want := mlmByLoops(logits.MustDetach(false).Float64Values(), v, labels)
	if got := loss.Float64Values()[0]; math.Abs(got-want) > 1e-12 {
		t.Errorf("loss %.15g, the equation gives %.15g", got, want)
	}
	testutil.CheckGradient(t, hidden, func(x *ts.Tensor) *ts.Tensor {
		l, err := LossFromHidden(m, x, lab)
		if err != nil {
			t.Fatal(err)
		}
		return l
	})
	// Unchosen positions do not move the loss: their gradient is zero.
	g := hidden.MustGrad(false).MustView([]int64{b * T, h}, false).MustAbs(true).MustSumDimIntlist([]int64{1}, false, gotch.Double, true).Float64Values()
	for p, l := range labels {
		if (l == objectives.IgnoreLabel) != (g[p] == 0) {
			t.Errorf("position %d (label %d): gradient norm %g", p, l, g[p])
		}
	}
}

// Loss is the encoder followed by LossFromHidden; a batch without a chosen token, a model without an
// MLM head and mismatched labels are errors.
func TestMLMLossEncoderAndErrors(t *testing.T) {
	m := testutil.TinyMLMBERT(t, 4, false)
	in := testutil.Input([][]int64{{2, 7, 9, 3}, {2, 11, 3}}, 4)
	lab := ts.MustOfSlice([]int64{objectives.IgnoreLabel, 7, objectives.IgnoreLabel, objectives.IgnoreLabel, objectives.IgnoreLabel, 11, objectives.IgnoreLabel, objectives.IgnoreLabel}).MustView([]int64{2, 4}, true)
	loss, err := Loss(m, in, lab, false)
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Forward(in, false)
	if err != nil {
		t.Fatal(err)
	}
	again, err := LossFromHidden(m, out.Last, lab)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := loss.Float64Values()[0], again.Float64Values()[0]; a != b || !(a > 0) {
		t.Errorf("Loss %g, from the encoder's output %g", a, b)
	}
	none := ts.MustFull([]int64{2, 4}, ts.IntScalar(objectives.IgnoreLabel), gotch.Int64, gotch.CPU)
	if _, err := Loss(m, in, none, false); err == nil {
		t.Error("a batch without a chosen token gave no error")
	}
	if _, err := Loss(m, in, ts.MustOfSlice([]int64{1, 2}), false); err == nil {
		t.Error("labels of the wrong shape gave no error")
	}
	if _, err := Loss(testutil.TinyBERT(t, 1), in, lab, false); err == nil {
		t.Error("a model without an MLM head gave no error")
	}
}
