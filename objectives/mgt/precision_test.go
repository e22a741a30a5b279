package mgt

import (
	"runtime"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/objectives"
	"convrep/objectives/internal/testutil"
)

// MGT under bf16 autocast returns a Float loss within bf16's precision of its fp32 loss on the same batch and
// weights (as every objective's, objectives' TestLossesAreFP32UnderBF16Autocast).
func TestLossIsFP32UnderBF16Autocast(t *testing.T) {
	m := testutil.TinyBERT(t, 21)
	o, err := testutil.New("mgt", m, objectives.Settings{"variant": "mgt", "segment": int64(2), "models": int64(3), "candidates": int64(2), "bucket_sample": int64(10)})
	if err != nil {
		t.Fatal(err)
	}
	batch := Batch{Context: testutil.Input(testutil.Queries[:2], 6), Candidates: testutil.Input(testutil.Responses, 6), K: 2}
	testutil.CheckLossUnderAutocast(t, "mgt", o, batch)
}

// DualEncoderLoss's own arithmetic runs in fp32 under autocast (as the other objectives' losses,
// objectives' TestLossArithmeticIsFP32, whose inputs these are).
func TestDualEncoderLossArithmeticIsFP32(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := torch.ManualSeed(3); err != nil {
		t.Fatal(err)
	}
	a := ts.MustRandn([]int64{8, 16}, gotch.Float, gotch.CPU)
	ts.MustRandn([]int64{8, 16}, gotch.Float, gotch.CPU).MustDrop() // the other losses' second input
	c := ts.MustRandn([]int64{4, 16}, gotch.Float, gotch.CPU)
	testutil.CheckArithmeticFP32(t, "mgt.DualEncoderLoss", func() (*ts.Tensor, error) {
		l, s, err := DualEncoderLoss(c, a, 2)
		torch.Drop(s)
		return l, err
	})
}
