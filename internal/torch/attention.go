package torch

// #include <stdlib.h>
// #include "attention.h"
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/sugarme/gotch/ts"
)

// HasAttention reports whether the linked libtorch has scaled_dot_product_attention (2.0 and later: flash,
// memory-efficient or cuDNN kernels on a GPU, a fused kernel on the CPU). Against 1.13 the encoder writes
// attention out with matmul, mask and softmax instead.
func HasAttention() bool { return C.convrep_attention_compiled() == 1 }

// Attention is softmax(q·kᵀ/√d + mask)·v with dropout p on the probabilities, libtorch's
// scaled_dot_product_attention, over q, k, v [B, heads, T, d]. keep is a boolean [B, 1, 1, T] mask (true =
// attend), or nil where no key is padding: then no mask goes in at all, which keeps the flash kernel eligible.
// It panics on a libtorch error, as gotch's Must* calls do.
func Attention(q, k, v, keep *ts.Tensor, p float64) *ts.Tensor {
	var out unsafe.Pointer
	countCall()
	if err := takeError(C.convrep_attention(q.Ctensor(), k.Ctensor(), v.Ctensor(), maskHandle(keep), C.double(p), &out)); err != nil {
		panic(fmt.Errorf("attention: %w", err))
	}
	return ts.FromCtensor(out)
}

// AttentionBackend is the kernel libtorch picks for Attention(q, k, v, keep, p) (_fused_sdp_choice): "math",
// "flash", "memory-efficient", "cudnn", "overrideable", or "none" where no backend takes these inputs.
func AttentionBackend(q, k, v, keep *ts.Tensor, p float64) (string, error) {
	var b C.longlong
	countCall()
	if err := takeError(C.convrep_attention_backend(q.Ctensor(), k.Ctensor(), v.Ctensor(), maskHandle(keep), C.double(p), &b)); err != nil {
		return "", fmt.Errorf("attention backend: %w", err)
	}
	return backendName(int64(b)), nil
}

// backendName names libtorch's sdp::SDPBackend values (aten/src/ATen/native/transformers/sdp_utils_cpp.h).
func backendName(b int64) string {
	switch b {
	case -1:
		return "none"
	case 0:
		return "math"
	case 1:
		return "flash"
	case 2:
		return "memory-efficient"
	case 3:
		return "cudnn"
	case 4:
		return "overrideable"
	}
	return fmt.Sprintf("backend %d", b)
}

func maskHandle(keep *ts.Tensor) unsafe.Pointer {
	if keep == nil {
		return nil
	}
	return keep.Ctensor()
}
