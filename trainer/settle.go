package trainer

import (
	"fmt"
	"math"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
)

// reading is what settle found: the window's loss sum and the last step's gradient norm agreed by the ranks,
// and whether any rank was asked to stop.
type reading struct {
	loss, norm float64
	stop       bool
}

// settle reads the tally of the steps up to the current one: one device-to-host read, and with several ranks
// one all-reduce before it, which is also their agreement on stopping (a rank that stopped alone would leave
// the others waiting in a collective). A NaN or infinite loss or gradient norm among the steps read stops
// the run: the error names them, and the weights they made are never checkpointed, so the newest checkpoint
// stays the last good one. After a non-finite gradient the optimiser has already stepped on it, so the run
// cannot go on from here; it resumes from that checkpoint.
func (t *Trainer) settle(stop bool) (reading, error) {
	c := t.win.tally
	var r reading
	err := torch.Catch(fmt.Sprintf("step %d: read the loss and gradient norm", t.pos.Step), func() error {
		s := 0.0
		if stop {
			s = 1
		}
		// Only rank 0 contributes the norm, which is the same on every rank after the gradients' averaging:
		// the sum over the ranks is then its value exactly.
		norm := c.norm
		if norm == nil || !t.cl.leader() {
			norm = ts.MustScalarTensor(ts.FloatScalar(0), gotch.Double, t.dev)
			defer norm.MustDrop()
		}
		flag := ts.MustScalarTensor(ts.FloatScalar(s), gotch.Double, t.dev)
		defer flag.MustDrop()
		n64 := norm.MustTotype(gotch.Double, false)
		defer n64.MustDrop()
		x := ts.MustStack([]*ts.Tensor{c.loss, c.norms, n64, flag}, 0)
		defer x.MustDrop()
		sum, err := t.cl.agree(x)
		if err != nil {
			return fmt.Errorf("step %d: %w", t.pos.Step, err)
		}
		defer sum.MustDrop()
		v, err := torch.Read(sum)
		if err != nil {
			return fmt.Errorf("step %d: %w", t.pos.Step, err)
		}
		w := float64(t.cl.world())
		r = reading{loss: v[0] / w, norm: v[2], stop: v[3] > 0}
		if math.IsNaN(v[0]) || math.IsInf(v[0], 0) {
			return nonFinite(c.from, t.pos.Step, "loss", v[0])
		}
		if math.IsNaN(v[1]) || math.IsInf(v[1], 0) {
			return nonFinite(c.from, t.pos.Step, "gradient norm", v[1])
		}
		if t.cl.multi() {
			c.loss.MustFill_(ts.FloatScalar(r.loss)) // every rank goes on from the agreed sum
		}
		c.norms.MustZero_()
		return nil
	})
	if err != nil {
		return reading{}, err
	}
	c.from = t.pos.Step + 1
	return r, nil
}

// nonFinite is the error of a NaN or infinite value among steps from..to: a single step's value is its own,
// several steps' is their sum (one of them is not finite; which one, only a read per step could tell).
func nonFinite(from, to int64, what string, v float64) error {
	if from >= to {
		return fmt.Errorf("step %d: %s is %v; the run stops here and keeps its last good checkpoint", to, what, v)
	}
	return fmt.Errorf("steps %d to %d: a %s is not finite (their sum is %v); the run stops here and keeps its last good checkpoint",
		from, to, what, v)
}
