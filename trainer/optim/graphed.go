package optim

import (
	"errors"
	"fmt"
	"math"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
)

// The update as a CUDA graph replays it (train.cuda_graphs).
//
// A captured step cannot take the learning rate and the bias corrections as host numbers: the graph would
// replay the values it saw when it was captured. With device scalars, each group keeps its per-step numbers,
// [1 − lr·wd, √bc2·(−lr/bc1), ε/(−lr/bc1), lr, t] (adam.go's folded form, then the learning rate and the step
// t that libtorch's fused kernels read where the linked libtorch has them; the CPU's kernels and the foreach
// ones read the first three), in a row of one small tensor on the parameters' device. LoadScalars writes the
// coming step's rows there, one non-blocking copy from pinned memory, before the step runs; Update runs the
// kernels, which read them on the device; Replayed advances the counters of a step whose kernels a graph ran.
// Step is LoadScalars then Update. On a GPU with libtorch 2.3 or later the kernels are the fused AdamW's (one
// pass over p, g, m and v, as eager steps there), not the foreach ones' (about ten passes).
//
// The arithmetic is adam.go's, with the scalars read from the tensor; at learning rate 0 the row holds
// denominator 1 and eps +Inf, so that m/d is 0 and the parameters do not move (the host form skips the
// division instead). One row per group means the group's updated parameters share one step count: a group
// where some parameter joined later is refused.

// UseDeviceScalars switches Step to device scalars. All parameters must have one dtype and device.
func (o *Optimizer) UseDeviceScalars() error {
	if o.scalars != nil {
		return nil
	}
	first := o.groups[0].params[0]
	dev := first.t.MustDevice()
	for _, g := range o.groups {
		for _, p := range g.params {
			if p.dtype != first.dtype || p.t.MustDevice() != dev {
				return fmt.Errorf("optim: device scalars: param %q is %v on %v, %q %v on %v: one dtype and device",
					p.name, p.dtype, p.t.MustDevice(), first.name, first.dtype, dev)
			}
		}
	}
	return torch.Catch("optim: device scalars", func() error {
		o.scalars = ts.MustZeros([]int64{int64(len(o.groups)), scalarsPerGroup}, first.dtype, dev)
		torch.Persist(o.scalars)
		for gi := range o.groups {
			g := &o.groups[gi]
			g.update.Coef = o.scalars.MustSelect(0, int64(gi), false)
			torch.Persist(g.update.Coef)
			g.updated = make([]bool, len(g.params))
		}
		return nil
	})
}

// LoadScalars copies every group's numbers for the coming step to the device (device scalars only). The
// coming step of a group is one past the highest step of its parameters.
func (o *Optimizer) LoadScalars() error {
	if o.scalars == nil {
		return errors.New("optim: load scalars: device scalars are off")
	}
	if o.err != nil {
		return o.err
	}
	rows := make([]float64, 0, scalarsPerGroup*len(o.groups))
	for _, g := range o.groups {
		var last int64
		for _, p := range g.params {
			last = max(last, p.step)
		}
		rows = append(rows, o.groupScalars(&g, last+1)...)
	}
	return torch.Catch("optim: load scalars", func() error {
		var host *ts.Tensor
		if o.groups[0].params[0].dtype == gotch.Float {
			f := make([]float32, len(rows))
			for i, v := range rows {
				f[i] = float32(v) // as libtorch rounds a double Scalar for a float tensor
			}
			host = ts.MustOfSlice(f)
		} else {
			host = ts.MustOfSlice(rows)
		}
		defer host.MustDrop()
		src := host
		if o.scalars.MustDevice().IsCuda() {
			pinned, err := torch.PinMemory(host)
			if err != nil {
				return err
			}
			defer pinned.MustDrop()
			src = pinned
		}
		return torch.CopyAsync(o.scalars, src.MustView([]int64{int64(len(o.groups)), scalarsPerGroup}, false))
	})
}

// scalarsPerGroup is the width of a group's row of device scalars (torch.AdamGroup's Coef).
const scalarsPerGroup = 5

// groupScalars are group g's [decay, denominator term, eps term, learning rate, t] at step t.
func (o *Optimizer) groupScalars(g *group, t int64) []float64 {
	decay := 1.0
	if o.cfg.Kind == AdamW && g.wd != 0 {
		decay = 1 - g.lr*g.wd
	}
	if g.lr == 0 {
		return []float64{decay, 1, math.Inf(1), 0, float64(t)}
	}
	bc1 := 1 - math.Pow(o.cfg.Beta1, float64(t))
	bc2 := 1 - math.Pow(o.cfg.Beta2, float64(t))
	negStep := -(g.lr / bc1)
	return []float64{decay, math.Sqrt(bc2) * negStep, o.cfg.Eps / negStep, g.lr, float64(t)}
}

// Update runs the kernels of one step with the scalars last loaded, and advances the step counts (device
// scalars only). It is what a CUDA graph captures.
func (o *Optimizer) Update() error {
	if o.scalars == nil {
		return errors.New("optim: update: device scalars are off")
	}
	for gi := range o.groups {
		g := &o.groups[gi]
		before := make([]int64, len(g.params))
		for i, p := range g.params {
			before[i] = p.step
		}
		if err := o.stepGroup(g); err != nil {
			return fmt.Errorf("optim: %s step %d, group %d (%q): %w", o.cfg.Kind, o.steps+1, gi, g.name, err)
		}
		for i, p := range g.params {
			g.updated[i] = p.step != before[i]
		}
	}
	o.steps++
	return nil
}

// Replayed advances the step counts as the last Update did, for a step whose kernels a CUDA graph replayed.
func (o *Optimizer) Replayed() {
	for gi := range o.groups {
		g := &o.groups[gi]
		for i := range g.params {
			if g.updated[i] {
				g.params[i].step++
			}
		}
	}
	o.steps++
}

// UpdateKernels runs Update's kernels but leaves the step counts as they were, marking the parameters it
// moves: the body of a captured step, whose counts Replayed advances after each replay. (Capturing runs the
// host side of the body once and the kernels not at all; each replay runs the kernels only.)
func (o *Optimizer) UpdateKernels() error {
	saved := make([][]int64, len(o.groups))
	for gi, g := range o.groups {
		for _, p := range g.params {
			saved[gi] = append(saved[gi], p.step)
		}
	}
	err := o.Update()
	for gi := range o.groups {
		for i := range o.groups[gi].params {
			o.groups[gi].params[i].step = saved[gi][i]
		}
	}
	if err == nil {
		o.steps--
	}
	return err
}
