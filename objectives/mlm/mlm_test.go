package mlm

import (
	"math"
	"slices"
	"strings"
	"testing"

	"convrep/internal/torch"
	"convrep/objectives/inputs"
	"convrep/objectives/internal/testutil"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// mlmByLoops is the MLM loss written out: at each position with a label, −log softmax(logits)[label],
// averaged over those positions.
func mlmByLoops(logits []float64, v int, labels []int64) float64 {
	total, n := 0.0, 0
	for p, l := range labels {
		if l == inputs.IgnoreLabel {
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
	labels := []int64{inputs.IgnoreLabel, 7, inputs.IgnoreLabel, inputs.IgnoreLabel, 33, inputs.IgnoreLabel, inputs.IgnoreLabel, 12, 12, inputs.IgnoreLabel}
	lab := testutil.Labels(t, [][]int64{labels[:T], labels[T:]})
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
		if (l == inputs.IgnoreLabel) != (g[p] == 0) {
			t.Errorf("position %d (label %d): gradient norm %g", p, l, g[p])
		}
	}
}

// Loss is the encoder followed by LossFromHidden; a batch without a chosen token, a model without an
// MLM head and mismatched labels are errors.
func TestMLMLossEncoderAndErrors(t *testing.T) {
	m := testutil.TinyMLMBERT(t, 4, false)
	in := testutil.Input([][]int64{{2, 7, 9, 3}, {2, 11, 3}}, 4)
	const x = inputs.IgnoreLabel
	lab := testutil.Labels(t, [][]int64{{x, 7, x, x}, {x, 11, x, x}})
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
	none := testutil.Labels(t, [][]int64{{x, x, x, x}, {x, x, x, x}})
	if _, err := Loss(m, in, none, false); err == nil || !strings.Contains(err.Error(), "no token") {
		t.Errorf("a batch without a chosen token: %v", err)
	}
	if _, err := Loss(m, in, testutil.Labels(t, [][]int64{{x, 7, x}, {x, 11, x}}), false); err == nil {
		t.Error("labels of the wrong shape gave no error")
	}
	if _, err := Loss(m, in, inputs.Labels{}, false); err == nil {
		t.Error("no labels gave no error")
	}
	if _, err := Loss(testutil.TinyBERT(t, 1), in, lab, false); err == nil {
		t.Error("a model without an MLM head gave no error")
	}
}

// Under bf16 autocast the head's logits come out in bf16, and the log-softmax over the vocabulary and the
// mean run in fp32 on them: the loss equals the fp32 cross-entropy of those very logits. A log-softmax
// left in bf16 rounds each log-probability to 8 bits (0.03 at −5), which this test sees.
func TestMLMLogSoftmaxInFP32UnderAutocast(t *testing.T) {
	m := testutil.TinyMLMBERT(t, 6, false)
	const b, T, h = 2, 5, 16
	const x = inputs.IgnoreLabel
	lab := testutil.Labels(t, [][]int64{{x, 7, x, 30, 33}, {x, 12, 12, x, 41}})
	hidden := ts.MustOfSlice(testutil.Pseudo(b*T*h, 5, 3)).MustView([]int64{b, T, h}, true).MustTotype(gotch.Float, true)
	var got, want float64
	var dt gotch.DType
	err := torch.WithAutocast(gotch.CPU, gotch.BFloat16, func() error {
		loss, err := LossFromHidden(m, hidden, lab)
		if err != nil {
			return err
		}
		dt = loss.DType()
		got = loss.Float64Values(true)[0]
		chosen := hidden.MustView([]int64{b * T, h}, false).MustIndexSelect(0, lab.Pos, true)
		logits, err := m.MLMLogits(chosen)
		if err != nil {
			return err
		}
		if logits.DType() != gotch.BFloat16 {
			t.Fatalf("logits under autocast are %v: autocast did not act", logits.DType())
		}
		return torch.WithoutAutocast(func() error {
			logp := logits.MustTotype(gotch.Float, true).MustLogSoftmax(1, gotch.Float, true)
			want = logp.MustNLLLoss(lab.Target, true).Float64Values(true)[0]
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("loss under bf16 autocast %.7f (%v), fp32 cross-entropy of its bf16 logits %.7f", got, dt, want)
	if dt != gotch.Float || math.Abs(got-want) > 1e-6*math.Max(1, want) {
		t.Errorf("loss %.7f (%v), want the fp32 cross-entropy %.7f (Float)", got, dt, want)
	}
}
