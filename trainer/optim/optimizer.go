package optim

import (
	"fmt"
	"math"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
)

// Optimizer is Adam or AdamW over groups of parameters. It is not safe for concurrent use; drive it from the
// goroutine that runs the training step.
type Optimizer struct {
	cfg    Config
	groups []group
	steps  int64        // Step calls that succeeded
	err    error        // a bad SetLR, reported by the next Step
	all    []*ts.Tensor // every parameter, for ZeroGrad
	// scalars, with device scalars on (graphed.go), holds each group's per-step numbers on the device.
	scalars *ts.Tensor
}

type group struct {
	name   string
	lr, wd float64
	params []param
	// update is what the shim's one call per step reads and writes: the parameters' handles, made once, and
	// the per-step scalars, moments and step counts, which stepGroup fills in and reads back.
	update torch.AdamGroup
	// updated marks, with device scalars, the parameters the last Update moved (the ones a replay moves).
	updated []bool
}

// param is one parameter and its Adam state. The moments stay nil until the parameter first has a gradient,
// as in torch, and step counts this parameter's updates (torch keeps it per parameter too: a parameter
// that joins late gets its own bias correction).
type param struct {
	name string
	t    *ts.Tensor // the parameter, whose .grad Step reads
	// data is t.detach(), made once: it shares t's storage but not its requires_grad, so in-place updates
	// through it need no no-grad mode and record nothing (what torch's @no_grad step achieves). Storage
	// replaced after New (set_) would not be seen; copy_ into t, as checkpoint loading does, is.
	data             *ts.Tensor
	scratch          *ts.Tensor // p's shape, in a buffer shared by the CPU's parameters (see makeScratch); nil on a GPU
	shape            []int64
	dtype            gotch.DType
	step             int64
	expAvg, expAvgSq *ts.Tensor
}

// New checks the configuration and the groups and returns an optimiser with empty state.
// Parameter names must be unique across groups; parameters must be float32 or float64.
func New(cfg Config, groups []Group) (*Optimizer, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("optim: new %s: no parameter groups", cfg.Kind)
	}
	o := &Optimizer{cfg: cfg}
	seen := map[string]string{}
	for gi, g := range groups {
		where := fmt.Sprintf("optim: new %s: group %d (%q)", cfg.Kind, gi, g.Name)
		if err := checkRate("learning rate", g.LR); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if err := checkRate("weight decay", g.WeightDecay); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if len(g.ParamNames) != len(g.Params) {
			return nil, fmt.Errorf("%s: %d params but %d names", where, len(g.Params), len(g.ParamNames))
		}
		grp := group{name: g.Name, lr: g.LR, wd: g.WeightDecay, params: make([]param, len(g.Params))}
		for i, t := range g.Params {
			name := g.ParamNames[i]
			if name == "" {
				return nil, fmt.Errorf("%s: param %d has no name", where, i)
			}
			if other, dup := seen[name]; dup {
				return nil, fmt.Errorf("%s: param %q is already in group %q", where, name, other)
			}
			seen[name] = g.Name
			p, err := newParam(name, t)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			grp.params[i] = p
			o.all = append(o.all, t)
		}
		o.groups = append(o.groups, grp)
	}
	if err := o.makeScratch(); err != nil {
		return nil, fmt.Errorf("optim: new %s: %w", cfg.Kind, err)
	}
	for gi := range o.groups {
		g := &o.groups[gi]
		n := len(g.params)
		g.update = torch.AdamGroup{Params: make([]*ts.Tensor, n), Data: make([]*ts.Tensor, n), Scratch: make([]*ts.Tensor, n),
			ExpAvg: make([]*ts.Tensor, n), ExpAvgSq: make([]*ts.Tensor, n), Steps: make([]int64, n),
			DenomScale: make([]float64, n), EpsScale: make([]float64, n), Beta1Weight: 1 - cfg.Beta1, Beta2Weight: 1 - cfg.Beta2}
		for i, p := range g.params {
			g.update.Params[i], g.update.Data[i], g.update.Scratch[i] = p.t, p.data, p.scratch
		}
	}
	return o, nil
}

func newParam(name string, t *ts.Tensor) (param, error) {
	p := param{name: name, t: t}
	if t == nil {
		return p, fmt.Errorf("param %q is nil", name)
	}
	err := guarded("param "+name, func() error {
		if !t.MustDefined() {
			return fmt.Errorf("param %q is an undefined tensor", name)
		}
		p.shape = t.MustSize()
		p.dtype = t.DType()
		if p.dtype != gotch.Float && p.dtype != gotch.Double {
			return fmt.Errorf("param %q has dtype %v; only float32 and float64 are supported", name, p.dtype)
		}
		p.data = t.MustDetach(false)
		return nil
	})
	return p, err
}

// SetLR sets the learning rate of group i, as a schedule does before each step. An out-of-range group or a
// negative, NaN or infinite rate leaves the rate unchanged and makes every later Step fail with that
// error: a run whose schedule went wrong must stop, not go on with the old rate.
func (o *Optimizer) SetLR(i int, lr float64) {
	if i < 0 || i >= len(o.groups) {
		o.err = fmt.Errorf("optim: set learning rate of group %d: there are %d groups", i, len(o.groups))
		return
	}
	if err := checkRate("learning rate", lr); err != nil {
		o.err = fmt.Errorf("optim: set learning rate of group %d (%q): %w", i, o.groups[i].name, err)
		return
	}
	o.groups[i].lr = lr
}

// LR returns the learning rate of group i, or NaN when there is no such group.
func (o *Optimizer) LR(i int) float64 {
	if i < 0 || i >= len(o.groups) {
		return math.NaN()
	}
	return o.groups[i].lr
}

// StepCount is the number of successful Step calls, restored by LoadState. Schedules take it as their step.
func (o *Optimizer) StepCount() int64 { return o.steps }

// NumGroups is the number of parameter groups.
func (o *Optimizer) NumGroups() int { return len(o.groups) }

// ZeroGrad sets every defined gradient to zero in place, as torch 1.13's zero_grad(set_to_none=False).
// gotch has no call that unsets a gradient, and keeping the buffers spares an allocation per parameter in
// the next backward. Consequence, as in torch with set_to_none=False: once a parameter has had a gradient,
// Step keeps updating it (with a zero gradient) even in steps where it took no part in the loss.
//
// It is one call into libtorch (one _foreach_zero_) whatever the number of parameters.
func (o *Optimizer) ZeroGrad() error {
	if err := torch.ZeroGrads(o.all); err != nil {
		return fmt.Errorf("optim: zero grad: %w", err)
	}
	return nil
}
