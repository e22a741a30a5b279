package trainer

import (
	"time"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/checkpoint"
	"convrep/internal/torch"
	"convrep/trainer/optim"
)

// window is the steps since the last metrics line: the one place a run keeps its step counters. Each step adds
// what it leaves on the device without reading it (its loss and gradient norm into tally, the objective's
// metrics into obj); settle reads them at log and checkpoint steps. The host counts and times the steps. A
// checkpoint keeps the window's loss sum and metrics (checkpoint.Window), so that the first line after a resume
// averages the same steps as an uninterrupted run's; the timings are of this process's steps only.
type window struct {
	tally *tally    // the steps not yet read, on the device; nil before the run starts (start)
	obj   objWindow // the objective's metrics, summed on the device
	loss  checkpoint.Window
	// This process's steps in the window: how many, their examples, their time and the part of it they waited
	// for their batches.
	timed, examples int
	busy, waited    time.Duration
	lastLoss        float64 // the loss of the last metrics line, for the model card
}

// start puts the window's loss sum so far (a resumed run's comes from its checkpoint) on dev; the next step
// to be read is next.
func (w *window) start(next int64, dev gotch.Device) (err error) {
	w.tally, err = newTally(w.loss.LossSum, next, dev)
	return err
}

// timeStep counts a step of examples that took d, wait of it for its batch.
func (w *window) timeStep(examples int, d, wait time.Duration) {
	w.loss.Steps++
	w.timed++
	w.examples += examples
	w.busy += d
	w.waited += wait
}

// line is the metrics line of the window at pos (the objective's metrics read with one copy to the host), with
// the gradient norm settle read and the run's time so far.
func (w *window) line(pos checkpoint.Position, opt *optim.Optimizer, norm float64, elapsed time.Duration) (Metric, error) {
	obj, err := w.obj.mean()
	if err != nil {
		return Metric{}, err
	}
	m := Metric{Step: pos.Step, Epoch: pos.Epoch, Loss: w.loss.LossSum / float64(w.loss.Steps), LR: opt.LR(0), GradNorm: norm,
		PairsPerS: float64(w.examples) / w.busy.Seconds(), StepS: w.busy.Seconds() / float64(w.timed),
		DataWaitS: w.waited.Seconds() / float64(w.timed), ElapsedS: elapsed.Seconds(), Objective: obj}
	if opt.NumGroups() > 1 {
		m.HeadLR = opt.LR(1)
	}
	w.lastLoss = m.Loss
	return m, nil
}

// next starts the window of the next metrics line (the objective's metrics were emptied by line).
func (w *window) next() error {
	w.obj.reset()
	*w = window{tally: w.tally, lastLoss: w.lastLoss}
	return w.tally.newWindow()
}

// saved is what a checkpoint keeps of the window: nil right after a metrics line, as before windows were kept.
func (w *window) saved() (*checkpoint.Window, error) {
	if w.loss.Steps == 0 {
		return nil, nil
	}
	c := w.loss
	var err error
	if c.Objective, c.ObjectiveCount, err = w.obj.state(); err != nil {
		return nil, err
	}
	return &c, nil
}

// restore starts the window from a checkpoint's (nil for none), its metrics on dev.
func (w *window) restore(c *checkpoint.Window, dev gotch.Device) error {
	w.obj.reset()
	*w = window{tally: w.tally, lastLoss: w.lastLoss}
	if c == nil {
		return nil
	}
	w.loss = *c
	return w.obj.restore(c.Objective, c.ObjectiveCount, dev)
}

// free drops what the window holds on the device.
func (w *window) free() {
	w.tally.drop()
	w.obj.reset()
}

// tally is what the steps since the last reading left on the device. A step adds its loss and gradient norm
// here without reading them: a read waits for the GPU to finish every queued kernel, and the host would
// then queue the next step's kernels only after it, leaving the GPU idle. The trainer reads the tally at log
// and checkpoint steps (settle) and checks it then; between two readings the host runs ahead of the GPU.
type tally struct {
	loss  *ts.Tensor // float64: the metrics window's loss sum (checkpoint.Window.LossSum), carried on the device
	norms *ts.Tensor // float64: the sum of the gradient norms since the last reading, NaN or infinite iff one was
	norm  *ts.Tensor // the last step's gradient norm
	from  int64      // the first step not yet read
}

// newTally starts a tally whose loss sum is the window's so far.
func newTally(windowLoss float64, next int64, dev gotch.Device) (*tally, error) {
	c := &tally{from: next}
	err := torch.Catch("tally", func() error {
		c.loss = ts.MustScalarTensor(ts.FloatScalar(windowLoss), gotch.Double, dev)
		c.norms = ts.MustScalarTensor(ts.FloatScalar(0), gotch.Double, dev)
		return nil
	})
	return c, err
}

// add counts a step's loss (float64) and gradient norm; the tally takes norm, the caller keeps loss.
func (c *tally) add(loss, norm *ts.Tensor) {
	c.loss.MustAdd_(loss)
	c.norms.MustAdd_(norm)
	torch.Drop(c.norm)
	c.norm = norm
}

// newWindow starts the loss sum of a new metrics window.
func (c *tally) newWindow() error {
	return torch.Catch("tally", func() error { c.loss.MustZero_(); return nil })
}

func (c *tally) drop() {
	if c == nil {
		return
	}
	torch.Drop(c.loss, c.norms, c.norm)
	*c = tally{}
}
