package benchcmd

import (
	"errors"
	"fmt"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/objectives/dse"
)

// --cuda-graphs: the step as train.cuda_graphs runs it (trainer/graphs.go). The warm-up steps run eagerly on
// the graph's stream, with the optimiser reading device scalars; one more untimed step captures the step on
// its batch, which becomes the static input, and replays it; each timed step then copies its new batch into
// the static input on the device and replays the graph. The bench has no clipping, so the captured body is
// the forward pass, the loss, backward, the AdamW kernels and the zeroed gradients.

// newGraph makes the bench's graph on dev (tests stand in for it on the CPU).
var newGraph = func(dev gotch.Device) (torch.StepGraph, error) { return torch.NewGraph(dev) }

// graphStep is the graph and what its replays read and write.
type graphStep struct {
	g      torch.StepGraph
	q, r   models.Input // the static input: the captured step's two views
	inputs []*ts.Tensor
	loss   *ts.Tensor // the captured step's loss (float64), rewritten by each replay
}

func newGraphStep(dev gotch.Device) (*graphStep, error) {
	g, err := newGraph(dev)
	if err != nil {
		return nil, err
	}
	return &graphStep{g: g}, nil
}

func (gs *graphStep) free() {
	if gs == nil {
		return
	}
	gs.q.Drop()
	gs.r.Drop()
	torch.Drop(gs.loss)
	gs.g.Free()
}

// warmUp runs the untimed steps: --warmup eager ones (on the graph's stream with --cuda-graphs), then with
// --cuda-graphs the capture and its replay.
func (s *setup) warmUp() error {
	for i := 0; i < s.o.Warmup; i++ {
		err := s.onStream(func() error {
			l, err := s.step()
			if err == nil {
				_, err = lastLoss(l)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("warm-up step %d: %w", i+1, err)
		}
	}
	if s.graph == nil {
		return nil
	}
	l, err := s.graphedStep()
	if err == nil {
		_, err = lastLoss(l)
	}
	if err != nil {
		return fmt.Errorf("--cuda-graphs, the captured step: %w", err)
	}
	return nil
}

// onStream runs fn on the graph's stream, or as it is without a graph.
func (s *setup) onStream(fn func() error) error {
	if s.graph == nil {
		return fn()
	}
	return s.graph.g.OnStream(fn)
}

// timedStep is one step, replayed with --cuda-graphs.
func (s *setup) timedStep() (*ts.Tensor, error) {
	if s.graph == nil {
		return s.step()
	}
	return s.graphedStep()
}

// graphedStep takes a step through the graph, capturing it first if it has not been: a new batch to the
// device, copied into the static input, the optimiser's scalars loaded, the graph replayed. It returns a
// handle of the loss output, which the caller drops.
func (s *setup) graphedStep() (loss *ts.Tensor, err error) {
	gs := s.graph
	scope := torch.NewScope()
	defer func() { err = errors.Join(err, scope.Free()) }()
	err = torch.Catch("train step", func() error {
		q, r, err := s.randomPair()
		if err != nil {
			return err
		}
		for i := 0; i < s.opt.NumGroups(); i++ {
			s.opt.SetLR(i, learnRate)
		}
		if gs.inputs == nil {
			gs.q, gs.r = q, r
			gs.inputs = dse.Batch{Query: q, Response: r}.Tensors()
			torch.Persist(gs.inputs...)
			if err := gs.g.Capture(s.graphBody); err != nil {
				return err
			}
		} else {
			err := copyInto(gs.inputs, dse.Batch{Query: q, Response: r}.Tensors())
			q.Drop()
			r.Drop()
			if err != nil {
				return err
			}
		}
		if err := inPhase(torch.PhaseOptimizer, s.opt.LoadScalars); err != nil {
			return err
		}
		if err := gs.g.Replay(); err != nil {
			return err
		}
		s.opt.Replayed()
		loss = gs.loss.MustShallowClone()
		scope.Keep(loss)
		return nil
	})
	return loss, err
}

// graphBody is what the graph captures: step()'s work from the static input on, with the optimiser's
// kernels reading device scalars.
func (s *setup) graphBody() (err error) {
	gs := s.graph
	scope := torch.NewScope()
	defer func() { err = errors.Join(err, scope.Free()) }()
	return torch.Catch("captured step", func() error {
		var l *ts.Tensor
		err := inPhase(torch.PhaseLoss, func() (err error) {
			l, err = s.loss(dse.Batch{Query: gs.q, Response: gs.r})
			return err
		})
		if err != nil {
			return err
		}
		torch.Drop(gs.loss) // a stand-in graph runs the body at every replay
		gs.loss = l.MustDetach(false).MustTotype(gotch.Double, true)
		torch.Persist(gs.loss)
		if err := inPhase(torch.PhaseBackward, l.Backward); err != nil {
			return err
		}
		return inPhase(torch.PhaseOptimizer, func() error {
			if err := s.opt.UpdateKernels(); err != nil {
				return err
			}
			return s.opt.ZeroGrad()
		})
	})
}

// copyInto copies each of src into dst on the device.
func copyInto(dst, src []*ts.Tensor) error {
	for i := range dst {
		if err := torch.CopyAsync(dst[i], src[i]); err != nil {
			return err
		}
	}
	return nil
}
