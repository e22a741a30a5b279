package models

import (
	"sync"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
)

// fusedAttentionAvailable reports whether the linked libtorch runs scaled_dot_product_attention (2.0 and
// later: flash or memory-efficient kernels on a GPU, a fused CPU kernel). It is decided once, by calling the
// op on a 1×1 problem: against libtorch 1.13 gotch's wrapper is a stub that returns an error, and the
// encoder keeps the explicit matmul/mask/softmax path.
var fusedAttentionAvailable = sync.OnceValue(func() bool {
	one := ts.MustOnes([]int64{1, 1, 1, 1}, gotch.Float, gotch.CPU)
	keep := ts.MustOnes([]int64{1, 1, 1, 1}, gotch.Bool, gotch.CPU)
	defer one.MustDrop()
	defer keep.MustDrop()
	out, err := ts.ScaledDotProductAttention(one, one, one, keep, 0, false, nil)
	if err != nil {
		return false
	}
	out.MustDrop()
	return true
})

// attnMask is the padding mask [B,1,1,T], broadcast over heads and queries, in the form the attention path
// takes. The encoder builds it once per forward and every layer shares it.
type attnMask struct {
	keep *ts.Tensor // the fused kernel's: booleans, true = attend
	add  *ts.Tensor // the explicit path's: 0 at real tokens, the lowest float at padding, added to the scores
}

// newAttnMask builds the mask for the path fusedAttentionAvailable picks from the 1/0 attention mask [B,T].
func newAttnMask(mask *ts.Tensor) *attnMask {
	if fusedAttentionAvailable() {
		size := mask.MustSize()
		return &attnMask{keep: mask.MustNe(ts.IntScalar(0), false).MustView([]int64{size[0], 1, 1, size[1]}, true)}
	}
	return &attnMask{add: extendedMask(mask)}
}

func (m *attnMask) drop() { torch.Drop(m.keep, m.add) }

// fusedAttention is the same function as attention, softmax(q·kᵀ/√dh + mask)·v with dropout on the
// probabilities in training, in one libtorch call; it drops q, k and v. The mask goes in as booleans
// (true = attend), which keeps its meaning whatever dtype autocast runs the kernel in: the additive
// float mask's lowest fp32 value would round to −inf in bf16.
func (b *block) fusedAttention(q, k, v, keep *ts.Tensor, train bool) *ts.Tensor {
	p := 0.0
	if train {
		p = b.attnDrop
	}
	// A libtorch error panics like the Must* calls around it, and Model.Forward's torch.Catch returns it.
	out := ts.MustScaledDotProductAttention(q, k, v, keep, p, false, nil) // default scale 1/√dh
	for _, t := range []*ts.Tensor{q, k, v} {
		t.MustDrop()
	}
	return out
}
