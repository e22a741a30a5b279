package dialoguecse

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"convrep/objectives/internal/testutil"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// cseCase is a hand-sized DialogueCSE batch as plain Go values: B=3 examples, up to C=2 context turns of up
// to Tu=4 tokens, responses of up to Tr=3 tokens, d=4. Example 2 has one turn; padding everywhere.
type cseCase struct {
	b, c, tu, tr, d int
	resp            []float64 // [B,Tr,d]
	rmask           []int64   // [B,Tr]
	ctx             []float64 // [B,C,Tu,d]
	cmask           []int64   // [B,C,Tu]
	cand            []bool    // [B,B]
	w1, b1, w2, b2  []float64 // I1's FFN: [h,d], [h], [1,h], [1]
	h               int
}

func newCSECase(seed uint64) *cseCase {
	g := rand.New(rand.NewPCG(seed, 1))
	c := &cseCase{b: 3, c: 2, tu: 4, tr: 3, d: 4, h: 3}
	fill := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = g.NormFloat64()
		}
		return v
	}
	c.resp = fill(c.b * c.tr * c.d)
	c.ctx = fill(c.b * c.c * c.tu * c.d)
	c.rmask = []int64{1, 1, 1, 1, 1, 0, 1, 0, 0}
	c.cmask = []int64{
		1, 1, 1, 0, 1, 1, 0, 0, // example 0: turns of 3 and 2 tokens
		1, 1, 1, 1, 1, 0, 0, 0, // example 1: 4 and 1
		1, 1, 0, 0, 0, 0, 0, 0, // example 2: one turn of 2 tokens, an empty slot
	}
	c.cand = []bool{true, true, false, true, true, true, true, false, true} // 0: {1}; 1: {0,2}; 2: {0}
	c.w1, c.b1, c.w2, c.b2 = fill(c.h*c.d), fill(c.h), fill(c.h), fill(1)
	return c
}

// refLoss is Eq. 3-8 with plain loops, one (i, j) pair and one turn at a time.
func (c *cseCase) refLoss(attention bool, tau float64) float64 {
	d := c.d
	at := func(v []float64, dims []int, idx ...int) float64 {
		o := 0
		for k, i := range idx {
			o = o*dims[k] + i
		}
		return v[o]
	}
	sims := make([][]float64, c.b)
	for i := range c.b {
		sims[i] = make([]float64, c.b)
		for j := range c.b {
			// R̄_j, its padding rows zero.
			rbar := make([][]float64, c.tr)
			for b := range c.tr {
				rbar[b] = make([]float64, d)
				if c.rmask[j*c.tr+b] == 1 {
					for k := range d {
						rbar[b][k] = at(c.resp, []int{c.b, c.tr, d}, j, b, k)
					}
				}
			}
			var rhats [][][]float64
			var scores []float64
			for t := range c.c {
				n := 0
				for a := range c.tu {
					n += int(c.cmask[(i*c.c+t)*c.tu+a])
				}
				if n == 0 {
					continue // no turn in this slot
				}
				// Eq. 3: M = Ū R̄ᵀ / √d; Eq. 4: R̂ = M R̄.
				rhat := make([][]float64, c.tu)
				for a := range c.tu {
					rhat[a] = make([]float64, d)
					if c.cmask[(i*c.c+t)*c.tu+a] == 0 {
						continue // Ū's padding row is zero, so is R̂'s
					}
					for b := range c.tr {
						m := 0.0
						for k := range d {
							m += at(c.ctx, []int{c.b, c.c, c.tu, d}, i, t, a, k) * rbar[b][k]
						}
						m /= math.Sqrt(float64(d))
						for k := range d {
							rhat[a][k] += m * rbar[b][k]
						}
					}
				}
				rhats = append(rhats, rhat)
				// Eq. 6's FFN on R̂ mean-pooled over the turn's real rows.
				p := make([]float64, d)
				for a := range c.tu {
					for k := range d {
						p[k] += rhat[a][k] / float64(n)
					}
				}
				score := c.b2[0]
				for h := range c.h {
					x := c.b1[h]
					for k := range d {
						x += c.w1[h*d+k] * p[k]
					}
					score += c.w2[h] * math.Max(x, 0)
				}
				scores = append(scores, score)
			}
			// Eq. 6 (softmax of the scores) or Eq. 7 (1/(t−1)).
			alpha := make([]float64, len(rhats))
			z := 0.0
			for t := range alpha {
				if attention {
					alpha[t] = math.Exp(scores[t])
				} else {
					alpha[t] = 1
				}
				z += alpha[t]
			}
			// Eq. 5: R̃ = Σ α R̂; mean pooling over the rows real in some turn.
			rows := 0
			for a := range c.tu {
				for t := range c.c {
					if c.cmask[(i*c.c+t)*c.tu+a] == 1 {
						rows++
						break
					}
				}
			}
			ptil, pbar := make([]float64, d), make([]float64, d)
			for t, rhat := range rhats {
				for a := range c.tu {
					for k := range d {
						ptil[k] += alpha[t] / z * rhat[a][k] / float64(rows)
					}
				}
			}
			nr := 0
			for b := range c.tr {
				nr += int(c.rmask[j*c.tr+b])
			}
			for b := range c.tr {
				for k := range d {
					pbar[k] += rbar[b][k] / float64(nr)
				}
			}
			dot, n1, n2 := 0.0, 0.0, 0.0
			for k := range d {
				dot, n1, n2 = dot+pbar[k]*ptil[k], n1+pbar[k]*pbar[k], n2+ptil[k]*ptil[k]
			}
			sims[i][j] = dot / math.Sqrt(n1) / math.Sqrt(n2)
		}
	}
	// Eq. 8.
	loss := 0.0
	for i := range c.b {
		den := 0.0
		for j := range c.b {
			if c.cand[i*c.b+j] {
				den += math.Exp(sims[i][j] / tau)
			}
		}
		loss += -math.Log(math.Exp(sims[i][i]/tau) / den)
	}
	return loss / float64(c.b)
}

// tensors builds cseLoss's inputs in dtype; resp, ctx and the FFN's weights are leaves tracking gradients.
func (c *cseCase) tensors(dtype gotch.DType, attention bool) (cseTokens, *turnAttention) {
	leaf := func(v []float64, shape ...int64) *ts.Tensor {
		x := ts.MustOfSlice(v).MustView(shape, true).MustTotype(dtype, true)
		x.MustRequiresGrad_(true)
		return x
	}
	bb, cc, tu, tr, d, h := int64(c.b), int64(c.c), int64(c.tu), int64(c.tr), int64(c.d), int64(c.h)
	cand := make([]int64, len(c.cand))
	for i, v := range c.cand {
		if v {
			cand[i] = 1
		}
	}
	x := cseTokens{
		resp:     leaf(c.resp, bb, tr, d),
		respMask: ts.MustOfSlice(c.rmask).MustView([]int64{bb, tr}, true),
		ctx:      leaf(c.ctx, bb, cc, tu, d),
		ctxMask:  ts.MustOfSlice(c.cmask).MustView([]int64{bb, cc, tu}, true),
		cand:     ts.MustOfSlice(cand).MustView([]int64{bb, bb}, true).MustNe(ts.IntScalar(0), true),
	}
	if !attention {
		return x, nil
	}
	return x, &turnAttention{w1: leaf(c.w1, h, d), b1: leaf(c.b1, h), w2: leaf(c.w2, 1, h), b2: leaf(c.b2, 1)}
}

func (c *cseCase) loss(t *testing.T, dtype gotch.DType, attention bool, tau float64) (float64, cseTokens, *turnAttention, *ts.Tensor) {
	t.Helper()
	x, att := c.tensors(dtype, attention)
	if _, err := x.check(); err != nil {
		t.Fatal(err)
	}
	loss, sims := cseLoss(x, att, tau)
	sims.MustDrop()
	return loss.Float64Values()[0], x, att, loss
}

func TestDialogueCSELossMatchesLoops(t *testing.T) {
	for _, tc := range []struct {
		attention bool
		tau       float64
		dtype     gotch.DType
		tol       float64
	}{
		{false, 0.1, gotch.Double, 1e-12},
		{true, 0.1, gotch.Double, 1e-12},
		{false, 0.05, gotch.Double, 1e-12},
		{true, 0.5, gotch.Double, 1e-12},
		{false, 0.1, gotch.Float, 1e-5},
		{true, 0.1, gotch.Float, 1e-5},
	} {
		t.Run(fmt.Sprintf("attention=%v tau=%v %v", tc.attention, tc.tau, tc.dtype), func(t *testing.T) {
			for seed := uint64(1); seed <= 3; seed++ {
				c := newCSECase(seed)
				want := c.refLoss(tc.attention, tc.tau)
				got, _, _, _ := c.loss(t, tc.dtype, tc.attention, tc.tau)
				if math.Abs(got-want) > tc.tol*math.Max(1, math.Abs(want)) || !(want > 0) {
					t.Fatalf("seed %d: loss %.15g, the loops give %.15g", seed, got, want)
				}
			}
		})
	}
	// The two aggregations differ (the FFN's weights matter) and a non-candidate pair does not count.
	c := newCSECase(4)
	if i1, i2 := c.refLoss(true, 0.1), c.refLoss(false, 0.1); math.Abs(i1-i2) < 1e-6 {
		t.Fatalf("I1 and I2 give the same loss %g: the test cannot tell them apart", i1)
	}
	before := c.refLoss(false, 0.1)
	c.cand[2] = true // example 0 now also has response 2 as a negative
	got, _, _, _ := c.loss(t, gotch.Double, false, 0.1)
	if after := c.refLoss(false, 0.1); math.Abs(after-before) < 1e-6 || math.Abs(got-after) > 1e-12 {
		t.Fatalf("adding a negative: loops %g → %g, tensors %g", before, after, got)
	}
}

// The gradients of resp, ctx and the FFN's weights against central finite differences in float64.
func TestDialogueCSELossGradient(t *testing.T) {
	for _, attention := range []bool{false, true} {
		t.Run(fmt.Sprintf("attention=%v", attention), func(t *testing.T) {
			c := newCSECase(5)
			_, x, att, loss := c.loss(t, gotch.Double, attention, 0.1)
			loss.MustBackward()
			params := []struct {
				name string
				vals []float64
				grad *ts.Tensor
			}{{"resp", c.resp, x.resp.MustGrad(false)}, {"ctx", c.ctx, x.ctx.MustGrad(false)}}
			if attention {
				params = append(params, []struct {
					name string
					vals []float64
					grad *ts.Tensor
				}{{"w1", c.w1, att.w1.MustGrad(false)}, {"b1", c.b1, att.b1.MustGrad(false)}, {"w2", c.w2, att.w2.MustGrad(false)}}...)
			}
			const h = 1e-6
			for _, p := range params {
				grad := p.grad.Float64Values()
				nonzero := 0
				for k := range p.vals {
					keep := p.vals[k]
					p.vals[k] = keep + h
					up := c.refLoss(attention, 0.1)
					p.vals[k] = keep - h
					down := c.refLoss(attention, 0.1)
					p.vals[k] = keep
					num := (up - down) / (2 * h)
					if math.Abs(num-grad[k]) > 1e-6*math.Max(1, math.Abs(num)) {
						t.Fatalf("%s[%d]: gradient %.10g, finite differences %.10g", p.name, k, grad[k], num)
					}
					if grad[k] != 0 {
						nonzero++
					}
				}
				if nonzero == 0 {
					t.Fatalf("%s: every gradient is zero", p.name)
				}
			}
			// Padding rows get no gradient: response 1's last token, response 2's last two.
			g := x.resp.MustGrad(false).Float64Values()
			for _, row := range []int{5, 7, 8} {
				for k := range c.d {
					if g[row*c.d+k] != 0 {
						t.Fatalf("padding token row %d has gradient %g", row, g[row*c.d+k])
					}
				}
			}
		})
	}
}

// The objective's fixed point: when every token row of every utterance points the same way (a collapsed
// encoder, and nearly so a random or briefly MLM-trained small one, whose cosines start at 0.9995-0.9998),
// R̄ and R̃ = Σ α Ū R̄ᵀ R̄ / √d pool to the same direction, every similarity is 1, the loss is the mean
// log(candidates) and no gradient tells the pairs apart. DialogueCSE needs a starting encoder whose token
// rows differ (a pretrained one in the paper).
func TestDialogueCSELossCollinearRows(t *testing.T) {
	c := newCSECase(6)
	v := []float64{0.5, -1, 2, 0.25}
	for _, rows := range [][]float64{c.resp, c.ctx} {
		for r := 0; r < len(rows)/c.d; r++ {
			scale := 0.5 + float64(r%5) // positive, different per row
			for k := range c.d {
				rows[r*c.d+k] = scale * v[k]
			}
		}
	}
	x, _ := c.tensors(gotch.Double, false)
	loss, sims := cseLoss(x, nil, 0.1)
	defer sims.MustDrop()
	for k, s := range sims.Float64Values() {
		if math.Abs(s-1) > 1e-12 {
			t.Fatalf("similarity %d = %.15g, want 1", k, s)
		}
	}
	// Example 0 has 2 candidates, 1 has 3, 2 has 2 (newCSECase's cand).
	want := (math.Log(2) + math.Log(3) + math.Log(2)) / 3
	if got := loss.Float64Values()[0]; math.Abs(got-want) > 1e-12 {
		t.Fatalf("loss %.15g, want the mean log(candidates) %.15g", got, want)
	}
	loss.MustBackward()
	if g := x.resp.MustGrad(false).Float64Values(); testutil.MaxAbs(g) > 1e-9 {
		t.Fatalf("collinear rows get a gradient of size %g", testutil.MaxAbs(g))
	}
}
