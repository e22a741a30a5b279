package torch

// #include <stdlib.h>
// #include "fused.h"
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// JoinRows is [a; b; c] along dimension 0, differentiable in each, as torch.cat would be: the memory a, b and
// c already share when they lie end to end (RowsEndToEnd), with no copy; a concatenation otherwise. The
// encoder keeps its query, key and value weights so, each a tensor of its own under its checkpoint name, and
// multiplies by the three at once. It panics on a libtorch error, as gotch's Must* calls do.
func JoinRows(a, b, c *ts.Tensor) *ts.Tensor {
	var out unsafe.Pointer
	if err := takeError(C.convrep_join_rows(a.Ctensor(), b.Ctensor(), c.Ctensor(), &out)); err != nil {
		panic(fmt.Errorf("join rows: %w", err))
	}
	return ts.FromCtensor(out)
}

// ProjectHeads is the queries, keys and values of x [B, T, H] by the joined weights w [3·heads·dh, H] (JoinRows
// of the three) and bias: one GEMM, its output cut into q, k and v [B, heads, T, dh] with no copy, what linear,
// view, permute and unbind give. Its backward makes x's, w's and the bias's gradients from each head's gradient
// as the attention's backward lays it out, with three GEMMs each for x and w and no copy of the gradients
// into the output's layout; under autocast the inputs are cast to its dtype, as a linear's are. It panics on a
// libtorch error, as gotch's Must* calls do.
func ProjectHeads(x, w, bias *ts.Tensor, heads int64) (q, k, v *ts.Tensor) {
	var pq, pk, pv unsafe.Pointer
	countCall()
	err := takeError(C.convrep_project_heads(x.Ctensor(), w.Ctensor(), bias.Ctensor(), C.int64_t(heads), &pq, &pk, &pv))
	if err != nil {
		panic(fmt.Errorf("project heads: %w", err))
	}
	return ts.FromCtensor(pq), ts.FromCtensor(pk), ts.FromCtensor(pv)
}

// RowsEndToEnd reports whether JoinRows(a, b, c) takes no copy: contiguous tensors in one storage, b right
// after a and c right after b, alike in dtype, device and every size but the first.
func RowsEndToEnd(a, b, c *ts.Tensor) bool {
	return C.convrep_rows_end_to_end(a.Ctensor(), b.Ctensor(), c.Ctensor()) == 1
}

// DenseGELU is gelu(x·wᵀ + bias), exact or (tanh) tanh-approximated, in one GEMM with the bias and the GELU
// in its epilogue (_addmm_activation) where that computes the same function: no gradient needed (it has no
// derivative), autocast off, and the device's kernel computing this GELU (AddmmGELU). Otherwise linear, then
// gelu. fused says which ran. It panics on a libtorch error, as gotch's Must* calls do.
func DenseGELU(x, w, bias *ts.Tensor, tanh bool) (out *ts.Tensor, fused bool) {
	var p unsafe.Pointer
	var f C.int
	if err := takeError(C.convrep_dense_gelu(x.Ctensor(), w.Ctensor(), bias.Ctensor(), cBool(tanh), &p, &f)); err != nil {
		panic(fmt.Errorf("dense gelu: %w", err))
	}
	return ts.FromCtensor(p), f == 1
}

// GELUKind is the GELU a fused kernel computes.
type GELUKind int

const (
	NoGELU    GELUKind = iota // none usable: the op is missing or computes something else
	ExactGELU                 // 0.5·x·(1 + erf(x/√2)), BERT's "gelu"
	TanhGELU                  // the tanh approximation, "gelu_new" / "gelu_pytorch_tanh"
)

// AddmmGELU is the GELU libtorch's _addmm_activation computes on dev's device type, measured once per type on
// a small problem: the exact one on the CPU, the tanh one on CUDA in libtorch 1.13 to 2.11.
func AddmmGELU(dev gotch.Device) GELUKind {
	return GELUKind(C.convrep_addmm_gelu_kind(cBool(dev.IsCuda())))
}
