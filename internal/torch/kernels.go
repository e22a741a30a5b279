package torch

// #include <stdlib.h>
// #include "kernels.h"
import "C"

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// KernelsCompiled reports whether this build can load convrep's fused CUDA kernels (a build with CUDA).
func KernelsCompiled() bool { return C.convrep_kernels_compiled() == 1 }

// LoadKernels loads ptx, the program of internal/gpu/kernels compiled for dev's GPU, on dev; from then on
// DropAddLayerNorm and DenseBiasGELU run its kernels on that device. Loading twice is a no-op.
func LoadKernels(dev gotch.Device, ptx []byte) error {
	if !dev.IsCuda() {
		return errors.New("fused kernels: not a CUDA device")
	}
	src := C.CString(string(ptx))
	defer C.free(unsafe.Pointer(src))
	if err := takeError(C.convrep_kernels_load(C.int(dev.Value), src)); err != nil {
		return err
	}
	anyLoaded.Store(true)
	return nil
}

// anyLoaded is whether LoadKernels succeeded on some device of the process.
var anyLoaded atomic.Bool

// KernelsInUse reports whether the kernels' path may run anywhere: loaded on some device and not turned off. It
// asks libtorch nothing, so the encoder calls it first and asks for a tensor's device (a call into libtorch)
// only when it is true: a run on the composites makes no call more.
func KernelsInUse() bool { return anyLoaded.Load() && !kernelsOff.Load() }

// ComputeCapability is dev's CUDA compute capability as major·10 + minor: 80 on an A100, 90 on an H100 or H200.
func ComputeCapability(dev gotch.Device) (int, error) {
	if !dev.IsCuda() {
		return 0, errors.New("compute capability: not a CUDA device")
	}
	var msg *C.char
	cc := int(C.convrep_compute_capability(C.int(dev.Value), &msg))
	if err := takeError(msg); err != nil {
		return 0, err
	}
	return cc, nil
}

// kernelsOff turns the kernels' path off for the process (UseKernels).
var kernelsOff atomic.Bool

// UseKernels turns the kernels' path on (the default) or off: off, KernelsLoaded reports false everywhere and
// the encoder runs libtorch's composites even where the kernels are loaded.
func UseKernels(on bool) { kernelsOff.Store(!on) }

// KernelsLoaded reports whether LoadKernels succeeded on dev and UseKernels has not turned them off.
func KernelsLoaded(dev gotch.Device) bool {
	return dev.IsCuda() && !kernelsOff.Load() && C.convrep_kernels_loaded(C.int(dev.Value)) == 1
}

// DropAddLayerNorm is LayerNorm(dropout(x, p) + resid) over the last dimension, with weight gamma and bias
// beta, as the fused kernels compute it (one kernel forward, one backward; the dropout mask drawn from the
// device's default generator and regenerated in backward) where they are loaded and take these tensors, else
// as libtorch's composite. p = 0 is no dropout. The output has x's dtype on the kernels' path (the residual
// stream stays in bfloat16 under autocast), the weights' on the composite one. It panics on a libtorch error,
// as gotch's Must* calls do.
func DropAddLayerNorm(x, resid, gamma, beta *ts.Tensor, p, eps float64) *ts.Tensor {
	var out unsafe.Pointer
	countCall()
	err := takeError(C.convrep_drop_add_layer_norm(x.Ctensor(), resid.Ctensor(), gamma.Ctensor(), beta.Ctensor(),
		C.double(p), C.double(eps), &out))
	if err != nil {
		panic(fmt.Errorf("dropout, residual and LayerNorm: %w", err))
	}
	return ts.FromCtensor(out)
}

// DenseBiasGELU is gelu(x·wᵀ + bias) with the erf GELU: the GEMM without its bias, then the fused bias and GELU
// kernel (the backward recomputes the GELU from the GEMM's output) where the kernels are loaded, else linear
// then gelu. It panics on a libtorch error, as gotch's Must* calls do.
func DenseBiasGELU(x, w, bias *ts.Tensor) *ts.Tensor {
	var out unsafe.Pointer
	countCall()
	if err := takeError(C.convrep_dense_bias_gelu(x.Ctensor(), w.Ctensor(), bias.Ctensor(), &out)); err != nil {
		panic(fmt.Errorf("dense, bias and GELU: %w", err))
	}
	return ts.FromCtensor(out)
}

// EmbedLayerNorm is dropout(LayerNorm(word[ids] + pos[posIDs] + typ[typeIDs]), p) over the last dimension,
// with weight gamma and bias beta: a BERT-like encoder's embeddings, [ids' shape..., H]. Where the kernels are
// loaded and take these tensors (float32 tables of at most 768 columns) it is one kernel forward and one
// backward, the tables' gradients by libtorch's embedding backward; else libtorch's lookups, add, layer_norm and
// dropout. typ and typeIDs are nil where the family has no token types (typ with nil typeIDs panics); p = 0 is no
// dropout. It panics on a libtorch error, as gotch's Must* calls do.
func EmbedLayerNorm(word, pos, typ, ids, posIDs, typeIDs, gamma, beta *ts.Tensor, p, eps float64) *ts.Tensor {
	var out unsafe.Pointer
	var typC, typeIDsC unsafe.Pointer
	if typ != nil {
		if typeIDs == nil {
			panic(errors.New("embeddings and LayerNorm: a token-type table without token type ids"))
		}
		typC, typeIDsC = typ.Ctensor(), typeIDs.Ctensor()
	}
	countCall()
	err := takeError(C.convrep_embed_layer_norm(word.Ctensor(), pos.Ctensor(), typC, ids.Ctensor(), posIDs.Ctensor(),
		typeIDsC, gamma.Ctensor(), beta.Ctensor(), C.double(p), C.double(eps), &out))
	if err != nil {
		panic(fmt.Errorf("embeddings and LayerNorm: %w", err))
	}
	return ts.FromCtensor(out)
}
