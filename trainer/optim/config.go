package optim

import (
	"fmt"
	"math"

	"github.com/sugarme/gotch/ts"
)

// The optimiser kinds New accepts.
const (
	// Adam is torch.optim.Adam: weight decay is an L2 term added to the gradient.
	Adam = "adam"
	// AdamW is torch.optim.AdamW: weight decay shrinks the parameter before the Adam update.
	AdamW = "adamw"
)

// Config chooses the optimiser and its hyper-parameters shared by all groups. Zero values take PyTorch's
// defaults (0.9, 0.999, 1e-8); as a consequence a beta or eps of exactly 0 cannot be asked for.
type Config struct {
	Kind              string // Adam or AdamW
	Beta1, Beta2, Eps float64
}

// Group is a set of parameters sharing a learning rate and weight decay (a torch param_group).
// ParamNames name Params one to one; they key the optimiser state in checkpoints.
type Group struct {
	Name        string
	Params      []*ts.Tensor
	ParamNames  []string
	LR          float64
	WeightDecay float64
}

// withDefaults fills PyTorch's defaults and checks the ranges torch.optim.Adam checks.
func (c Config) withDefaults() (Config, error) {
	if c.Kind != Adam && c.Kind != AdamW {
		return c, fmt.Errorf("optim: config: kind %q is not %q or %q", c.Kind, Adam, AdamW)
	}
	if c.Beta1 == 0 {
		c.Beta1 = 0.9
	}
	if c.Beta2 == 0 {
		c.Beta2 = 0.999
	}
	if c.Eps == 0 {
		c.Eps = 1e-8
	}
	for _, b := range []struct {
		name string
		v    float64
	}{{"beta1", c.Beta1}, {"beta2", c.Beta2}} {
		if !(b.v >= 0 && b.v < 1) {
			return c, fmt.Errorf("optim: config: %s = %v is outside [0, 1)", b.name, b.v)
		}
	}
	if !(c.Eps > 0) || math.IsInf(c.Eps, 0) {
		return c, fmt.Errorf("optim: config: eps = %v must be positive and finite", c.Eps)
	}
	return c, nil
}

// checkRate refuses negative, NaN and infinite learning rates and weight decays.
func checkRate(what string, v float64) error {
	if !(v >= 0) || math.IsInf(v, 0) {
		return fmt.Errorf("%s = %v must be non-negative and finite", what, v)
	}
	return nil
}
