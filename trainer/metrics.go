package trainer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"time"

	"go.uber.org/zap"

	"convrep/internal/atomicfile"
	"convrep/rundir"
	"convrep/tensorboard"
)

// Metric is one line of metrics.jsonl: the state of the run at a logged step.
type Metric struct {
	Step      int64              `json:"step"`
	Epoch     int                `json:"epoch"`
	Loss      float64            `json:"loss"` // mean over the steps since the previous line
	LR        float64            `json:"lr"`
	HeadLR    float64            `json:"head_lr"`
	GradNorm  float64            `json:"grad_norm,omitempty"`
	PairsPerS float64            `json:"pairs_per_s"`
	StepS     float64            `json:"step_s"`
	DataWaitS float64            `json:"data_wait_s"` // of step_s, the time a step waited for its batch
	ElapsedS  float64            `json:"elapsed_s"`
	Objective map[string]float64 `json:"objective,omitempty"` // the objective's metrics, each the mean over the micro-batches since the previous line
	// ValidLoss is the loss on the held-out dialogues at an eval_every step (for an MLM-based objective the
	// masked tokens' mean NLL), ValidPPL its exponential, the perplexity, for an MLM-based objective;
	// BestStep the step of the lowest ValidLoss so far.
	ValidLoss *float64 `json:"valid_loss,omitempty"`
	ValidPPL  *float64 `json:"valid_ppl,omitempty"`
	BestStep  int64    `json:"best_step,omitempty"`
}

// metricsLog appends lines to metrics.jsonl and, with train.tensorboard, each line's scalars as an event to
// the run's TensorBoard event file (events.go). A resumed run first drops the lines and events after its
// checkpoint's step, which an interrupted run wrote but will write again.
type metricsLog struct {
	f  *os.File
	tb *tensorboard.Writer // nil without train.tensorboard, and on ranks other than 0
}

// openMetrics opens metrics.jsonl in out, and the run's event file when tensorBoard is set, each kept up to
// resumeStep. A damaged event file is kept up to its damage, with a warning on log.
func openMetrics(out string, resumeStep int64, tensorBoard bool, log *zap.Logger) (_ *metricsLog, err error) {
	l := &metricsLog{}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	// The events first: the metrics lines that an event file lacks (it was off, or damaged) are written into it
	// as the lines are kept, so that it has every step of metrics.jsonl.
	keep := func(Metric) error { return nil }
	if tensorBoard {
		var kept tensorboard.Kept
		if l.tb, kept, err = openEvents(out, resumeStep); err != nil {
			return nil, err
		}
		if kept.Damage != nil {
			log.Warn("the TensorBoard event file is damaged: its events from there on are written again from metrics.jsonl",
				zap.Error(kept.Damage))
		}
		now := time.Now()
		keep = func(m Metric) error {
			if m.Step <= kept.LastStep {
				return nil
			}
			return l.tb.Add(m.Step, now, metricScalars(m))
		}
	}
	path := rundir.At(out).MetricsPath()
	if err := keepMetricsUpTo(path, resumeStep, keep); err != nil {
		return nil, err
	}
	if l.f, err = os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return l, nil
}

// keepMetricsUpTo rewrites metrics.jsonl with only its lines at or before step, calling kept with each.
func keepMetricsUpTo(path string, step int64, kept func(Metric) error) error {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	var keep bytes.Buffer
	for line := range lines(b) {
		var m Metric
		if json.Unmarshal(line, &m) == nil && m.Step <= step {
			keep.Write(line)
			keep.WriteByte('\n')
			if err := kept(m); err != nil {
				return err
			}
		}
	}
	return atomicfile.WriteFile(path, keep.Bytes())
}

// discardMetrics is the log of a rank other than 0, which writes nothing.
func discardMetrics() *metricsLog { return &metricsLog{} }

// write appends m to metrics.jsonl and its scalars to the event file; each is one write, so that a reader
// (TensorBoard) sees the step at once.
func (l *metricsLog) write(m Metric) error {
	if l.f == nil {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if _, err := l.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if l.tb != nil {
		return l.tb.Add(m.Step, time.Now(), metricScalars(m))
	}
	return nil
}

// sync makes the lines and events written so far durable; the trainer calls it before each checkpoint, so
// that the metrics up to a checkpoint's step survive a crash as the checkpoint does.
func (l *metricsLog) sync() error {
	if l.f == nil {
		return nil
	}
	if err := fsync(l.f); err != nil {
		return fmt.Errorf("metrics: sync %s: %w", l.f.Name(), err)
	}
	if l.tb != nil {
		return l.tb.Sync()
	}
	return nil
}

// fsync is (*os.File).Sync; a test watches it.
var fsync = (*os.File).Sync

func (l *metricsLog) close() error {
	var errs []error
	if l.f != nil {
		errs = append(errs, l.f.Close())
	}
	if l.tb != nil {
		errs = append(errs, l.tb.Close())
	}
	return errors.Join(errs...)
}

// readMetrics reads metrics.jsonl back, for the loss curve.
func readMetrics(path string) ([]Metric, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ms []Metric
	n := 0
	for line := range lines(b) {
		n++
		var m Metric
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// lines yields the lines of b without their newlines, however long (bufio.Scanner stops at 64 KiB, and
// would drop every line after a longer one).
func lines(b []byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for line := range bytes.Lines(b) {
			if !yield(bytes.TrimSuffix(line, []byte("\n"))) {
				return
			}
		}
	}
}
