package models

import (
	"math"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// block is one post-LayerNorm transformer layer, the same math in all three families (Vaswani et al. 2017;
// BERT §3.1): self-attention, residual, LayerNorm, feed-forward, residual, LayerNorm. Only the parameter names
// differ; the family's blockNames hold them (family.go).
type block struct {
	query, key, value, attnOut linear
	attnNorm                   layerNorm
	ffnIn, ffnOut              linear
	outNorm                    layerNorm
	heads                      int64
	act                        func(*ts.Tensor) *ts.Tensor
	hiddenDrop, attnDrop       float64
}

func newBlock(p *params, prefix string, n blockNames, c *Config) *block {
	h, i := c.HiddenSize, c.IntermediateSize
	act, _ := activation(c.HiddenAct) // validated with the config
	return &block{
		query:      p.linear(prefix+n.query, h, h, true),
		key:        p.linear(prefix+n.key, h, h, true),
		value:      p.linear(prefix+n.value, h, h, true),
		attnOut:    p.linear(prefix+n.attnOut, h, h, true),
		attnNorm:   p.layerNorm(prefix+n.attnNorm, h, c.LayerNormEps),
		ffnIn:      p.linear(prefix+n.ffnIn, h, i, true),
		ffnOut:     p.linear(prefix+n.ffnOut, i, h, true),
		outNorm:    p.layerNorm(prefix+n.outNorm, h, c.LayerNormEps),
		heads:      c.NumHeads,
		act:        act,
		hiddenDrop: c.HiddenDropout,
		attnDrop:   c.AttentionDropout,
	}
}

// forward maps x [B,T,H] to [B,T,H]; mask keeps padded keys from being attended to.
func (b *block) forward(x *ts.Tensor, mask *attnMask, train bool) *ts.Tensor {
	size := x.MustSize()
	bsz, seq, hid := size[0], size[1], size[2]
	dh := hid / b.heads
	split := func(t *ts.Tensor) *ts.Tensor { // [B,T,H] → [B,heads,T,dh]
		return t.MustView([]int64{bsz, seq, b.heads, dh}, true).MustTranspose(1, 2, true)
	}
	q, k, v := split(b.query.forward(x)), split(b.key.forward(x)), split(b.value.forward(x))
	var heads *ts.Tensor
	if mask.keep != nil {
		heads = b.fusedAttention(q, k, v, mask.keep, train)
	} else {
		heads = b.attention(q, k, v, mask.add, dh, x.DType(), train)
	}
	ctx := heads.MustTranspose(1, 2, true).MustReshape([]int64{bsz, seq, hid}, true)

	attn := dropout(b.attnOut.forward(ctx), b.hiddenDrop, train)
	ctx.MustDrop()
	resid := attn.MustAdd(x, true)
	attn = b.attnNorm.forward(resid)
	resid.MustDrop()

	inner := b.ffnIn.forward(attn)
	hidden := b.act(inner)
	inner.MustDrop()
	out := dropout(b.ffnOut.forward(hidden), b.hiddenDrop, train)
	hidden.MustDrop()
	sum := out.MustAdd(attn, true)
	attn.MustDrop()
	res := b.outNorm.forward(sum)
	sum.MustDrop()
	return res
}

// attention is softmax(q·kᵀ/√dh + maskAdd)·v over q, k, v [B,heads,T,dh], written with matmul, mask and
// softmax (the path on libtorch 1.13, which has no fused kernel gotch can call); it drops q, k and v.
// maskAdd [B,1,1,T] is 0 at real tokens and the lowest float at padding (HuggingFace's extended attention
// mask), so padded keys get zero weight.
func (b *block) attention(q, k, v, maskAdd *ts.Tensor, dh int64, dtype gotch.DType, train bool) *ts.Tensor {
	kt := k.MustTranspose(-1, -2, true)
	scores := q.MustMatmul(kt, true).MustDivScalar(ts.FloatScalar(math.Sqrt(float64(dh))), true)
	kt.MustDrop()
	scores = scores.MustAdd(maskAdd, true)
	probs := scores.MustSoftmax(-1, dtype, true)
	probs = dropout(probs, b.attnDrop, train)
	out := probs.MustMatmul(v, true)
	v.MustDrop()
	return out
}

// dropout drops x and returns a new tensor in training; outside training it returns x itself.
func dropout(x *ts.Tensor, p float64, train bool) *ts.Tensor {
	if !train || p == 0 {
		return x
	}
	y := ts.MustDropout(x, p, true)
	x.MustDrop()
	return y
}
