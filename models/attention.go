package models

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
)

// attnMask is the padding mask [B,1,1,T], broadcast over heads and queries, in the form the attention path
// takes. The encoder builds it once per forward and every layer shares it.
type attnMask struct {
	fused bool       // libtorch's scaled_dot_product_attention runs attention (torch.HasAttention)
	keep  *ts.Tensor // the fused path's: booleans, true = attend
	add   *ts.Tensor // the explicit path's: 0 at real tokens, the lowest float at padding, added to the scores
}

// newAttnMask builds the mask for the attention path libtorch has from the 1/0 attention mask [B,T]. An
// unpadded batch (Input.Unpadded: the host that built it knows the mask is all ones) gets none: no key is
// hidden, so no mask goes into the fused kernel, which keeps flash attention eligible on a GPU, and the
// explicit path adds nothing to the scores.
func newAttnMask(mask *ts.Tensor, unpadded bool) *attnMask {
	m := &attnMask{fused: torch.HasAttention()}
	switch {
	case unpadded && !maskAlways.Load():
	case m.fused:
		size := mask.MustSize()
		m.keep = mask.MustNe(ts.IntScalar(0), false).MustView([]int64{size[0], 1, 1, size[1]}, true)
	default:
		m.add = extendedMask(mask)
	}
	return m
}

func (m *attnMask) drop() { torch.Drop(m.keep, m.add) }

// maskAlways is set while AlwaysMask runs.
var maskAlways atomic.Bool

// AlwaysMask runs fn with every forward building its attention mask, unpadded batches included. A CUDA graph
// records the kernels of the forward it captures and replays them on every later batch of its shapes, padded
// or not: what it captures must read the mask.
func AlwaysMask(fn func() error) error {
	maskAlways.Store(true)
	defer maskAlways.Store(false)
	return fn()
}

// fusedAttention is the same function as attention, softmax(q·kᵀ/√dh + mask)·v with dropout on the
// probabilities in training, in one libtorch call; it drops q, k and v. The mask goes in as booleans
// (true = attend), which keeps its meaning whatever dtype autocast runs the kernel in: the additive
// float mask's lowest fp32 value would round to −inf in bf16. keep nil is no mask.
func (b *block) fusedAttention(q, k, v, keep *ts.Tensor, train bool) *ts.Tensor {
	p := 0.0
	if train {
		p = b.attnDrop
	}
	noteAttentionBackend(q, k, v, keep, p)
	// A libtorch error panics like the Must* calls around it, and Model.Forward's torch.Catch returns it.
	out := torch.Attention(q, k, v, keep, p) // default scale 1/√dh
	for _, t := range []*ts.Tensor{q, k, v} {
		t.MustDrop()
	}
	return out
}

// The kernel libtorch chose for the first fused attention with a padding mask and the first without, asked
// once each per process (one call more on those two forwards, none after).
var attentionBackends struct {
	sync.Mutex
	masked, unmasked string
}

func noteAttentionBackend(q, k, v, keep *ts.Tensor, p float64) {
	attentionBackends.Lock()
	defer attentionBackends.Unlock()
	slot := &attentionBackends.unmasked
	if keep != nil {
		slot = &attentionBackends.masked
	}
	if *slot != "" {
		return
	}
	name, err := torch.AttentionBackend(q, k, v, keep, p)
	if err != nil {
		name = "unknown (" + err.Error() + ")"
	}
	*slot = name
}

// AttentionBackends says which attention kernel the encoder has run so far: libtorch's choice for its fused
// attention (_fused_sdp_choice: "flash", "cudnn", "memory-efficient", "math"), once for batches with padding
// ("padding mask") and once for batches without ("no mask"), or "explicit" where the linked libtorch has no
// fused attention (1.13) and the encoder writes it out as matmul, mask and softmax. Empty before the first
// forward.
func AttentionBackends() string {
	if !torch.HasAttention() {
		return "explicit (matmul, mask, softmax: this libtorch has no scaled_dot_product_attention)"
	}
	attentionBackends.Lock()
	defer attentionBackends.Unlock()
	var parts []string
	if b := attentionBackends.masked; b != "" {
		parts = append(parts, b+" (padding mask)")
	}
	if b := attentionBackends.unmasked; b != "" {
		parts = append(parts, b+" (no mask)")
	}
	return strings.Join(parts, ", ")
}
