package host

import (
	"fmt"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// The row functions against libtorch's composite ops, in float32: dropout as x·(mask/(1-p)) with Keep's
// mask, then torch's layer_norm, and gelu(x + bias, approximate="none"); gradients by autograd.

func tensor(v []float32, s Shape, grad bool) *ts.Tensor {
	x := ts.MustOfSlice(v).MustView([]int64{int64(s.Rows), int64(s.Cols)}, true)
	if grad {
		x = x.MustSetRequiresGrad(true, true)
	}
	return x
}

func vector(v []float32, grad bool) *ts.Tensor {
	x := ts.MustOfSlice(v)
	if grad {
		x = x.MustSetRequiresGrad(true, true)
	}
	return x
}

func grad(x *ts.Tensor) []float64 {
	g := x.MustGrad(false)
	defer g.MustDrop()
	return g.Float64Values()
}

// sumParts adds up the [blocks, cols] partial column sums.
func sumParts(part []float32, cols int) []float64 {
	out := make([]float64, cols)
	for i, v := range part {
		out[i%cols] += float64(v)
	}
	return out
}

func TestDropAddLNMatchesTorch(t *testing.T) {
	for _, tc := range lnCases(t) {
		for _, lanes := range []int{1, 32} {
			t.Run(fmt.Sprintf("%s/lanes %d", tc.name, lanes), func(t *testing.T) { checkLNTorch(t, tc, lanes) })
		}
	}
}

func checkLNTorch(t *testing.T, tc lnCase, lanes int) {
	s, n := tc.shape, len(tc.x)
	x, resid := float32s(tc.x), float32s(tc.resid)
	dy := float32s(values(newRand(tc.name), n, 1, 0))
	keep := Keep(tc.drop.Seed, tc.drop.Offset, 0, n, tc.drop.P)
	mask := make([]float32, n)
	for i, k := range keep {
		if k {
			mask[i] = 1 / (1 - tc.drop.P)
		}
	}

	xt, rt := tensor(x, s, true), tensor(resid, s, true)
	gt, bt := vector(tc.gamma, true), vector(tc.beta, true)
	mt, dyt := tensor(mask, s, false), tensor(dy, s, false)
	for _, v := range []*ts.Tensor{xt, rt, gt, bt, mt, dyt} {
		defer v.MustDrop()
	}
	sum := xt.MustMul(mt, false).MustAdd(rt, true)
	out := ts.MustLayerNorm(sum, []int64{int64(s.Cols)}, gt, bt, float64(tc.eps), false)
	loss := out.MustMul(dyt, false).MustSum(gotch.Float, true)
	loss.MustBackward()
	wantSum, wantOut := sum.Float64Values(), out.Float64Values()
	for _, v := range []*ts.Tensor{sum, out, loss} {
		v.MustDrop()
	}

	fwd, err := DropAddLNForward(s, x, resid, tc.gamma, tc.beta, tc.eps, tc.drop, lanes)
	if err != nil {
		t.Fatal(err)
	}
	bwd, err := DropAddLNBackward(s, dy, fwd.Sum, fwd.Mean, fwd.Rstd, tc.gamma, tc.drop, 3, lanes)
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, "sum", widen(fwd.Sum), wantSum, fp32Tol, false)
	compare := func(what string, got, torch, exact []float64) {
		t.Helper()
		if tc.zeroVariance {
			noFarther(t, what, got, torch, exact, fp32Tol)
		} else {
			closeTo(t, what, got, torch, fp32Tol, false)
		}
	}
	exactOut, _, _ := refLN(widen(fwd.Sum), s.Cols, tc.gamma, tc.beta, tc.eps)
	dx, dresid, dgamma, dbeta := refLNBackward(widen(dy), widen(fwd.Sum), s.Cols, tc.gamma, tc.eps, keep, tc.drop.P, 1)
	compare("out", widen(fwd.Out), wantOut, exactOut)
	compare("dx", widen(bwd.DX), grad(xt), dx)
	compare("dresid", widen(bwd.DResid), grad(rt), dresid)
	compare("dgamma", sumParts(bwd.DGammaPart, s.Cols), grad(gt), dgamma)
	compare("dbeta", sumParts(bwd.DBetaPart, s.Cols), grad(bt), dbeta)
}

func TestBiasGELUMatchesTorch(t *testing.T) {
	for _, tc := range geluCases(t) {
		for _, lanes := range []int{1, 32} {
			t.Run(fmt.Sprintf("%s/lanes %d", tc.name, lanes), func(t *testing.T) { checkGELUTorch(t, tc, lanes) })
		}
	}
}

func checkGELUTorch(t *testing.T, tc geluCase, lanes int) {
	s, x := tc.shape, float32s(tc.x)
	dy := float32s(values(newRand(tc.name), len(x), 1, 0))
	xt, bt, dyt := tensor(x, s, true), vector(tc.bias, true), tensor(dy, s, false)
	for _, v := range []*ts.Tensor{xt, bt, dyt} {
		defer v.MustDrop()
	}
	out := xt.MustAdd(bt, false).MustGelu("none", true)
	loss := out.MustMul(dyt, false).MustSum(gotch.Float, true)
	loss.MustBackward()
	want := out.Float64Values()
	out.MustDrop()
	loss.MustDrop()

	got, err := BiasGELUForward(s, x, tc.bias, lanes)
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, "out", widen(got), want, fp32Tol, false)
	dx, dbias, err := BiasGELUBackward(s, x, tc.bias, dy, 4, lanes)
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, "dx", widen(dx), grad(xt), fp32Tol, false)
	closeTo(t, "dbias", sumParts(dbias, s.Cols), grad(bt), fp32Tol, false)
}
