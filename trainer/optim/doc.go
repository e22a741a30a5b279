// Package optim holds convrep's optimisers (Adam and AdamW, as torch.optim in PyTorch 1.13), global
// gradient-norm clipping and learning-rate schedules.
//
// It exists because gotch's nn.Optimizer wraps libtorch's C++ optimiser: its Adam moments cannot be read or
// restored from Go, so a resumed run could not continue bit-identically, and its ClipGradNorm deadlocks.
// Here every piece of state is a gotch tensor owned by the Optimizer, and State/LoadState move it to and
// from checkpoint tensors byte for byte.
//
// A training step reads:
//
//	opt.SetLR(g, base[g]*sched.Factor(opt.StepCount())) // for each group
//	opt.ZeroGrad(); loss.Backward()
//	optim.ClipGradNorm(params, 1.0)
//	opt.Step()
//
// gotch v0.9.1 generates none of libtorch's _foreach_* ops (its generator skips them), so Step and ZeroGrad
// run in internal/torch's C++ shim: one call into libtorch per group for Step and one for ZeroGrad, whatever
// the number of parameters. On a GPU the update's eight or nine ops each run over the whole group as
// multi-tensor _foreach_ kernels; on the CPU each parameter goes through them in turn, in place or into a
// shared scratch buffer (adam.go has the sequence and why it equals PyTorch's formulas). ClipGradNorm calls
// gotch's C bindings rather than its Tensor wrappers (raw.go), which keeps the cost of an op near a
// microsecond.
package optim
