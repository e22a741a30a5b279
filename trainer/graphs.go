package trainer

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
	"go.uber.org/zap"

	"convrep/experiment"
	"convrep/internal/torch"
	"convrep/models"
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
	warmup int              // eager warm-up steps before the capture
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
	return &graphSteps{g: g, log: log, warmup: graphWarmup, eager: map[string]bool{}}
}

// capture records the step of batches[0] as the graph; the batch becomes the static input, owned by gs.
func (s *Stepper) capture(step int64, batches []objectives.Batch, in []*ts.Tensor, shape string) error {
	gs := s.graph
	gs.static, gs.inputs, gs.shape = batches[0], in, shape
	batches[0].Drop = nil // the graph reads these tensors from now on
	gs.log.Info("train.cuda_graphs: capturing the step", zap.Int64("step", step+1), zap.String("shapes", shape))
	// The graph serves every later batch of these shapes, padded or not: its forward reads the mask even where
	// the captured batch has no padding.
	return gs.g.Capture(func() error { return models.AlwaysMask(func() error { return s.graphBody(gs.static.Value) }) })
}

// graphBody is the captured step: Stepper.step's work for one micro-batch (share 1), with the optimiser's
// kernels reading device scalars. Its outputs stay in gs for the replays to rewrite.
func (s *Stepper) graphBody(batch any) (err error) {
	gs := s.graph
	scope := torch.NewScope()
	defer func() { err = errors.Join(err, scope.Free()) }()
	return torch.Catch("train step", func() error {
		l, m, err := s.loss(batch)
		if err != nil {
			return err
		}
		loss := l.MustDetach(false).MustTotype(gotch.Double, true)
		if err := inPhase(torch.PhaseBackward, l.Backward); err != nil {
			return err
		}
		return inPhase(torch.PhaseOptimizer, func() error {
			norm, err := optim.ClipGradNormTensor(s.allParams(), s.maxGradNorm())
			if err != nil {
				return err
			}
			if err := s.opt.UpdateKernels(); err != nil {
				return err
			}
			if err := s.opt.ZeroGrad(); err != nil {
				return err
			}
			gs.keepOutputs(loss, norm, m)
			return nil
		})
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
func (s *Stepper) replay(step int64) error {
	gs := s.graph
	s.setLRs(step)
	if err := inPhase(torch.PhaseOptimizer, s.opt.LoadScalars); err != nil {
		return err
	}
	if err := gs.g.Replay(); err != nil {
		return err
	}
	s.opt.Replayed()
	return torch.Catch("train step", func() error {
		// Handles of their own for the tally and the metrics window, which drop what they are given.
		s.win.tally.add(gs.loss, gs.norm.MustShallowClone())
		m := map[string]*ts.Tensor{}
		for name, x := range gs.metric {
			m[name] = x.MustShallowClone()
		}
		s.win.obj.add(m)
		return nil
	})
}

// stopGraphs turns the graph off for the rest of the run, saying why.
func (s *Stepper) stopGraphs(why string) {
	s.log.Info("train.cuda_graphs: stepping eagerly", zap.String("why", why))
	s.graph.free()
	s.graph = nil
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
