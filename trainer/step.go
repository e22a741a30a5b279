package trainer

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
	"go.uber.org/zap"

	"convrep/internal/torch"
	"convrep/objectives"
	"convrep/trainer/optim"
)

// Stepper takes a run's optimiser steps: forward and loss, backward, the ranks' averaging of the gradients,
// clipping, the learning rates, the optimiser and zeroed gradients, eagerly or replayed from a CUDA graph
// (graphs.go). A run steps through the one its Trainer holds; cmd/bench drives one made by NewStepper on
// random batches, so that the benchmark times the trainer's own step.
type Stepper struct {
	log     *zap.Logger
	dev     gotch.Device
	obj     objectives.Objective
	opt     *optim.Optimizer
	sched   optim.Schedule // nil: the groups' rates as they are
	groups  []optim.Group
	bf16    bool    // train.precision = "bf16": the forward pass and the loss under bf16 autocast
	maxNorm float64 // train.max_grad_norm; 0 for none
	cl      *cluster
	graph   *graphSteps // the step's CUDA graph (train.cuda_graphs); nil when stepping eagerly
	win     window      // the steps since the last metrics line: their loss, gradient norms and metrics (window.go)
}

// StepConfig is a Stepper outside a run (cmd/bench); a run makes its own from the experiment.
type StepConfig struct {
	Objective   objectives.Objective
	Groups      []optim.Group // at their learning rates, which stay
	Optimizer   string        // optim.AdamW, ...
	Device      gotch.Device
	Precision   string  // "fp32" or "bf16"
	MaxGradNorm float64 // 0: measured, not clipped
	CUDAGraphs  bool
	// FusedKernels is train.fused_kernels: true, convrep's fused kernels on a GPU (they must load); nil or
	// false, libtorch's composites.
	FusedKernels *bool
	GraphWarmup  int                                         // eager steps before the capture, with CUDAGraphs
	NewGraph     func(gotch.Device) (torch.StepGraph, error) // nil: a CUDA graph (tests stand in for it)
	Log          *zap.Logger                                 // nil: none
}

// NewStepper makes the step of c. The caller holds its OS thread from here to Free (autocast's state, the
// current stream and libtorch's grad mode are per thread).
func NewStepper(c StepConfig) (_ *Stepper, err error) {
	if c.Log == nil {
		c.Log = zap.NewNop()
	}
	if c.Precision != "fp32" && c.Precision != "bf16" {
		return nil, fmt.Errorf("precision %q: want fp32 or bf16", c.Precision)
	}
	s := &Stepper{log: c.Log, dev: c.Device, obj: c.Objective, groups: c.Groups, bf16: c.Precision == "bf16",
		maxNorm: c.MaxGradNorm, cl: &cluster{env: distEnv{World: 1}}}
	if err := useFusedKernels(c.FusedKernels, c.Device, c.Log); err != nil {
		return nil, err
	}
	if s.opt, err = optim.New(optim.Config{Kind: strings.ToLower(c.Optimizer)}, c.Groups); err != nil {
		return nil, err
	}
	if c.CUDAGraphs {
		newGraph := c.NewGraph
		if newGraph == nil {
			newGraph = newStepGraph
		}
		g, err := newGraph(c.Device)
		if err == nil {
			err = s.opt.UseDeviceScalars()
		}
		if err != nil {
			if g != nil {
				g.Free()
			}
			return nil, fmt.Errorf("CUDA graphs: %w", err)
		}
		s.graph = &graphSteps{g: g, log: s.log, warmup: c.GraphWarmup, eager: map[string]bool{}}
	}
	if err = s.win.start(1, c.Device); err != nil {
		s.graph.free()
		return nil, err
	}
	return s, nil
}

// Graphed reports whether the steps are replayed from a CUDA graph (after the warm-up ones).
func (s *Stepper) Graphed() bool { return s.graph != nil }

// Step takes optimiser step number step (from 0, for the schedule) on b, which holds rows examples; the
// Stepper drops the batch.
func (s *Stepper) Step(step int64, b objectives.Batch, rows int) error {
	bs := []objectives.Batch{b}
	defer dropBatches(bs)
	return s.take(step, bs, []int{rows})
}

// ResetLoss starts the loss sum that ReadLoss reads (one kernel; nothing is read back).
func (s *Stepper) ResetLoss() error { return s.win.tally.newWindow() }

// ReadLoss reads the sum of the losses since ResetLoss (one device-to-host read, which waits for the queued
// steps) and wants it finite.
func (s *Stepper) ReadLoss() (float64, error) {
	var v []float64
	err := torch.Catch("read the loss", func() (err error) {
		v, err = torch.Read(s.win.tally.loss)
		return err
	})
	if err != nil {
		return 0, err
	}
	if math.IsNaN(v[0]) || math.IsInf(v[0], 0) {
		return 0, fmt.Errorf("loss is %v", v[0])
	}
	return v[0], nil
}

// Free releases the graph and the tally; the parameters and the optimiser's state are the caller's.
func (s *Stepper) Free() {
	s.graph.free()
	s.graph = nil
	s.win.free()
}

// take is optimiser step number step (from 0) on its micro-batches, eager or replayed.
func (s *Stepper) take(step int64, batches []objectives.Batch, rows []int) error {
	gs := s.graph
	if gs == nil {
		return s.step(step, batches, rows)
	}
	st, ok := batches[0].Value.(objectives.Static)
	if !ok {
		s.stopGraphs(fmt.Sprintf("objective %s's batches do not list their tensors (objectives.Static)", s.obj.Name()))
		return s.step(step, batches, rows)
	}
	in := st.Tensors()
	shape := shapesOf(in)
	switch {
	case gs.warm < gs.warmup:
		gs.warm++
		return gs.g.OnStream(func() error { return s.step(step, batches, rows) })
	case gs.inputs == nil:
		if err := s.capture(step, batches, in, shape); err != nil {
			return fmt.Errorf("train.cuda_graphs: the capture failed (set train.cuda_graphs = false to step eagerly; checkpoints resume either way): %w", err)
		}
		return s.replay(step)
	case shape != gs.shape:
		if !gs.eager[shape] {
			gs.eager[shape] = true
			gs.log.Info("train.cuda_graphs: a batch of other shapes than the captured one steps eagerly",
				zap.String("shapes", shape), zap.String("captured", gs.shape))
		}
		return gs.g.OnStream(func() error { return s.step(step, batches, rows) })
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
	return s.replay(step)
}

// step is one optimiser step taken eagerly: for each micro-batch, forward and loss, backward (gradients
// accumulate); then clipping, the learning rates of the schedule, the optimiser step and zeroed gradients. It
// reads nothing back from the device: the loss and the gradient norm go into the tally, which settle checks
// at the next log or checkpoint step, and the objective's metrics into the window's obj. It drops each micro-batch after
// its backward pass. A torch.Scope frees at its end whatever the step made and did not drop (cmd/setup's
// light gotch handles put no pressure on Go's collector, so finalizers alone would free it late); what
// outlives the step is taken out of the scope where it is made: the gradient norm the tally keeps, the
// objective metrics' sums (objWindow.add), the optimiser's moments (optim's stepGroup). Each part runs in its
// torch.Phase, so that a counted step (cmd/bench) splits its libtorch calls by phase.
func (s *Stepper) step(step int64, batches []objectives.Batch, rows []int) (err error) {
	scope := torch.NewScope()
	defer func() { err = errors.Join(err, scope.Free()) }()
	return torch.Catch("train step", func() error {
		parts := len(batches)
		if len(rows) != parts {
			return fmt.Errorf("%d micro-batches but %d row counts", parts, len(rows))
		}
		total := 0
		for _, r := range rows {
			total += r
		}
		var loss *ts.Tensor // the step's loss in float64: the mean of its micro-batches', weighed by their rows
		defer func() { torch.Drop(loss) }()
		for k := range batches {
			// Micro-batch k counts rows[k]/total of the step: 1/parts when all are full (total/rows[k] is then
			// grad_accumulation exactly), less for the small last one of a kept partial batch.
			share := float64(total) / float64(rows[k])
			l, m, err := s.loss(batches[k].Value)
			if err != nil {
				return err
			}
			s.win.obj.add(m) // summed on the device, read once per metrics line (objmetrics.go)
			// Detached, so that the tally keeps no graph alive; in float64, as the losses were summed on the host.
			v := l.MustDetach(false).MustTotype(gotch.Double, true).MustDivScalar(ts.FloatScalar(share), true)
			if loss == nil {
				loss = v
			} else {
				loss.MustAdd_(v)
				v.MustDrop()
			}
			scaled := l.MustDivScalar(ts.FloatScalar(share), false)
			if k == parts-1 {
				s.cl.arm() // the ranks average the accumulated gradients during this last backward pass
			}
			err = inPhase(torch.PhaseBackward, scaled.Backward)
			torch.Drop(scaled, l)
			dropBatches(batches[k : k+1])
			if err != nil {
				return err
			}
		}
		if err := s.cl.finish(); err != nil {
			return err
		}
		var norm *ts.Tensor
		err := inPhase(torch.PhaseOptimizer, func() (err error) {
			if norm, err = optim.ClipGradNormTensor(s.allParams(), s.maxGradNorm()); err != nil {
				return err
			}
			torch.Persist(norm) // the tally keeps it until the next step's norm replaces it
			s.setLRs(step)
			if err := s.opt.Step(); err != nil {
				return err
			}
			return s.opt.ZeroGrad()
		})
		if norm != nil {
			s.win.tally.add(loss, norm)
		}
		return err
	})
}

// loss runs the forward pass and the objective, under bf16 autocast when train.precision asks for it (the
// backward pass runs outside, as autocast wants). The caller holds the OS thread autocast's state lives on.
func (s *Stepper) loss(batch any) (l *ts.Tensor, m map[string]*ts.Tensor, err error) {
	defer torch.EnterPhase(torch.PhaseLoss)() // the model's forward pass inside is PhaseForward
	if !s.bf16 {
		return s.obj.Loss(batch, true)
	}
	restore, err := torch.Autocast(s.dev, gotch.BFloat16)
	if err != nil {
		return nil, nil, fmt.Errorf("train.precision bf16: %w", err)
	}
	defer restore()
	return s.obj.Loss(batch, true)
}

// inPhase runs fn with p the phase libtorch calls are counted in (torch.Counting).
func inPhase(p torch.Phase, fn func() error) error {
	defer torch.EnterPhase(p)()
	return fn()
}

// setLRs sets the optimiser's rates for step number step from the schedule.
func (s *Stepper) setLRs(step int64) {
	f := 1.0
	if s.sched != nil {
		f = s.sched.Factor(step)
	}
	for i, g := range s.groups {
		s.opt.SetLR(i, g.LR*f)
	}
}

// allParams are the groups' parameters, in order, for the gradient clipping.
func (s *Stepper) allParams() []*ts.Tensor {
	var all []*ts.Tensor
	for _, g := range s.groups {
		all = append(all, g.Params...)
	}
	return all
}

// maxGradNorm is train.max_grad_norm, or a bound no finite norm reaches when there is none (the norm is
// measured either way: a finite loss can still have a NaN gradient, which would turn every weight NaN).
func (s *Stepper) maxGradNorm() float64 {
	if s.maxNorm != 0 {
		return s.maxNorm
	}
	return math.MaxFloat32
}
