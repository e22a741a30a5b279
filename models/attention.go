package models

import (
	"sync"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
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

// fusedAttention is the same function as attention, softmax(q·kᵀ/√dh + mask)·v with dropout on the
// probabilities in training, in one libtorch call; it drops q, k and v. The mask goes in as booleans
// (true = attend), which keeps its meaning whatever dtype autocast runs the kernel in: the additive
// float mask's lowest fp32 value would round to −inf in bf16.
func (b *block) fusedAttention(q, k, v, maskAdd *ts.Tensor, train bool) *ts.Tensor {
	keep := maskAdd.MustEq(ts.FloatScalar(0), false) // [B,1,1,T], broadcast over heads and queries
	p := 0.0
	if train {
		p = b.attnDrop
	}
	// A libtorch error panics like the Must* calls around it, and Model.Forward's torch.Catch returns it.
	out := ts.MustScaledDotProductAttention(q, k, v, keep, p, false, nil) // default scale 1/√dh
	for _, t := range []*ts.Tensor{keep, q, k, v} {
		t.MustDrop()
	}
	return out
}
