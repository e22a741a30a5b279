package optim

import (
	"fmt"
	"math"

	"convrep/internal/torch"
)

// Step applies one Adam or AdamW update to every parameter that has a gradient; parameters whose gradient
// is undefined are skipped and their state is left alone, as in torch. If libtorch fails midway the
// parameters already updated stay updated, the step count does not advance, and the error names the
// parameter where it can (a gradient that is sparse or does not match its parameter is found before anything
// changes).
//
// For a parameter p with gradient g at its own step t (PyTorch 1.13, amsgrad off):
//
//	AdamW: p ← p·(1 − lr·wd)                 Adam: g ← g + wd·p
//	m ← β1·m + (1−β1)·g
//	v ← β2·v + (1−β2)·g²
//	p ← p − (lr/bc1) · m / (√v/√bc2 + ε)      with bc1 = 1−β1^t, bc2 = 1−β2^t
//
// The ops are arranged as torch's own variants do: both moments with lerp_ (m ← m + (1−β1)(g − m), torch ≥
// 2.0's form for m; v likewise with g², which also saves two passes over memory), and the step size folded
// into the denominator, d = √v/(√bc2·(−s)) + ε/(−s) with s = lr/bc1, then p ← p + m/d (torch 1.13's
// capturable form). All equal the formulas above up to float rounding. The scalars are computed here, the
// ops run in internal/torch's shim, one call per group whatever its number of parameters (torch.AdamStep):
// on a GPU the whole update of the group is libtorch's _fused_adamw_ (torch.optim's fused=True: one kernel,
// one pass over p, g, m and v) where libtorch has it (2.1 on), else each op runs over the whole group with
// libtorch's multi-tensor _foreach_ kernels, about nine passes over parameter-sized arrays like torch's
// unfused Adam (and so do the steps a CUDA graph replays, which read their scalars from the device); on the CPU each parameter's whole update is
// one pass over its arrays (the shim's fused loop), with the bits of the ops run one after the other, which
// the per-tensor kernels (writing g² and d into a scratch view, scratch.go) and the _foreach_ ops also give.
func (o *Optimizer) Step() error {
	if o.err != nil {
		return o.err
	}
	if o.scalars != nil {
		if err := o.LoadScalars(); err != nil {
			return err
		}
		return o.Update()
	}
	for gi := range o.groups {
		if err := o.stepGroup(&o.groups[gi]); err != nil {
			return fmt.Errorf("optim: %s step %d, group %d (%q): %w", o.cfg.Kind, o.steps+1, gi, o.groups[gi].name, err)
		}
	}
	o.steps++
	return nil
}

// stepGroup updates one group in one call into libtorch.
func (o *Optimizer) stepGroup(g *group) error {
	u := &g.update
	u.MoveParams = g.lr != 0
	u.HasDecay, u.HasL2 = false, false
	if g.wd != 0 {
		if o.cfg.Kind == AdamW {
			u.HasDecay, u.Decay = true, 1-g.lr*g.wd
		} else {
			u.HasL2, u.L2 = true, g.wd
		}
	}
	bias := map[int64][2]float64{} // the parameters of a group usually share one step
	for i := range g.params {
		p := &g.params[i]
		u.ExpAvg[i], u.ExpAvgSq[i], u.Steps[i] = p.expAvg, p.expAvgSq, p.step
		if !u.MoveParams {
			// torch adds m/d times −0: the parameter keeps its value, and the folded form would divide by zero.
			u.DenomScale[i], u.EpsScale[i] = 0, 0
			continue
		}
		t := p.step + 1
		b, ok := bias[t]
		if !ok {
			bc1 := 1 - math.Pow(o.cfg.Beta1, float64(t))
			bc2 := 1 - math.Pow(o.cfg.Beta2, float64(t))
			negStep := -(g.lr / bc1)
			b = [2]float64{math.Sqrt(bc2) * negStep, o.cfg.Eps / negStep}
			bias[t] = b
		}
		u.DenomScale[i], u.EpsScale[i] = b[0], b[1]
	}
	u.Kernels = kernels
	u.Hyper = torch.AdamHyper{LR: g.lr, Beta1: o.cfg.Beta1, Beta2: o.cfg.Beta2, WeightDecay: g.wd, Eps: o.cfg.Eps, AdamW: o.cfg.Kind == AdamW}
	bad, err := torch.AdamStep(u)
	for i := range g.params {
		p := &g.params[i]
		if p.expAvg == nil && u.ExpAvg[i] != nil {
			p.expAvg, p.expAvgSq = u.ExpAvg[i], u.ExpAvgSq[i]
			torch.Persist(p.expAvg, p.expAvgSq) // made in the first step, they outlive its torch.Scope
		}
		p.step = u.Steps[i]
		u.ExpAvg[i], u.ExpAvgSq[i] = nil, nil // the params hold them; LoadState may replace them
	}
	if err != nil && bad >= 0 {
		return fmt.Errorf("param %q: %w", g.params[bad].name, err)
	}
	return err
}

// kernels is how Step's ops run: the device's choice, except in tests that compare both ways on the CPU.
var kernels = torch.DeviceKernels
