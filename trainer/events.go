package trainer

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"convrep/tensorboard"
)

// EventFile is the TensorBoard event file of the run whose output folder is out (train.tensorboard), or ""
// when it has none; `tensorboard --logdir out` shows its curves.
func EventFile(out string) (string, error) {
	return tensorboard.Find(out)
}

// openEvents opens the run's event file to add the steps after resumeStep, keeping its events up to that
// step (all of them are in metrics.jsonl too), or makes a new one.
func openEvents(out string, resumeStep int64) (*tensorboard.Writer, tensorboard.Kept, error) {
	path, err := tensorboard.Find(out)
	if err != nil {
		return nil, tensorboard.Kept{}, fmt.Errorf("tensorboard: %w", err)
	}
	now := time.Now()
	if path == "" {
		path = filepath.Join(out, tensorboard.FileName(now))
	}
	return tensorboard.Resume(path, resumeStep, now)
}

// metricScalars are the scalars of a metrics line, tagged by what they measure: train/..., valid/... and
// objective/<the objective's metric>. Those the line leaves out (grad_norm when not measured, the validation
// between evaluations) are left out too.
func metricScalars(m Metric) []tensorboard.Scalar {
	s := []tensorboard.Scalar{
		{Tag: "train/loss", Value: float32(m.Loss)},
		{Tag: "train/lr", Value: float32(m.LR)},
		{Tag: "train/head_lr", Value: float32(m.HeadLR)},
	}
	if m.GradNorm != 0 {
		s = append(s, tensorboard.Scalar{Tag: "train/grad_norm", Value: float32(m.GradNorm)})
	}
	s = append(s,
		tensorboard.Scalar{Tag: "train/pairs_per_s", Value: float32(m.PairsPerS)},
		tensorboard.Scalar{Tag: "train/step_s", Value: float32(m.StepS)},
		tensorboard.Scalar{Tag: "train/data_wait_s", Value: float32(m.DataWaitS)},
		tensorboard.Scalar{Tag: "train/elapsed_s", Value: float32(m.ElapsedS)},
		tensorboard.Scalar{Tag: "train/epoch", Value: float32(m.Epoch)},
	)
	if m.ValidLoss != nil {
		s = append(s, tensorboard.Scalar{Tag: "valid/loss", Value: float32(*m.ValidLoss)})
	}
	if m.ValidPPL != nil {
		s = append(s, tensorboard.Scalar{Tag: "valid/ppl", Value: float32(*m.ValidPPL)})
	}
	if m.BestStep != 0 {
		s = append(s, tensorboard.Scalar{Tag: "valid/best_step", Value: float32(m.BestStep)})
	}
	for _, name := range slices.Sorted(maps.Keys(m.Objective)) {
		s = append(s, tensorboard.Scalar{Tag: "objective/" + name, Value: float32(m.Objective[name])})
	}
	return s
}
