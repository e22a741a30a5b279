package host

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// embedCase is an embeddings problem: tables, a batch of ids, LayerNorm's weights, and the dropout.
type embedCase struct {
	name        string
	shape       Shape
	in          Embeddings
	gamma, beta []float32
	eps         float32
	drop        Dropout
}

// embedCases are the fixture models' own embedding tables and LayerNorm (with and without token types, RoBERTa's
// positions after the pad id), and BERT-base's width on small random tables.
func embedCases(t *testing.T) []embedCase {
	r := rand.New(rand.NewPCG(5, 6))
	ids := func(rows int, below int) []int64 {
		v := make([]int64, rows)
		for i := range v {
			v[i] = r.Int64N(int64(below))
		}
		return v
	}
	drop := func(p float32) Dropout { return Dropout{P: p, Seed: 0x0123456789abcdef, Offset: 1 << 36} }
	fixture := func(name, model, prefix string, types bool, eps float32, rows int, p float32) embedCase {
		e := Embeddings{
			Word: fixtureTensor(t, model, prefix+"word_embeddings.weight"),
			Pos:  fixtureTensor(t, model, prefix+"position_embeddings.weight"),
		}
		gamma := fixtureTensor(t, model, prefix+"LayerNorm.weight")
		cols := len(gamma)
		e.IDs, e.PosIDs = ids(rows, len(e.Word)/cols), ids(rows, len(e.Pos)/cols)
		if types {
			e.Type = fixtureTensor(t, model, prefix+"token_type_embeddings.weight")
			e.TypeIDs = ids(rows, len(e.Type)/cols)
		}
		return embedCase{name, Shape{rows, cols}, e, gamma, fixtureTensor(t, model, prefix+"LayerNorm.bias"), eps, drop(p)}
	}
	random := func(name string, rows, cols int, p float32) embedCase {
		e := Embeddings{Word: float32s(values(r, 50*cols, 0.05, 0)), Pos: float32s(values(r, 40*cols, 0.02, 0)),
			Type: float32s(values(r, 2*cols, 0.02, 0))}
		e.IDs, e.PosIDs, e.TypeIDs = ids(rows, 50), ids(rows, 40), ids(rows, 2)
		return embedCase{name, Shape{rows, cols}, e, float32s(values(r, cols, 0.2, 1)), float32s(values(r, cols, 0.2, 0)), 1e-12, drop(p)}
	}
	return []embedCase{
		fixture("tiny-bert", "tiny-bert", "bert.embeddings.", true, 1e-12, 18, 0.1),
		fixture("tiny-roberta", "tiny-roberta", "roberta.embeddings.", true, 1e-5, 14, 0.1),
		fixture("tiny-distilbert, no token types", "tiny-distilbert", "distilbert.embeddings.", false, 1e-12, 9, 0.1),
		fixture("tiny-bert, p = 0", "tiny-bert", "bert.embeddings.", true, 1e-12, 7, 0),
		random("cols 768, BERT-base", 6, 768, 0.1),
		random("cols 100, not a multiple of the lanes", 5, 100, 0.25),
	}
}

// refEmbedSum is word[id] + pos[pos id] + type[type id] in float64.
func refEmbedSum(s Shape, e Embeddings) []float64 {
	sum := make([]float64, s.n())
	for r := range s.Rows {
		for c := range s.Cols {
			v := float64(e.Word[int(e.IDs[r])*s.Cols+c]) + float64(e.Pos[int(e.PosIDs[r])*s.Cols+c])
			if e.Type != nil {
				v += float64(e.Type[int(e.TypeIDs[r])*s.Cols+c])
			}
			sum[r*s.Cols+c] = v
		}
	}
	return sum
}

// scaled is v·keep/(1-p): dropout with the kernels' mask.
func scaled(v []float64, keep []bool, p float32) []float64 {
	out := make([]float64, len(v))
	for i := range v {
		if keep[i] {
			out[i] = v[i] / (1 - float64(p))
		}
	}
	return out
}

func TestEmbedLNMatchesFP64(t *testing.T) {
	for _, tc := range embedCases(t) {
		for _, lanes := range laneCounts {
			t.Run(fmt.Sprintf("%s/lanes %d", tc.name, lanes), func(t *testing.T) {
				s := tc.shape
				fwd, err := EmbedLNForward(s, tc.in, tc.gamma, tc.beta, tc.eps, tc.drop, lanes)
				if err != nil {
					t.Fatal(err)
				}
				keep := Keep(tc.drop.Seed, tc.drop.Offset, 0, s.n(), tc.drop.P)
				sum := refEmbedSum(s, tc.in)
				ln, mean, rstd := refLN(sum, s.Cols, tc.gamma, tc.beta, tc.eps)
				closeTo(t, "out", widen32(fwd.Out), scaled(ln, keep, tc.drop.P), fp32Tol, false)
				closeAtScale(t, "mean", widen32(fwd.Mean), mean, fp32Tol, maxAbs(sum), false)
				closeTo(t, "rstd", widen32(fwd.Rstd), rstd, fp32Tol, false)

				dy := float32s(values(newRand(tc.name), s.n(), 1, 0))
				all := make([]bool, s.n())
				for i := range all {
					all[i] = true
				}
				for _, blocks := range []int{1, 3, s.Rows + 2} {
					bwd, err := EmbedLNBackward(s, tc.in, dy, fwd.Mean, fwd.Rstd, tc.gamma, tc.drop, blocks, lanes)
					if err != nil {
						t.Fatal(err)
					}
					// The LayerNorm's gradient from dy after the dropout: refLNBackward with nothing dropped.
					ds, _, dgamma, dbeta := refLNBackward(scaled(widen32(dy), keep, tc.drop.P), sum, s.Cols, tc.gamma, tc.eps, all, 0, blocks)
					what := fmt.Sprintf(" (%d blocks)", blocks)
					closeTo(t, "ds"+what, widen32(bwd.DS), ds, fp32Tol, false)
					closeTo(t, "dgamma partial sums"+what, widen32(bwd.DGammaPart), dgamma, fp32Tol, false)
					closeTo(t, "dbeta partial sums"+what, widen32(bwd.DBetaPart), dbeta, fp32Tol, false)
				}
			})
		}
	}
}

// The row functions against libtorch's composite, as models/embeddings.go computes it on a CPU: embedding
// lookups added, layer_norm, then dropout as ·mask/(1-p) with Keep's mask; gradients by autograd, the tables'
// being the kernels' ds added into the rows the ids name.
func TestEmbedLNMatchesTorch(t *testing.T) {
	for _, tc := range embedCases(t) {
		for _, lanes := range []int{1, 32} {
			t.Run(fmt.Sprintf("%s/lanes %d", tc.name, lanes), func(t *testing.T) { checkEmbedTorch(t, tc, lanes) })
		}
	}
}

func checkEmbedTorch(t *testing.T, tc embedCase, lanes int) {
	s, e := tc.shape, tc.in
	keep := Keep(tc.drop.Seed, tc.drop.Offset, 0, s.n(), tc.drop.P)
	mask := make([]float32, s.n())
	for i, k := range keep {
		if k {
			mask[i] = 1 / (1 - tc.drop.P)
		}
	}
	dy := float32s(values(newRand(tc.name), s.n(), 1, 0))
	table := func(v []float32) *ts.Tensor {
		return tensor(v, Shape{len(v) / s.Cols, s.Cols}, true)
	}
	lookup := func(w *ts.Tensor, ids []int64) *ts.Tensor {
		it := ts.MustOfSlice(ids)
		defer it.MustDrop()
		return ts.MustEmbedding(w, it, -1, false, false)
	}
	wt, pt := table(e.Word), table(e.Pos)
	gt, bt := vector(tc.gamma, true), vector(tc.beta, true)
	mt, dyt := tensor(mask, s, false), tensor(dy, s, false)
	for _, v := range []*ts.Tensor{wt, pt, gt, bt, mt, dyt} {
		defer v.MustDrop()
	}
	sum := lookup(wt, e.IDs).MustAdd(lookup(pt, e.PosIDs), true)
	var tt *ts.Tensor
	if e.Type != nil {
		tt = table(e.Type)
		defer tt.MustDrop()
		sum = sum.MustAdd(lookup(tt, e.TypeIDs), true)
	}
	out := ts.MustLayerNorm(sum, []int64{int64(s.Cols)}, gt, bt, float64(tc.eps), false).MustMul(mt, true)
	loss := out.MustMul(dyt, false).MustSum(gotch.Float, true)
	loss.MustBackward()
	wantOut := out.Float64Values()
	for _, v := range []*ts.Tensor{sum, out, loss} {
		v.MustDrop()
	}

	fwd, err := EmbedLNForward(s, e, tc.gamma, tc.beta, tc.eps, tc.drop, lanes)
	if err != nil {
		t.Fatal(err)
	}
	bwd, err := EmbedLNBackward(s, e, dy, fwd.Mean, fwd.Rstd, tc.gamma, tc.drop, 3, lanes)
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, "out", widen32(fwd.Out), wantOut, fp32Tol, false)
	closeTo(t, "dgamma", sumParts(bwd.DGammaPart, s.Cols), grad(gt), fp32Tol, false)
	closeTo(t, "dbeta", sumParts(bwd.DBetaPart, s.Cols), grad(bt), fp32Tol, false)
	scatter := func(ids []int64, rows int) []float64 {
		g := make([]float64, rows*s.Cols)
		for r, id := range ids {
			for c := range s.Cols {
				g[int(id)*s.Cols+c] += float64(bwd.DS[r*s.Cols+c])
			}
		}
		return g
	}
	closeTo(t, "dword", scatter(e.IDs, len(e.Word)/s.Cols), grad(wt), fp32Tol, false)
	closeTo(t, "dpos", scatter(e.PosIDs, len(e.Pos)/s.Cols), grad(pt), fp32Tol, false)
	if tt != nil {
		closeTo(t, "dtype", scatter(e.TypeIDs, len(e.Type)/s.Cols), grad(tt), fp32Tol, false)
	}
}

// An id outside its table reads nothing outside it: that row's outputs are NaN, the others as without it.
func TestEmbedLNMarksIDsOutsideTheTables(t *testing.T) {
	tc := embedCases(t)[4]
	s := tc.shape
	want, err := EmbedLNForward(s, tc.in, tc.gamma, tc.beta, tc.eps, tc.drop, 32)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		name string
		set  func(e *Embeddings)
	}{
		{"word id = vocabulary size", func(e *Embeddings) { e.IDs[2] = int64(len(e.Word) / s.Cols) }},
		{"negative position id", func(e *Embeddings) { e.PosIDs[2] = -1 }},
		{"type id 2 of 2 types", func(e *Embeddings) { e.TypeIDs[2] = 2 }},
	} {
		t.Run(bad.name, func(t *testing.T) {
			e := tc.in
			e.IDs, e.PosIDs, e.TypeIDs = append([]int64(nil), e.IDs...), append([]int64(nil), e.PosIDs...), append([]int64(nil), e.TypeIDs...)
			bad.set(&e)
			got, err := EmbedLNForward(s, e, tc.gamma, tc.beta, tc.eps, tc.drop, 32)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range got.Out {
				row := i / s.Cols
				switch {
				case row == 2 && v != 0 && !math.IsNaN(float64(v)): // a dropped element is 0
					t.Fatalf("element %d of the bad row is %v, want NaN", i, v)
				case row != 2 && v != want.Out[i]:
					t.Fatalf("element %d of row %d is %v, %v without the bad id", i, row, v, want.Out[i])
				}
			}
			if !math.IsNaN(float64(got.Mean[2])) || !math.IsNaN(float64(got.Rstd[2])) {
				t.Fatalf("the bad row's mean and rstd are %v and %v, want NaN", got.Mean[2], got.Rstd[2])
			}
		})
	}
}
