package torch

// #include <stdlib.h>
// #include "adam.h"
import "C"

import (
	"errors"
	"unsafe"

	"github.com/sugarme/gotch/ts"
)

// Kernels chooses how AdamStep runs a group's update.
type Kernels int

const (
	// DeviceKernels is, on a GPU, libtorch's fused kernels (DeviceFused) where it has them (with Coef, where
	// it has their tensor-learning-rate overloads and Coef is float32), else foreach kernels; on the CPU, fused
	// ones.
	DeviceKernels Kernels = iota
	// PerTensor runs every op of the update on one parameter, then on the next, with no temporary allocated
	// where a scratch view is given.
	PerTensor
	// Foreach runs each op over the whole group at once with libtorch's _foreach_* ops.
	Foreach
	// Fused runs the whole update of each contiguous CPU parameter in one pass over its arrays (a parameter
	// that is not one goes per tensor), with PerTensor's bits.
	Fused
	// DeviceFused is libtorch's _fused_adamw_ (or _fused_adam_): every parameter's whole update in one
	// multi-tensor kernel, one pass over its arrays, as torch.optim's fused=True, from Hyper's scalars. It
	// needs libtorch 2.1 or later (FusedAdamCompiled) and runs on CUDA (libtorch 2.4 added a CPU kernel).
	// With Coef it reads the learning rate and the step from Coef (torch.optim's capturable fused Adam), which
	// needs libtorch 2.3 or later (FusedAdamCoefCompiled).
	DeviceFused
)

// FusedAdamCompiled reports whether the linked libtorch has the fused kernels DeviceFused runs.
func FusedAdamCompiled() bool { return C.convrep_fused_adam_compiled() == 1 }

// FusedAdamCoefCompiled reports whether the linked libtorch has the fused kernels' overloads that DeviceFused
// runs with Coef, taking the learning rate as a tensor.
func FusedAdamCoefCompiled() bool { return C.convrep_fused_adam_coef_compiled() == 1 }

// AdamHyper is an update's plain hyperparameters, which DeviceFused takes in place of the folded terms.
type AdamHyper struct {
	LR, Beta1, Beta2 float64
	WeightDecay      float64 // AdamW's decoupled decay when AdamW, else Adam's L2 term
	Eps              float64
	AdamW            bool
}

// AdamGroup is one parameter group's Adam or AdamW update, in the arithmetic of trainer/optim (adam.go there
// explains it), which owns the state and computes the scalars. Params, Data, Scratch, ExpAvg, ExpAvgSq,
// Steps, DenomScale and EpsScale have one entry per parameter.
type AdamGroup struct {
	Params []*ts.Tensor // the leaf parameters, whose gradients are read
	Data   []*ts.Tensor // their detached aliases, updated in place
	// Scratch holds, per parameter, a tensor of its shape that the per-tensor kernels may overwrite (a nil
	// entry, or a nil slice: they allocate).
	Scratch []*ts.Tensor
	// ExpAvg and ExpAvgSq are the moments, nil until a parameter first has a gradient: AdamStep makes them
	// then (zeros like it), and the caller owns them.
	ExpAvg, ExpAvgSq []*ts.Tensor
	// Steps are the parameters' update counts: each updated parameter's is incremented.
	Steps []int64
	// DenomScale and EpsScale are the folded bias-correction terms of each parameter at its step after this
	// update: d = √v/DenomScale + EpsScale.
	DenomScale, EpsScale []float64
	// Beta1Weight and Beta2Weight are 1−β1 and 1−β2, the moments' lerp weights.
	Beta1Weight, Beta2Weight float64
	HasDecay                 bool    // AdamW's decoupled weight decay: the parameters are multiplied by Decay
	Decay                    float64 // 1 − lr·wd
	HasL2                    bool    // Adam's weight decay: L2 times the parameter is added to the gradient
	L2                       float64
	MoveParams               bool // false at learning rate 0: the moments are updated, the parameters are not
	Kernels                  Kernels
	Hyper                    AdamHyper // read by DeviceFused only, which reads LR from Coef when given
	// Coef, when set, is a [5] tensor of the parameters' dtype on their device holding [Decay, the group's
	// DenomScale, its EpsScale, the learning rate, the step after this update]: the update reads them there (a
	// CUDA graph replays it with whatever Coef holds), and DenomScale, EpsScale, Decay and MoveParams are not
	// read. All updated parameters must then be at the same step; at learning rate 0 the caller stores
	// denominator 1 and eps +Inf, which leaves them unmoved. DeviceFused reads the last two, the others the
	// first three.
	Coef *ts.Tensor
}

// AdamStep applies the update to every parameter of g that has a gradient, in one call into libtorch whatever
// the number of parameters (the kernels it launches are as many as the parameters per tensor, a few per op
// with foreach kernels). Parameters without a gradient are skipped. Every gradient is checked first (dense,
// the parameter's shape, dtype and device): then nothing changes, and bad is the index of the parameter. An
// error later may leave some parameters updated; bad is the index of the one being updated when the
// per-tensor kernels failed, else -1. Moments made are in g either way.
func AdamStep(g *AdamGroup) (bad int, err error) {
	n := len(g.Params)
	if n == 0 {
		return -1, nil
	}
	if len(g.Data) != n || len(g.ExpAvg) != n || len(g.ExpAvgSq) != n || len(g.Steps) != n || len(g.DenomScale) != n ||
		len(g.EpsScale) != n || (g.Scratch != nil && len(g.Scratch) != n) {
		return -1, errors.New("adam step: the group's lists differ in length")
	}
	params, data := handles(g.Params), handles(g.Data)
	m, v := optionalHandles(g.ExpAvg), optionalHandles(g.ExpAvgSq)
	var scratch *unsafe.Pointer
	if g.Scratch != nil {
		scratch = ptrs(optionalHandles(g.Scratch))
	}
	var coef unsafe.Pointer
	if g.Coef != nil {
		coef = g.Coef.Ctensor()
	}
	hyper := C.convrep_adam_hyper{lr: C.double(g.Hyper.LR), beta1: C.double(g.Hyper.Beta1), beta2: C.double(g.Hyper.Beta2),
		weight_decay: C.double(g.Hyper.WeightDecay), eps: C.double(g.Hyper.Eps), adamw: cBool(g.Hyper.AdamW)}
	var cbad C.int
	countCall()
	msg := C.convrep_adam_step(C.int(n), ptrs(params), ptrs(data), scratch, ptrs(m), ptrs(v),
		(*C.int64_t)(unsafe.Pointer(&g.Steps[0])), (*C.double)(unsafe.Pointer(&g.DenomScale[0])),
		(*C.double)(unsafe.Pointer(&g.EpsScale[0])), C.double(g.Beta1Weight), C.double(g.Beta2Weight),
		cBool(g.HasDecay), C.double(g.Decay), cBool(g.HasL2), C.double(g.L2), cBool(g.MoveParams), C.int(g.Kernels), coef, &hyper, &cbad)
	for i := range n {
		if g.ExpAvg[i] == nil && m[i] != nil {
			g.ExpAvg[i] = ts.FromCtensor(m[i])
		}
		if g.ExpAvgSq[i] == nil && v[i] != nil {
			g.ExpAvgSq[i] = ts.FromCtensor(v[i])
		}
	}
	return int(cbad), takeError(msg)
}

// ZeroGrads zeroes every defined gradient of params in place, as torch's zero_grad(set_to_none=False), in one
// call into libtorch.
func ZeroGrads(params []*ts.Tensor) error {
	if len(params) == 0 {
		return nil
	}
	countCall()
	return takeError(C.convrep_zero_grads(C.int(len(params)), ptrs(handles(params))))
}

// optionalHandles is handles with nil for a nil tensor.
func optionalHandles(xs []*ts.Tensor) []unsafe.Pointer {
	hs := make([]unsafe.Pointer, len(xs))
	for i, x := range xs {
		if x != nil {
			hs[i] = x.Ctensor()
		}
	}
	return hs
}

// ptrs is a C array of the handles hs (Go memory holding C pointers only, which cgo lets C read and write).
func ptrs(hs []unsafe.Pointer) *unsafe.Pointer { return &hs[0] }
