package optim

import (
	"fmt"
	"math"
	"runtime"

	lib "github.com/sugarme/gotch/libtch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
)

// Step applies one Adam or AdamW update to every parameter that has a gradient; parameters whose gradient
// is undefined are skipped and their state is left alone, as in torch. If libtorch fails midway the
// parameters already updated stay updated, the step count does not advance, and the error names the
// parameter.
//
// For a parameter p with gradient g at its own step t (PyTorch 1.13, amsgrad off):
//
//	AdamW: p ← p·(1 − lr·wd)                 Adam: g ← g + wd·p
//	m ← β1·m + (1−β1)·g
//	v ← β2·v + (1−β2)·g²
//	p ← p − (lr/bc1) · m / (√v/√bc2 + ε)      with bc1 = 1−β1^t, bc2 = 1−β2^t
//
// gotch exposes neither alpha nor value on add_/addcmul_/addcdiv_, so the ops are arranged as torch's own
// variants do: both moments with lerp_ (m ← m + (1−β1)(g − m), torch ≥ 2.0's form for m; v likewise with
// g², which also saves two passes over memory), and the step size folded into the denominator, d =
// √v/(√bc2·(−s)) + ε/(−s) with s = lr/bc1, then p ← p + m/d (torch 1.13's capturable form). All equal the
// formulas above up to float rounding. Per parameter that is 8 libtorch calls (9 with weight decay); g²
// and d live in a scratch view (scratch.go). On CPU the step is bound by memory traffic, about 20 passes
// over parameter-sized arrays, like torch's unfused Adam.
func (o *Optimizer) Step() error {
	if o.err != nil {
		return o.err
	}
	for gi := range o.groups {
		if err := o.stepGroup(&o.groups[gi]); err != nil {
			return fmt.Errorf("optim: %s step %d, group %d (%q): %w", o.cfg.Kind, o.steps+1, gi, o.groups[gi].name, err)
		}
	}
	o.steps++
	return nil
}

// groupScalars are the per-step constants of one group: decay and l2 depend on the group, the bias terms
// on the parameter's step too (kept per step value: the parameters of a group usually share one).
type groupScalars struct {
	decay, l2 scalar
	bias      map[int64][2]scalar // step → {√bc2·(−s), ε/(−s)}
	owned     scalars
}

func (o *Optimizer) stepGroup(g *group) error {
	sc := groupScalars{bias: map[int64][2]scalar{}}
	defer sc.owned.free()
	if g.wd != 0 {
		if o.cfg.Kind == AdamW {
			sc.decay = sc.owned.float(1 - g.lr*g.wd)
		} else {
			sc.l2 = sc.owned.float(g.wd)
		}
	}
	runtime.LockOSThread() // libtorch's error slot is per thread
	defer runtime.UnlockOSThread()
	for i := range g.params {
		p := &g.params[i]
		if err := o.update(g, p, &sc); err != nil {
			return fmt.Errorf("param %q: %w", p.name, err)
		}
	}
	return nil
}

// update applies the step to one parameter.
func (o *Optimizer) update(g *group, p *param, sc *groupScalars) error {
	c := &calls{}
	defer c.release()
	grad := c.grad(p.t)
	if grad == nil {
		return c.err
	}
	if lib.AtIsSparse(grad) {
		return fmt.Errorf("sparse gradients are not supported")
	}
	if p.expAvg == nil {
		var err error
		if p.expAvg, p.expAvgSq, err = zeroMoments(p); err != nil {
			return err
		}
	}
	p.step++
	data, m, v, s := handle(p.data), handle(p.expAvg), handle(p.expAvgSq), handle(p.scratch)

	if sc.decay != nil {
		c.do("p *= 1-lr·wd", func(out *lib.Ctensor) { lib.AtgMulScalar_(out, data, sc.decay) })
	}
	if sc.l2 != nil {
		g := grad
		grad = c.keep("wd·p", func(out *lib.Ctensor) { lib.AtgMulScalar(out, data, sc.l2) })
		c.do("g + wd·p", func(out *lib.Ctensor) { lib.AtgAdd_(out, grad, g) })
	}
	c.do("lerp m", func(out *lib.Ctensor) { lib.AtgLerp_(out, m, grad, o.oneMinusBeta1) })
	c.do("g²", func(out *lib.Ctensor) { lib.AtgMulOut(out, s, grad, grad) })
	c.do("lerp v", func(out *lib.Ctensor) { lib.AtgLerp_(out, v, s, o.oneMinusBeta2) })
	if g.lr == 0 {
		// torch adds m/d times −0: the parameter keeps its value, and the folded form would divide by zero.
		return c.err
	}
	bias, ok := sc.bias[p.step]
	if !ok {
		bc1 := 1 - math.Pow(o.cfg.Beta1, float64(p.step))
		bc2 := 1 - math.Pow(o.cfg.Beta2, float64(p.step))
		negStep := -(g.lr / bc1)
		bias = [2]scalar{sc.owned.float(math.Sqrt(bc2) * negStep), sc.owned.float(o.cfg.Eps / negStep)}
		sc.bias[p.step] = bias
	}
	c.do("√v", func(out *lib.Ctensor) { lib.AtgSqrtOut(out, s, v) })
	c.do("d /", func(out *lib.Ctensor) { lib.AtgDivScalar_(out, s, bias[0]) })
	c.do("d +", func(out *lib.Ctensor) { lib.AtgAddScalar_(out, s, bias[1]) })
	c.do("p += m/d", func(out *lib.Ctensor) { lib.AtgAddcdiv_(out, data, m, s) })
	return c.err
}

// zeroMoments makes p's Adam moments, zeros like p (torch: zeros_like(p, memory_format=preserve_format)).
func zeroMoments(p *param) (m, v *ts.Tensor, err error) {
	err = guarded("zero moments", func() error {
		m = p.data.MustZerosLike(false)
		v = p.data.MustZerosLike(false)
		torch.Persist(m, v) // made in the first step, they outlive its torch.Scope
		return nil
	})
	return m, v, err
}
