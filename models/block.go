package models

import (
	"math"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
)

// block is one post-LayerNorm transformer layer, the same math in all three families (Vaswani et al. 2017;
// BERT §3.1): self-attention, residual, LayerNorm, feed-forward, residual, LayerNorm. Only the parameter names
// differ; the family's blockNames hold them (family.go).
//
// The query, key and value weights are rows of one tensor (stackedLinears): one GEMM projects all three.
type block struct {
	query, key, value, attnOut linear
	attnNorm                   layerNorm
	ffnIn, ffnOut              linear
	outNorm                    layerNorm
	heads                      int64
	act                        func(*ts.Tensor) *ts.Tensor
	gelu                       torch.GELUKind // the feed-forward's activation when it is a GELU, else NoGELU
	hiddenDrop, attnDrop       float64
}

func newBlock(p *params, prefix string, n blockNames, c *Config) *block {
	h, i := c.HiddenSize, c.IntermediateSize
	act, _ := activation(c.HiddenAct) // validated with the config
	qkv := p.stackedLinears([]string{prefix + n.query, prefix + n.key, prefix + n.value}, h, h)
	return &block{
		query:      qkv[0],
		key:        qkv[1],
		value:      qkv[2],
		attnOut:    p.linear(prefix+n.attnOut, h, h, true),
		attnNorm:   p.layerNorm(prefix+n.attnNorm, h, c.LayerNormEps),
		ffnIn:      p.linear(prefix+n.ffnIn, h, i, true),
		ffnOut:     p.linear(prefix+n.ffnOut, i, h, true),
		outNorm:    p.layerNorm(prefix+n.outNorm, h, c.LayerNormEps),
		heads:      c.NumHeads,
		act:        act,
		gelu:       geluKind(c.HiddenAct),
		hiddenDrop: c.HiddenDropout,
		attnDrop:   c.AttentionDropout,
	}
}

// forward maps x [B,T,H] to [B,T,H]; mask keeps padded keys from being attended to. fused runs the part after
// attention on convrep's fused kernels (fusedTail), which the caller has found loaded on x's device.
func (b *block) forward(x *ts.Tensor, mask *attnMask, train, fused bool) *ts.Tensor {
	size := x.MustSize()
	bsz, seq, hid := size[0], size[1], size[2]
	dh := hid / b.heads
	q, k, v := b.project(x, bsz, seq, dh)
	var heads *ts.Tensor
	if mask.fused {
		heads = b.fusedAttention(q, k, v, mask.keep, train)
	} else {
		heads = b.attention(q, k, v, mask.add, dh, x.DType(), train)
	}
	ctx := heads.MustTranspose(1, 2, true).MustReshape([]int64{bsz, seq, hid}, true)
	if fused {
		return b.fusedTail(x, ctx, train)
	}

	attn := dropout(b.attnOut.forward(ctx), b.hiddenDrop, train)
	ctx.MustDrop()
	resid := attn.MustAdd(x, true)
	attn = b.attnNorm.forward(resid)
	resid.MustDrop()

	hidden := b.feedForwardIn(attn)
	out := dropout(b.ffnOut.forward(hidden), b.hiddenDrop, train)
	hidden.MustDrop()
	sum := out.MustAdd(attn, true)
	attn.MustDrop()
	res := b.outNorm.forward(sum)
	sum.MustDrop()
	return res
}

// fusedTail is the rest of forward after attention, from the heads' context ctx [B,T,H] (which it drops), on
// convrep's fused kernels (internal/gpu/kernels): each dropout + residual + LayerNorm is one kernel forward and one
// backward, and so is the feed-forward's bias + erf GELU after its GEMM. The function is forward's; under
// autocast the residual stream stays in bfloat16 where the composite's LayerNorm returns float32.
func (b *block) fusedTail(x, ctx *ts.Tensor, train bool) *ts.Tensor {
	p := 0.0
	if train {
		p = b.hiddenDrop
	}
	proj := b.attnOut.forward(ctx)
	ctx.MustDrop()
	attn := torch.DropAddLayerNorm(proj, x, b.attnNorm.w, b.attnNorm.b, p, b.attnNorm.eps)
	proj.MustDrop()
	var hidden *ts.Tensor
	if b.gelu == torch.ExactGELU {
		hidden = torch.DenseBiasGELU(attn, b.ffnIn.w, b.ffnIn.b)
	} else {
		hidden = b.feedForwardIn(attn)
	}
	out := b.ffnOut.forward(hidden)
	hidden.MustDrop()
	res := torch.DropAddLayerNorm(out, attn, b.outNorm.w, b.outNorm.b, p, b.outNorm.eps)
	torch.Drop(out, attn)
	return res
}

// project is the queries, keys and values of x [B,T,H], each [B,heads,T,dh], from one GEMM by the three
// weights joined ([B,T,3H]); torch.ProjectHeads cuts the heads out of it without a copy, and its backward takes
// their gradients where the attention's backward puts them, with no copy into the GEMM output's layout.
func (b *block) project(x *ts.Tensor, bsz, seq, dh int64) (q, k, v *ts.Tensor) {
	w := torch.JoinRows(b.query.w, b.key.w, b.value.w)
	bias := torch.JoinRows(b.query.b, b.key.b, b.value.b)
	q, k, v = torch.ProjectHeads(x, w, bias, b.heads)
	torch.Drop(w, bias)
	return q, k, v
}

// feedForwardIn is act(x·W₁ᵀ + b₁), the feed-forward's first layer. A GELU goes through torch.DenseGELU, which
// puts the bias and the GELU into the GEMM's epilogue where no gradient is needed and the device's fused
// kernel computes this GELU, and runs linear then gelu otherwise.
func (b *block) feedForwardIn(x *ts.Tensor) *ts.Tensor {
	if b.gelu != torch.NoGELU {
		out, _ := torch.DenseGELU(x, b.ffnIn.w, b.ffnIn.b, b.gelu == torch.TanhGELU)
		return out
	}
	inner := b.ffnIn.forward(x)
	defer inner.MustDrop()
	return b.act(inner)
}

// attention is softmax(q·kᵀ/√dh + maskAdd)·v over q, k, v [B,heads,T,dh], written with matmul, mask and
// softmax (the path on libtorch 1.13, which has no fused kernel gotch can call); it drops q, k and v.
// maskAdd [B,1,1,T] is 0 at real tokens and the lowest float at padding (HuggingFace's extended attention
// mask), so padded keys get zero weight; nil is no padding.
func (b *block) attention(q, k, v, maskAdd *ts.Tensor, dh int64, dtype gotch.DType, train bool) *ts.Tensor {
	kt := k.MustTranspose(-1, -2, true)
	scores := q.MustMatmul(kt, true).MustDivScalar(ts.FloatScalar(math.Sqrt(float64(dh))), true)
	kt.MustDrop()
	if maskAdd != nil { // nil: an unpadded batch, where the mask would add 0 everywhere
		scores = scores.MustAdd(maskAdd, true)
	}
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
