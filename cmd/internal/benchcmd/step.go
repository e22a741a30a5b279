package benchcmd

import (
	"errors"
	"fmt"
	"math"

	"convrep/objectives"
	"convrep/objectives/dse"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/tokenizers"
)

// step is one optimiser step, the same calls trainer's step makes for one micro-batch without gradient
// clipping: batch to tensors, the objective's loss (under bf16 autocast with --precision bf16), the loss
// divided by the micro-batch count (1), backward, the learning rates, AdamW, zeroed gradients. Each part
// runs in its torch.Phase, so that a counted step (countedStep) splits its libtorch calls by phase. Like the
// trainer's, it reads nothing back from the device: it returns the loss, detached, in float64, and the
// caller reads the last one. A torch.Scope frees whatever the step made and did not drop; the loss it
// returns is kept for the caller.
func (s *setup) step() (loss *ts.Tensor, err error) {
	scope := torch.NewScope()
	defer func() { err = errors.Join(err, scope.Free()) }()
	err = torch.Catch("train step", func() error {
		q, r, err := s.randomPair()
		if err != nil {
			return err
		}
		defer q.Drop()
		defer r.Drop()
		var l, scaled *ts.Tensor
		err = inPhase(torch.PhaseLoss, func() error { // the model's forward pass inside is PhaseForward
			var err error
			if l, err = s.loss(dse.Batch{Query: q, Response: r}); err == nil {
				scaled = l.MustDivScalar(ts.FloatScalar(1), false)
			}
			return err
		})
		if err != nil {
			return err
		}
		loss = l.MustDetach(false).MustTotype(gotch.Double, true)
		scope.Keep(loss) // the caller's: it reads the last step's
		err = inPhase(torch.PhaseBackward, scaled.Backward)
		torch.Drop(scaled, l)
		if err != nil {
			return err
		}
		return inPhase(torch.PhaseOptimizer, func() error {
			for i := 0; i < s.opt.NumGroups(); i++ {
				s.opt.SetLR(i, learnRate)
			}
			if err := s.opt.Step(); err != nil {
				return err
			}
			return s.opt.ZeroGrad()
		})
	})
	if err != nil {
		torch.Drop(loss)
		return nil, err
	}
	return loss, nil
}

// inPhase runs fn with p the phase libtorch calls are counted in (torch.Counting).
func inPhase(p torch.Phase, fn func() error) error {
	defer torch.EnterPhase(p)()
	return fn()
}

// countedStep runs one step under torch.Counting and returns its libtorch calls per phase.
func (s *setup) countedStep() (torch.Counts, error) {
	stop, err := torch.Counting()
	if err != nil {
		return torch.Counts{}, err
	}
	l, err := s.timedStep()
	counts, stopErr := stop()
	if err == nil {
		_, err = lastLoss(l)
	}
	return counts, errors.Join(err, stopErr)
}

// lastLoss reads a step's loss (the one read of a timed run) and wants it finite.
func lastLoss(l *ts.Tensor) (float64, error) {
	defer l.MustDrop()
	v, err := torch.Read(l)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(v[0]) || math.IsInf(v[0], 0) {
		return 0, fmt.Errorf("loss is %v", v[0])
	}
	return v[0], nil
}

// randomPair is the two views of a step, on the device.
func (s *setup) randomPair() (q, r models.Input, err error) {
	if q, err = models.BatchInput(s.randomBatch(), s.dev); err != nil {
		return q, r, err
	}
	if r, err = models.BatchInput(s.randomBatch(), s.dev); err != nil {
		q.Drop()
	}
	return q, r, err
}

// randomBatch is one view: B rows of T token ids drawn uniformly from the vocabulary, every token real,
// with zero token types, as trainer's padded() lays a batch out.
func (s *setup) randomBatch() *tokenizers.Batch {
	b := &tokenizers.Batch{}
	for i := int64(0); i < s.o.Batch; i++ {
		ids, mask := make([]int64, s.o.Seq), make([]int64, s.o.Seq)
		for j := range ids {
			ids[j], mask[j] = s.rng.Int64N(s.o.Vocab), 1
		}
		b.InputIDs = append(b.InputIDs, ids)
		b.AttentionMask = append(b.AttentionMask, mask)
		b.TokenTypeIDs = append(b.TokenTypeIDs, make([]int64, s.o.Seq))
		b.Lengths = append(b.Lengths, int(s.o.Seq))
	}
	return b
}

// loss runs the forward pass and DSE's loss, under bf16 autocast for --precision bf16 as torch.autocast
// wraps them in PyTorch: the parameters stay fp32 and backward runs after autocast is restored. The
// caller holds its OS thread (benchmark locks it), as autocast's state is per thread.
func (s *setup) loss(b dse.Batch) (*ts.Tensor, error) {
	if s.o.Precision == bf16 {
		restore, err := torch.Autocast(s.dev, gotch.BFloat16)
		if err != nil {
			return nil, err
		}
		defer restore()
	}
	l, m, err := s.obj.Loss(b, true)
	objectives.DropMetrics(m) // DSE's pos_cos, not measured here
	return l, err
}
