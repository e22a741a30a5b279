package trainer

import (
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/objectives"
)

// afterStep runs the objective's hook after an optimiser step (objectives.AfterStepper), with the position
// already moved past the step's batch: the step ended its epoch when no full batch of the epoch is left.
// It runs before the step is logged and checkpointed, so a checkpoint holds what the hook did, and a run
// resumed from a checkpoint at an epoch's end does not run it twice.
func (t *Trainer) afterStep(perEpoch int) error {
	h, ok := t.obj.(objectives.AfterStepper)
	if !ok {
		return nil
	}
	p := objectives.Progress{Step: t.pos.Step, Epoch: t.pos.Epoch, EndOfEpoch: t.pos.Batch >= perEpoch}
	return torch.Catch("objective hook after step", func() error { return h.AfterStep(p) })
}

// objectiveState is the objective's own tensors that a checkpoint must hold (objectives.Stateful); nil when
// it has none.
func (t *Trainer) objectiveState() map[string]*ts.Tensor {
	if s, ok := t.obj.(objectives.Stateful); ok {
		return s.State()
	}
	return nil
}

// enterEpoch tells the dataset the epoch when it cares (objectives.EpochAware).
func (t *Trainer) enterEpoch(epoch int) {
	if a, ok := t.data.(objectives.EpochAware); ok {
		a.SetEpoch(epoch)
	}
}
