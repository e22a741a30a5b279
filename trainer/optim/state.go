package optim

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/safetensors"
)

// Names of the state entries of one parameter: "<param>.exp_avg", "<param>.exp_avg_sq" (the parameter's
// shape and dtype) and "<param>.step" (a 0-dimensional I64, 0 for a parameter never updated).
const (
	expAvgSuffix   = ".exp_avg"
	expAvgSqSuffix = ".exp_avg_sq"
	stepSuffix     = ".step"
)

// Keys of the scalars map.
const (
	scalarKind = "kind"
	scalarStep = "step"
)

// State returns the optimiser state for a checkpoint: three tensors per parameter (moments and step, zeros
// for a parameter not updated yet, so that every entry is always present) and the scalars "kind" (string)
// and "step" (int64, StepCount). The moments' bytes are the tensors' own: a LoadState of them, with the
// parameters' values, continues bit-identically. (One caveat, as in torch with set_to_none=False: a
// parameter that had a gradient before the checkpoint but gets none in a step after it is updated with a
// zero gradient in the uninterrupted run and skipped in the resumed one, whose gradients start unset.)
func (o *Optimizer) State() ([]safetensors.Tensor, map[string]any, error) {
	var out []safetensors.Tensor
	for _, g := range o.groups {
		for _, p := range g.params {
			m, err := p.moment(p.expAvg, expAvgSuffix)
			if err != nil {
				return nil, nil, err
			}
			v, err := p.moment(p.expAvgSq, expAvgSqSuffix)
			if err != nil {
				return nil, nil, err
			}
			step, err := safetensors.FromInt64s(p.name+stepSuffix, []int64{}, []int64{p.step})
			if err != nil {
				return nil, nil, fmt.Errorf("optim: state of %q: %w", p.name, err)
			}
			out = append(out, m, v, step)
		}
	}
	return out, map[string]any{scalarKind: o.cfg.Kind, scalarStep: o.steps}, nil
}

// moment copies one moment tensor (nil: zeros) into a checkpoint tensor of the parameter's dtype.
func (p *param) moment(t *ts.Tensor, suffix string) (safetensors.Tensor, error) {
	name := p.name + suffix
	n := numel(p.shape)
	var st safetensors.Tensor
	err := guarded("optim: state "+name, func() error {
		var err error
		switch p.dtype {
		case gotch.Float:
			vals := make([]float32, n)
			if t != nil {
				t.MustCopyData(vals, uint(n))
			}
			st, err = safetensors.FromFloat32s(name, p.shape, vals)
		case gotch.Double:
			vals := make([]float64, n)
			if t != nil {
				t.MustCopyData(vals, uint(n))
			}
			st, err = safetensors.FromFloat64s(name, p.shape, vals)
		default:
			err = fmt.Errorf("dtype %v is not supported", p.dtype)
		}
		return err
	})
	return st, err
}

// LoadState replaces the optimiser state with one State returned, for the same parameter names, shapes,
// dtypes and kind. It checks everything before changing anything: a missing, mis-shaped, mistyped or
// unknown entry is an error naming it, and the optimiser is then left as it was. Scalars may have been
// through JSON (numbers as float64 or json.Number). Learning rates are not part of the state: the
// schedule sets them from StepCount.
func (o *Optimizer) LoadState(tensors []safetensors.Tensor, scalars map[string]any) error {
	steps, err := intScalar(scalars, scalarStep)
	if err != nil {
		return fmt.Errorf("optim: load state: %w", err)
	}
	if steps < 0 {
		return fmt.Errorf("optim: load state: scalar %q = %d is negative", scalarStep, steps)
	}
	if kind, ok := scalars[scalarKind]; ok && kind != o.cfg.Kind {
		return fmt.Errorf("optim: load state: saved by %v, this optimiser is %s", kind, o.cfg.Kind)
	}
	byName := make(map[string]safetensors.Tensor, len(tensors))
	for _, t := range tensors {
		if _, dup := byName[t.Name]; dup {
			return fmt.Errorf("optim: load state: tensor %q appears twice", t.Name)
		}
		byName[t.Name] = t
	}

	type loaded struct {
		p    *param
		step int64
		m, v safetensors.Tensor
	}
	var plan []loaded
	for gi := range o.groups {
		for pi := range o.groups[gi].params {
			p := &o.groups[gi].params[pi]
			l := loaded{p: p}
			if l.m, err = p.entry(byName, expAvgSuffix); err != nil {
				return err
			}
			if l.v, err = p.entry(byName, expAvgSqSuffix); err != nil {
				return err
			}
			if l.step, err = p.stepEntry(byName, steps); err != nil {
				return err
			}
			plan = append(plan, l)
		}
	}
	if len(byName) > 0 {
		extra := make([]string, 0, len(byName))
		for name := range byName {
			extra = append(extra, name)
		}
		slices.Sort(extra)
		return fmt.Errorf("optim: load state: %d tensors match no parameter: %s", len(extra), strings.Join(extra, ", "))
	}

	// Build every new tensor first, then swap them in, so that a failure leaves the old state.
	news := make([][2]*ts.Tensor, len(plan))
	for i, l := range plan {
		if l.step == 0 {
			continue // a parameter never updated has no state in torch either
		}
		var err error
		if news[i][0], err = l.p.toTensor(l.m); err == nil {
			news[i][1], err = l.p.toTensor(l.v)
		}
		if err != nil {
			for _, n := range news[:i+1] {
				torch.Drop(n[0], n[1])
			}
			return err
		}
	}
	for i, l := range plan {
		torch.Drop(l.p.expAvg, l.p.expAvgSq)
		l.p.expAvg, l.p.expAvgSq, l.p.step = news[i][0], news[i][1], l.step
	}
	o.steps = steps
	return nil
}

// entry takes the moment tensor of p out of byName, checking its dtype and shape.
func (p *param) entry(byName map[string]safetensors.Tensor, suffix string) (safetensors.Tensor, error) {
	name := p.name + suffix
	t, ok := byName[name]
	if !ok {
		return t, fmt.Errorf("optim: load state: tensor %q is missing", name)
	}
	delete(byName, name)
	if want := dtypeName(p.dtype); t.DType != want {
		return t, fmt.Errorf("optim: load state: tensor %q has dtype %s, the parameter is %s", name, t.DType, want)
	}
	if !slices.Equal(t.Shape, p.shape) {
		return t, fmt.Errorf("optim: load state: tensor %q has shape %v, the parameter has %v", name, t.Shape, p.shape)
	}
	return t, nil
}

// stepEntry takes the step tensor of p out of byName; it is at most the optimiser's step count.
func (p *param) stepEntry(byName map[string]safetensors.Tensor, steps int64) (int64, error) {
	name := p.name + stepSuffix
	t, ok := byName[name]
	if !ok {
		return 0, fmt.Errorf("optim: load state: tensor %q is missing", name)
	}
	delete(byName, name)
	vals, err := t.Int64s()
	if err != nil {
		return 0, fmt.Errorf("optim: load state: %w", err)
	}
	if len(vals) != 1 || vals[0] < 0 || vals[0] > steps {
		return 0, fmt.Errorf("optim: load state: tensor %q = %v is not one step count in [0, %d]", name, vals, steps)
	}
	return vals[0], nil
}

// toTensor makes a moment tensor with the exact bytes of st, on p's device.
func (p *param) toTensor(st safetensors.Tensor) (*ts.Tensor, error) {
	var out *ts.Tensor
	err := guarded("optim: load state "+st.Name, func() error {
		var flat *ts.Tensor
		switch st.DType {
		case safetensors.F32:
			vals, err := st.Float32s()
			if err != nil {
				return err
			}
			flat = ts.MustOfSlice(vals)
		case safetensors.F64:
			vals, err := st.Float64s()
			if err != nil {
				return err
			}
			flat = ts.MustOfSlice(vals)
		default:
			return fmt.Errorf("dtype %s is not supported", st.DType)
		}
		shaped := flat.MustReshape(p.shape, true)
		out = shaped.MustTo(p.data.MustDevice(), true)
		return nil
	})
	return out, err
}

func dtypeName(d gotch.DType) safetensors.DType {
	if d == gotch.Double {
		return safetensors.F64
	}
	return safetensors.F32
}

func numel(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// intScalar reads an integral scalar that may have been through JSON.
func intScalar(scalars map[string]any, key string) (int64, error) {
	v, ok := scalars[key]
	if !ok {
		return 0, fmt.Errorf("scalar %q is missing", key)
	}
	switch x := v.(type) {
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case int32:
		return int64(x), nil
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), nil
		}
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), nil
		}
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, nil
		}
	}
	return 0, fmt.Errorf("scalar %q = %v (%T) is not an integer", key, v, v)
}
