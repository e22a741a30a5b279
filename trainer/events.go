package trainer

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"convrep/rundir"
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

// VerifyEventFile checks the event file of the run in out against its metrics.jsonl: an event at each
// line's step, once, whose scalars are the line's (train/loss the float32 of its loss), and no other events.
// It returns the number of steps checked.
func VerifyEventFile(out string) (int, error) {
	ms, err := readMetrics(rundir.At(out).MetricsPath())
	if err != nil {
		return 0, err
	}
	path, err := EventFile(out)
	if err != nil {
		return 0, err
	}
	if path == "" {
		return 0, fmt.Errorf("%s has no TensorBoard event file", out)
	}
	want := make(map[int64]Metric, len(ms))
	for _, m := range ms {
		want[m.Step] = m
	}
	seen := make(map[int64]bool, len(ms))
	err = tensorboard.Each(path, func(e tensorboard.Event) error {
		if e.FileVersion != "" {
			return nil
		}
		m, ok := want[e.Step]
		switch {
		case !ok:
			return fmt.Errorf("step %d is not in metrics.jsonl", e.Step)
		case seen[e.Step]:
			return fmt.Errorf("step %d twice", e.Step)
		case !slices.Equal(e.Scalars, metricScalars(m)):
			return fmt.Errorf("step %d: scalars %v, metrics.jsonl's %v", e.Step, e.Scalars, metricScalars(m))
		}
		seen[e.Step] = true
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, m := range ms {
		if !seen[m.Step] {
			return 0, fmt.Errorf("%s: no event at step %d of metrics.jsonl", path, m.Step)
		}
	}
	return len(ms), nil
}
