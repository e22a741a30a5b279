package host

import (
	"fmt"
	"math"
	"testing"
)

// The fp64 references: the formulas of layernorm.cuh and gelu.cuh evaluated in float64.

// refDropAdd is dropout(x) + resid with the mask keep.
func refDropAdd(x, resid []float64, keep []bool, p float32) []float64 {
	s := make([]float64, len(x))
	for i := range x {
		if keep[i] {
			s[i] = x[i] / (1 - float64(p))
		}
		s[i] += resid[i]
	}
	return s
}

// refLN is LayerNorm over rows of cols (Ba et al. 2016, §3): out, mean and 1/sqrt(var + eps) per row.
func refLN(s []float64, cols int, gamma, beta []float32, eps float32) (out, mean, rstd []float64) {
	rows := len(s) / cols
	out, mean, rstd = make([]float64, len(s)), make([]float64, rows), make([]float64, rows)
	for r := range rows {
		row := s[r*cols : (r+1)*cols]
		for _, v := range row {
			mean[r] += v
		}
		mean[r] /= float64(cols)
		v := 0.0
		for _, x := range row {
			v += (x - mean[r]) * (x - mean[r])
		}
		rstd[r] = 1 / math.Sqrt(v/float64(cols)+float64(eps))
		for c, x := range row {
			out[r*cols+c] = (x-mean[r])*rstd[r]*float64(gamma[c]) + float64(beta[c])
		}
	}
	return out, mean, rstd
}

// refLNBackward is the gradient of LayerNorm(dropout(x) + resid) given dy; dgamma and dbeta are summed per
// block of blocks (rows b, b + blocks, ...), as the kernels' partial sums are.
func refLNBackward(dy, s []float64, cols int, gamma []float32, eps float32, keep []bool, p float32, blocks int) (dx, dresid, dgamma, dbeta []float64) {
	rows := len(s) / cols
	_, mean, rstd := refLN(s, cols, gamma, make([]float32, cols), eps)
	dx, dresid = make([]float64, len(s)), make([]float64, len(s))
	dgamma, dbeta = make([]float64, blocks*cols), make([]float64, blocks*cols)
	for r := range rows {
		xhat, g := make([]float64, cols), make([]float64, cols)
		mg, mgx := 0.0, 0.0
		for c := range cols {
			xhat[c] = (s[r*cols+c] - mean[r]) * rstd[r]
			g[c] = dy[r*cols+c] * float64(gamma[c])
			mg += g[c] / float64(cols)
			mgx += g[c] * xhat[c] / float64(cols)
		}
		b := r % blocks
		for c := range cols {
			e := r*cols + c
			dresid[e] = rstd[r] * (g[c] - mg - xhat[c]*mgx)
			if keep[e] {
				dx[e] = dresid[e] / (1 - float64(p))
			}
			dgamma[b*cols+c] += dy[e] * xhat[c]
			dbeta[b*cols+c] += dy[e]
		}
	}
	return dx, dresid, dgamma, dbeta
}

// refGELU and refGELUGrad are gelu(v) = v·Φ(v) and its derivative Φ(v) + v·φ(v) (Hendrycks and Gimpel 2016).
func refGELU(v float64) float64 { return 0.5 * v * (1 + math.Erf(v/math.Sqrt2)) }

func refGELUGrad(v float64) float64 {
	return 0.5*(1+math.Erf(v/math.Sqrt2)) + v*math.Exp(-v*v/2)/math.Sqrt(2*math.Pi)
}

const fp32Tol = 1e-5

// laneCounts are the block sizes the host runs each case with: one lane, as the tests' reference build, and
// several, standing in for a GPU block (the device uses multiples of 32).
var laneCounts = []int{1, 5, 32}

func TestDropAddLNMatchesFP64(t *testing.T) {
	for _, tc := range lnCases(t) {
		for _, lanes := range laneCounts {
			t.Run(fmt.Sprintf("%s/f32/lanes %d", tc.name, lanes), func(t *testing.T) { checkLNFP64[float32](t, tc, lanes) })
			t.Run(fmt.Sprintf("%s/bf16/lanes %d", tc.name, lanes), func(t *testing.T) { checkLNFP64[uint16](t, tc, lanes) })
		}
	}
}

func checkLNFP64[T Storage](t *testing.T, tc lnCase, lanes int) {
	bf16 := isBF16[T]()
	x, resid := store[T](tc.x), store[T](tc.resid)
	fwd, err := DropAddLNForward(tc.shape, x, resid, tc.gamma, tc.beta, tc.eps, tc.drop, lanes)
	if err != nil {
		t.Fatal(err)
	}
	keep := Keep(tc.drop.Seed, tc.drop.Offset, 0, tc.shape.Rows*tc.shape.Cols, tc.drop.P)
	closeTo(t, "sum", widen(fwd.Sum), refDropAdd(widen(x), widen(resid), keep, tc.drop.P), fp32Tol, bf16)

	// LayerNorm of the sum the kernel stored (in bf16, the sum's rounding is checked just above).
	sum := widen(fwd.Sum)
	out, mean, rstd := refLN(sum, tc.shape.Cols, tc.gamma, tc.beta, tc.eps)
	closeTo(t, "out", widen(fwd.Out), out, fp32Tol, bf16)
	closeAtScale(t, "mean", widen32(fwd.Mean), mean, fp32Tol, maxAbs(sum), false)
	for r := range rstd {
		closeTo(t, fmt.Sprintf("rstd[%d]", r), []float64{float64(fwd.Rstd[r])}, rstd[r:r+1], fp32Tol, false)
	}

	dy := store[T](values(newRand(tc.name), len(tc.x), 1, 0))
	for _, blocks := range []int{1, 3, tc.shape.Rows + 2} {
		bwd, err := DropAddLNBackward(tc.shape, dy, fwd.Sum, fwd.Mean, fwd.Rstd, tc.gamma, tc.drop, blocks, lanes)
		if err != nil {
			t.Fatal(err)
		}
		dx, dresid, dgamma, dbeta := refLNBackward(widen(dy), sum, tc.shape.Cols, tc.gamma, tc.eps, keep, tc.drop.P, blocks)
		what := fmt.Sprintf(" (%d blocks)", blocks)
		closeTo(t, "dresid"+what, widen(bwd.DResid), dresid, fp32Tol, bf16)
		closeTo(t, "dx"+what, widen(bwd.DX), dx, fp32Tol, bf16)
		closeTo(t, "dgamma partial sums"+what, widen32(bwd.DGammaPart), dgamma, fp32Tol, false)
		closeTo(t, "dbeta partial sums"+what, widen32(bwd.DBetaPart), dbeta, fp32Tol, false)
	}
}

func TestBiasGELUMatchesFP64(t *testing.T) {
	for _, tc := range geluCases(t) {
		for _, lanes := range laneCounts {
			t.Run(fmt.Sprintf("%s/f32/lanes %d", tc.name, lanes), func(t *testing.T) { checkGELUFP64[float32](t, tc, lanes) })
			t.Run(fmt.Sprintf("%s/bf16/lanes %d", tc.name, lanes), func(t *testing.T) { checkGELUFP64[uint16](t, tc, lanes) })
		}
	}
}

func checkGELUFP64[T Storage](t *testing.T, tc geluCase, lanes int) {
	bf16 := isBF16[T]()
	x := store[T](tc.x)
	got, err := BiasGELUForward(tc.shape, x, tc.bias, lanes)
	if err != nil {
		t.Fatal(err)
	}
	xs, cols := widen(x), tc.shape.Cols
	want := make([]float64, len(xs))
	for i, v := range xs {
		want[i] = refGELU(v + float64(tc.bias[i%cols]))
	}
	closeTo(t, "out", widen(got), want, fp32Tol, bf16)

	dy := store[T](values(newRand(tc.name), len(xs), 1, 0))
	for _, blocks := range []int{1, 3, tc.shape.Rows + 2} {
		dx, dbias, err := BiasGELUBackward(tc.shape, x, tc.bias, dy, blocks, lanes)
		if err != nil {
			t.Fatal(err)
		}
		wantDX, wantDBias := make([]float64, len(xs)), make([]float64, blocks*cols)
		for i, v := range xs {
			wantDX[i] = widen(dy[i : i+1])[0] * refGELUGrad(v+float64(tc.bias[i%cols]))
			wantDBias[(i/cols)%blocks*cols+i%cols] += wantDX[i]
		}
		what := fmt.Sprintf(" (%d blocks)", blocks)
		closeTo(t, "dx"+what, widen(dx), wantDX, fp32Tol, bf16)
		closeTo(t, "dbias partial sums"+what, widen32(dbias), wantDBias, fp32Tol, false)
	}
}
