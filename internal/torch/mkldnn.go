package torch

// #include "mkldnn.h"
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/sugarme/gotch/ts"
)

// HasMKLDNN reports whether the linked libtorch has oneDNN (mkldnn) kernels for the CPU.
func HasMKLDNN() bool { return C.convrep_mkldnn_available() == 1 }

// MKLDNNDirect reports whether the packed linears call oneDNN's inner product directly (mkldnn.h).
func MKLDNNDirect() bool { return C.convrep_mkldnn_direct() == 1 }

// OneDNNLoaded reports whether the process has a shared oneDNN library, as Debian's libtorch loads.
func OneDNNLoaded() bool { return C.convrep_onednn_loaded() == 1 }

// MKLDNNWeight copies a CPU float32 weight w [out, in] once into oneDNN's layouts, for MKLDNNLinear (mkldnn.h
// says which), in float32 or, with bf16, in bfloat16 (where MKLDNNDirect): the linears then round their input to
// bfloat16 and sum the products in float32. The copy does not follow w: compare Version(w) with its value at
// packing to know when it is stale.
func MKLDNNWeight(w *ts.Tensor, bf16 bool) (*ts.Tensor, error) {
	var p unsafe.Pointer
	if err := takeError(C.convrep_mkldnn_weight(w.Ctensor(), cBool(bf16), &p)); err != nil {
		return nil, fmt.Errorf("pack weight for oneDNN: %w", err)
	}
	return ts.FromCtensor(p), nil
}

// MKLDNNLinear is x·wᵀ + bias for a CPU float32 x [..., in] by oneDNN's inner product over the packed weight
// wp (MKLDNNWeight); bias may be nil. It has no gradient: inference only. It panics on a libtorch error, as
// gotch's Must* calls do.
func MKLDNNLinear(x, wp, bias *ts.Tensor) *ts.Tensor {
	var b, p unsafe.Pointer
	if bias != nil {
		b = bias.Ctensor()
	}
	countCall()
	if err := takeError(C.convrep_mkldnn_linear(x.Ctensor(), wp.Ctensor(), b, &p)); err != nil {
		panic(fmt.Errorf("oneDNN linear: %w", err))
	}
	return ts.FromCtensor(p)
}

// MKLDNNFeedForward is w2·gelu(w1·x + b1) + b2 with BERT's exact GELU, for a CPU float32 x [..., in], by
// oneDNN on the packed weights w1 and w2 (MKLDNNWeight), the GELU a post-op of the first inner product where
// the weights were packed by oneDNN's own API; either bias may be nil. No gradient. It panics on a libtorch
// error, as gotch's Must* calls do.
func MKLDNNFeedForward(x, w1, b1, w2, b2 *ts.Tensor) *ts.Tensor {
	var p, c1, c2 unsafe.Pointer
	if b1 != nil {
		c1 = b1.Ctensor()
	}
	if b2 != nil {
		c2 = b2.Ctensor()
	}
	countCall()
	if err := takeError(C.convrep_mkldnn_ffn(x.Ctensor(), w1.Ctensor(), c1, w2.Ctensor(), c2, &p)); err != nil {
		panic(fmt.Errorf("oneDNN feed-forward: %w", err))
	}
	return ts.FromCtensor(p)
}

// Version is t's version counter, which every in-place change (an optimiser step, a load) raises.
func Version(t *ts.Tensor) int64 { return int64(C.convrep_tensor_version(t.Ctensor())) }

// HasCPUAttention reports whether CPUAttention can run: the BLAS under libtorch exports sgemm_ (Debian's
// OpenBLAS does; PyTorch's own builds keep MKL's to themselves).
func HasCPUAttention() bool { return C.convrep_cpu_attention_available() == 1 }

// CPUAttention is the encoder's self-attention for inference on the CPU: softmax(q·kᵀ/√dh + mask)·v for each
// of heads heads, their outputs side by side [B, T, H], where q, k and v are the thirds of qkv [B, T, 3H]
// (contiguous float32, a joined projection's output) and mask is nil or the additive mask of B·T floats.
// libtorch 1.13's batched matmul runs B·heads small GEMMs one at a time, each through the dispatcher and
// a select of each operand; this makes the same GEMMs directly on strided views (the BLAS's up to 16 tokens,
// oneDNN's batched matmul past that), the mask added by the first and libtorch's vectorised softmax between
// them, with no copy in or out. No gradient. It panics on a libtorch error, as gotch's Must* calls do.
func CPUAttention(qkv, mask *ts.Tensor, heads int64) *ts.Tensor {
	var m, p unsafe.Pointer
	if mask != nil {
		m = mask.Ctensor()
	}
	countCall()
	if err := takeError(C.convrep_cpu_attention(qkv.Ctensor(), m, C.int64_t(heads), &p)); err != nil {
		panic(fmt.Errorf("CPU attention: %w", err))
	}
	return ts.FromCtensor(p)
}

// GradEnabled reports whether the calling OS thread records autograd (NoGrad turns it off).
func GradEnabled() bool { return C.convrep_grad_enabled() == 1 }

// MKLDNNLayerNorm is LayerNorm over the last dimension of a CPU float32 x with a weight and a bias per feature,
// by oneDNN's layer normalisation where the build calls oneDNN (MKLDNNDirect), else by libtorch's. No gradient.
// It panics on a libtorch error, as gotch's Must* calls do.
func MKLDNNLayerNorm(x, w, b *ts.Tensor, eps float64) *ts.Tensor {
	var p unsafe.Pointer
	countCall()
	if err := takeError(C.convrep_mkldnn_layer_norm(x.Ctensor(), w.Ctensor(), b.Ctensor(), C.double(eps), &p)); err != nil {
		panic(fmt.Errorf("oneDNN LayerNorm: %w", err))
	}
	return ts.FromCtensor(p)
}
