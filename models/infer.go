package models

import (
	"fmt"
	"sync"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
)

// oneDNN's inner product on weights laid out for it once runs a CPU forward's linears several times faster
// than libtorch's linear, which on Debian's libtorch goes through OpenBLAS's sgemm (docs/measuring.md has the
// figures). The packed weights are for inference only: training's forward never reads them, and they are copied
// again whenever an optimiser step or a load has changed the parameters since. Packed in bfloat16, they are
// what a forward under CPU bf16 autocast multiplies by, as autocast would: the linears' inputs rounded to
// bfloat16, the products summed in float32, LayerNorm, softmax and the residuals in float32.

// packedLinear is one linear's weight in oneDNN's layout, with the parameters it was copied from and their
// versions at the copy.
type packedLinear struct {
	mk       *ts.Tensor
	src      []*ts.Tensor
	versions []int64
}

// pack copies the rows of ws, joined in order, into oneDNN's layout, in bfloat16 when bf16.
func pack(bf16 bool, ws ...*ts.Tensor) (packedLinear, error) {
	w := ws[0]
	if len(ws) == 3 {
		w = torch.JoinRows(ws[0], ws[1], ws[2])
		defer w.MustDrop()
	}
	mk, err := torch.MKLDNNWeight(w, bf16)
	if err != nil {
		return packedLinear{}, err
	}
	p := packedLinear{mk: mk, src: ws}
	for _, s := range ws {
		p.versions = append(p.versions, torch.Version(s))
	}
	return p, nil
}

// stale says whether a parameter has changed since the copy.
func (p *packedLinear) stale() bool {
	for i, s := range p.src {
		if torch.Version(s) != p.versions[i] {
			return true
		}
	}
	return false
}

// refresh copies the weights again, in bfloat16 when bf16, when they have changed.
func (p *packedLinear) refresh(bf16 bool) error {
	if !p.stale() {
		return nil
	}
	fresh, err := pack(bf16, p.src...)
	if err != nil {
		return err
	}
	p.mk.MustDrop()
	*p = fresh
	return nil
}

// packedBlock is one layer's four matrices in oneDNN's layout: the joined query, key and value, the
// attention's output, and the feed-forward's two.
type packedBlock struct{ qkv, attnOut, ffnIn, ffnOut packedLinear }

func (pb *packedBlock) linears() []*packedLinear {
	return []*packedLinear{&pb.qkv, &pb.attnOut, &pb.ffnIn, &pb.ffnOut}
}

// PackForCPUInference lays the encoder's weights out for oneDNN once, so that a CPU forward without autograd or
// dropout (what an Embedder runs) multiplies by them: in float32 for a forward without autocast, or with bf16 in
// bfloat16 for one under CPU bf16 autocast (where torch.MKLDNNDirect). It costs a second copy of the layers'
// matrices. Calling it again with the same bf16 does nothing; with the other, it packs anew. Training is
// unaffected: its forward never reads the copies, and a forward after an optimiser step copies the changed
// weights again first.
func (m *Model) PackForCPUInference(bf16 bool) error {
	if m.packed != nil && m.packedBF16 == bf16 {
		return nil
	}
	if m.VS.Device().IsCuda() {
		return fmt.Errorf("pack for CPU inference: the model is on %v", m.VS.Device())
	}
	if !torch.HasMKLDNN() {
		return fmt.Errorf("pack for CPU inference: this libtorch has no oneDNN")
	}
	if bf16 && !torch.MKLDNNDirect() {
		return fmt.Errorf("pack for CPU inference in bfloat16: this build does not call oneDNN directly (libdnnl-dev at set-up)")
	}
	var blocks []packedBlock
	err := torch.Catch("pack for CPU inference", func() error {
		for _, l := range m.layers {
			var pb packedBlock
			var err error
			if pb.qkv, err = pack(bf16, l.query.w, l.key.w, l.value.w); err != nil {
				return err
			}
			for _, p := range []struct {
				to *packedLinear
				w  *ts.Tensor
			}{{&pb.attnOut, l.attnOut.w}, {&pb.ffnIn, l.ffnIn.w}, {&pb.ffnOut, l.ffnOut.w}} {
				if *p.to, err = pack(bf16, p.w); err != nil {
					return err
				}
			}
			blocks = append(blocks, pb)
		}
		return nil
	})
	if err != nil {
		dropPacked(blocks)
		return err
	}
	dropPacked(m.packed)
	m.packed, m.packedBF16 = blocks, bf16
	return nil
}

// dropPacked frees the packed copies of blocks.
func dropPacked(blocks []packedBlock) {
	for _, pb := range blocks {
		for _, p := range pb.linears() {
			torch.Drop(p.mk)
		}
	}
}

// packedFor returns the packed layers a forward can run on: those of PackForCPUInference, refreshed where the
// parameters have changed, when the forward is inference (no dropout, no autograd) on the CPU, either in float32
// without autocast on float32 copies, or under bf16 autocast on bfloat16 copies; nil otherwise, and the forward
// runs libtorch's linears.
func (m *Model) packedFor(train bool, x *ts.Tensor) []packedBlock {
	if train || m.packed == nil || torch.GradEnabled() || x.MustDevice().IsCuda() {
		return nil
	}
	if on, dtype := torch.AutocastEnabled(x.MustDevice()); on != m.packedBF16 || (on && dtype != gotch.BFloat16) {
		return nil
	}
	for i := range m.packed {
		for _, p := range m.packed[i].linears() {
			if err := p.refresh(m.packedBF16); err != nil {
				panic(err) // Forward's torch.Catch returns it
			}
		}
	}
	return m.packed
}

// cpuAttention says whether torch.CPUAttention runs here, asked of libtorch once.
var cpuAttention = sync.OnceValue(torch.HasCPUAttention)

// forwardPacked is forward's function for inference, its four matrix products by oneDNN on the packed
// weights pb, its LayerNorms by oneDNN too, and the attention, where libtorch has no fused kernel for it (1.13),
// by torch.CPUAttention.
func (b *block) forwardPacked(x *ts.Tensor, mask *attnMask, pb *packedBlock) *ts.Tensor {
	size := x.MustSize()
	bsz, seq, hid := size[0], size[1], size[2]
	dh := hid / b.heads
	bias := torch.JoinRows(b.query.b, b.key.b, b.value.b)
	joined := torch.MKLDNNLinear(x, pb.qkv.mk, bias) // [B,T,3H]
	bias.MustDrop()
	var ctx *ts.Tensor
	if !mask.fused && cpuAttention() {
		ctx = torch.CPUAttention(joined, mask.add, b.heads)
		joined.MustDrop()
	} else {
		qkv := joined.MustView([]int64{bsz, seq, 3, b.heads, dh}, true).MustPermute([]int64{2, 0, 3, 1, 4}, true)
		q, k, v := qkv.MustSelect(0, 0, false), qkv.MustSelect(0, 1, false), qkv.MustSelect(0, 2, false)
		qkv.MustDrop()
		var heads *ts.Tensor
		if mask.fused {
			heads = b.fusedAttention(q, k, v, mask.keep, false)
		} else {
			heads = b.attention(q, k, v, mask.add, dh, x.DType(), false)
		}
		ctx = heads.MustTranspose(1, 2, true).MustReshape([]int64{bsz, seq, hid}, true)
	}

	resid := torch.MKLDNNLinear(ctx, pb.attnOut.mk, b.attnOut.b)
	resid.MustAdd_(x)
	ctx.MustDrop()
	attn := torch.MKLDNNLayerNorm(resid, b.attnNorm.w, b.attnNorm.b, b.attnNorm.eps)
	resid.MustDrop()

	var sum *ts.Tensor
	if b.gelu == torch.ExactGELU { // oneDNN's GELU is the exact one
		sum = torch.MKLDNNFeedForward(attn, pb.ffnIn.mk, b.ffnIn.b, pb.ffnOut.mk, b.ffnOut.b)
	} else {
		inner := torch.MKLDNNLinear(attn, pb.ffnIn.mk, b.ffnIn.b)
		hidden := b.act(inner)
		inner.MustDrop()
		sum = torch.MKLDNNLinear(hidden, pb.ffnOut.mk, b.ffnOut.b)
		hidden.MustDrop()
	}
	sum.MustAdd_(attn)
	attn.MustDrop()
	res := torch.MKLDNNLayerNorm(sum, b.outNorm.w, b.outNorm.b, b.outNorm.eps)
	sum.MustDrop()
	return res
}
