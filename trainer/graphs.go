package trainer

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
	"go.uber.org/zap"

	"convrep/experiment"
	"convrep/internal/torch"
	"convrep/objectives"
	"convrep/trainer/optim"
)

// CUDA graphs (train.cuda_graphs): the whole step captured once and replayed.
//
// On a GPU every libtorch call of a step is at least one kernel launch, a few microseconds of host time each;
// a BERT-base step makes thousands, so a small batch waits on the host. A CUDA graph records the kernels of
// one step and launches them all with one call. The trainer does what torch.cuda.graph's documentation
// prescribes for whole-network capture ("CUDA Graphs" in PyTorch's CUDA semantics notes):
//
//   - warm-up: the first graphWarmup steps run eagerly on the graph's side stream, which makes the optimiser's
//     moments, the gradients' buffers and libtorch's per-stream state before anything is captured;
//   - capture: the next step's batch becomes the static input; its forward pass, loss, backward pass,
//     clipping, optimiser update and zeroed gradients are captured, then replayed to take the step;
//   - replay: each later batch of the same shapes is copied into the static input (on the device) and the
//     graph replayed. The learning rates and bias corrections reach the captured update as device scalars
//     (optim.UseDeviceScalars), loaded before each replay; dropout draws from libtorch's default CUDA
//     generator, which CUDAGraph registers, so each replay draws the numbers the eager step would have.
//
// A batch of other shapes (a kept last partial batch) steps eagerly; settings that cannot be captured (the
// CPU, several ranks, gradient accumulation, batches that do not list their tensors) step eagerly from the
// start. Each case is logged once, with the reason.

// graphWarmup is the number of eager steps before the capture (PyTorch's whole-network example takes 3;
// tests lengthen it to compare with eager steps).
var graphWarmup = 3

// newStepGraph makes the graph of a run on dev (tests stand in for it on the CPU).
var newStepGraph = func(dev gotch.Device) (torch.StepGraph, error) { return torch.NewGraph(dev) }

// graphSteps is a run's graph and what its replays read and write.
type graphSteps struct {
	g      torch.StepGraph
	log    *zap.Logger
	warm   int              // eager warm-up steps taken
	static objectives.Batch // the captured batch, whose tensors the graph reads
	inputs []*ts.Tensor     // its tensors (objectives.Static)
	shape  string           // their shapes
	eager  map[string]bool  // other shapes, logged once each
	loss   *ts.Tensor       // the captured step's loss (float64), norm and objective metrics, which each
	norm   *ts.Tensor       // replay rewrites in place
	metric map[string]*ts.Tensor
}

// newGraphSteps returns the run's graph when train.cuda_graphs asks for one and the run can replay it, else nil
// after logging why it steps eagerly.
func newGraphSteps(e *experiment.Experiment, dev gotch.Device, world int, log *zap.Logger) *graphSteps {
	if !e.Train.CUDAGraphs {
		return nil
	}
	var why string
	switch {
	case world > 1:
		why = fmt.Sprintf("%d data-parallel ranks: the all-reduce of the gradients is not captured", world)
	case e.Train.GradAccumulation > 1:
		why = fmt.Sprintf("train.grad_accumulation = %d: only one micro-batch per step is captured", e.Train.GradAccumulation)
	}
	var g torch.StepGraph
	if why == "" {
		var err error
		if g, err = newStepGraph(dev); err != nil {
			why = err.Error()
		}
	}
	if why != "" {
		log.Info("train.cuda_graphs: stepping eagerly", zap.String("why", why))
		return nil
	}
	log.Info("train.cuda_graphs: the step is captured as a CUDA graph after the warm-up steps", zap.Int("warmup_steps", graphWarmup))
	return &graphSteps{g: g, log: log, eager: map[string]bool{}}
}

// takeStep is one optimiser step, eager or replayed.
func (t *Trainer) takeStep(batches []objectives.Batch, rows []int) error {
	gs := t.graph
	if gs == nil {
		return t.step(batches, rows)
	}
	st, ok := batches[0].Value.(objectives.Static)
	if !ok {
		t.stopGraphs(fmt.Sprintf("objective %s's batches do not list their tensors (objectives.Static)", t.obj.Name()))
		return t.step(batches, rows)
	}
	in := st.Tensors()
	shape := shapesOf(in)
	switch {
	case gs.warm < graphWarmup:
		gs.warm++
		return gs.g.OnStream(func() error { return t.step(batches, rows) })
	case gs.inputs == nil:
		if err := t.capture(batches, in, shape); err != nil {
			return fmt.Errorf("train.cuda_graphs: the capture failed (set train.cuda_graphs = false to step eagerly; checkpoints resume either way): %w", err)
		}
		return t.replay()
	case shape != gs.shape:
		if !gs.eager[shape] {
			gs.eager[shape] = true
			gs.log.Info("train.cuda_graphs: a batch of other shapes than the captured one steps eagerly",
				zap.String("shapes", shape), zap.String("captured", gs.shape))
		}
		return gs.g.OnStream(func() error { return t.step(batches, rows) })
	}
	err := torch.Catch("copy the batch into the graph's input", func() error {
		for i, x := range in {
			if err := torch.CopyAsync(gs.inputs[i], x); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return t.replay()
}

// capture records the step of batches[0] as the graph; the batch becomes the static input, owned by gs.
func (t *Trainer) capture(batches []objectives.Batch, in []*ts.Tensor, shape string) error {
	gs := t.graph
	gs.static, gs.inputs, gs.shape = batches[0], in, shape
	batches[0].Drop = nil // the graph reads these tensors from now on
	gs.log.Info("train.cuda_graphs: capturing the step", zap.Int64("step", t.pos.Step+1), zap.String("shapes", shape))
	return gs.g.Capture(func() error { return t.graphBody(gs.static.Value) })
}

// graphBody is the captured step: t.step's work for one micro-batch (share 1), with the optimiser's kernels
// reading device scalars. Its outputs stay in gs for the replays to rewrite.
func (t *Trainer) graphBody(batch any) (err error) {
	gs := t.graph
	scope := torch.NewScope()
	defer func() { err = errors.Join(err, scope.Free()) }()
	return torch.Catch("train step", func() error {
		l, m, err := t.loss(batch)
		if err != nil {
			return err
		}
		loss := l.MustDetach(false).MustTotype(gotch.Double, true)
		if err := l.Backward(); err != nil {
			return err
		}
		norm, err := optim.ClipGradNormTensor(t.allParams(), t.maxGradNorm())
		if err != nil {
			return err
		}
		if err := t.opt.UpdateKernels(); err != nil {
			return err
		}
		if err := t.opt.ZeroGrad(); err != nil {
			return err
		}
		gs.keepOutputs(loss, norm, m)
		return nil
	})
}

// keepOutputs holds the body's outputs past its scope (a stand-in graph runs the body at every replay: the
// previous outputs are dropped).
func (gs *graphSteps) keepOutputs(loss, norm *ts.Tensor, m map[string]*ts.Tensor) {
	torch.Drop(gs.loss, gs.norm)
	objectives.DropMetrics(gs.metric)
	gs.loss, gs.norm, gs.metric = loss, norm, m
	torch.Persist(loss, norm)
	for _, x := range m {
		torch.Persist(x)
	}
}

// replay takes the step with the batch in the graph's input: the learning rates and the optimiser's scalars
// loaded, the graph launched, the loss, norm and metrics added to the tally like an eager step's.
func (t *Trainer) replay() error {
	gs := t.graph
	t.setLRs()
	if err := t.opt.LoadScalars(); err != nil {
		return err
	}
	if err := gs.g.Replay(); err != nil {
		return err
	}
	t.opt.Replayed()
	return torch.Catch("train step", func() error {
		// Handles of their own for the tally and the metrics window, which drop what they are given.
		t.tally.add(gs.loss, gs.norm.MustShallowClone())
		m := map[string]*ts.Tensor{}
		for name, x := range gs.metric {
			m[name] = x.MustShallowClone()
		}
		t.objm.add(m)
		return nil
	})
}

// stopGraphs turns the graph off for the rest of the run, saying why.
func (t *Trainer) stopGraphs(why string) {
	t.log.Info("train.cuda_graphs: stepping eagerly", zap.String("why", why))
	t.graph.free()
	t.graph = nil
}

func (gs *graphSteps) free() {
	if gs == nil {
		return
	}
	if gs.static.Drop != nil {
		gs.static.Drop() // the inputs are its tensors
	}
	torch.Drop(gs.loss, gs.norm)
	objectives.DropMetrics(gs.metric)
	gs.g.Free()
}

// setLRs sets the optimiser's rates for the coming step from the schedule.
func (t *Trainer) setLRs() {
	f := t.sched.Factor(t.pos.Step)
	for i, g := range t.groups {
		t.opt.SetLR(i, g.LR*f)
	}
}

// allParams are the groups' parameters, in order, for the gradient clipping.
func (t *Trainer) allParams() []*ts.Tensor {
	var all []*ts.Tensor
	for _, g := range t.groups {
		all = append(all, g.Params...)
	}
	return all
}

// maxGradNorm is train.max_grad_norm, or a bound no finite norm reaches when there is none (the norm is
// measured either way: a finite loss can still have a NaN gradient, which would turn every weight NaN).
func (t *Trainer) maxGradNorm() float64 {
	if n := t.exp.Train.MaxGradNorm; n != 0 {
		return n
	}
	return math.MaxFloat32
}

// shapesOf is the shapes of xs, "-" for a nil tensor.
func shapesOf(xs []*ts.Tensor) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		if x == nil {
			parts[i] = "-"
			continue
		}
		parts[i] = fmt.Sprint(x.MustSize())
	}
	return strings.Join(parts, " ")
}
