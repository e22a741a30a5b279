package trainer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"path/filepath"

	"convrep/internal/atomicfile"
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

// metricsLog appends lines to metrics.jsonl. A resumed run first drops the lines after its checkpoint's step,
// which an interrupted run wrote but will write again.
type metricsLog struct {
	f *os.File
}

func openMetrics(out string, resumeStep int64) (*metricsLog, error) {
	path := filepath.Join(out, "metrics.jsonl")
	if err := keepMetricsUpTo(path, resumeStep); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return &metricsLog{f: f}, nil
}

func keepMetricsUpTo(path string, step int64) error {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	var kept bytes.Buffer
	for line := range lines(b) {
		var m Metric
		if json.Unmarshal(line, &m) == nil && m.Step <= step {
			kept.Write(line)
			kept.WriteByte('\n')
		}
	}
	return atomicfile.WriteFile(path, kept.Bytes())
}

// discardMetrics is the log of a rank other than 0, which writes nothing.
func discardMetrics() *metricsLog { return &metricsLog{} }

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
	return nil
}

// sync makes the lines written so far durable; the trainer calls it before each checkpoint, so that the
// metrics up to a checkpoint's step survive a crash as the checkpoint does.
func (l *metricsLog) sync() error {
	if l.f == nil {
		return nil
	}
	if err := fsync(l.f); err != nil {
		return fmt.Errorf("metrics: sync %s: %w", l.f.Name(), err)
	}
	return nil
}

// fsync is (*os.File).Sync; a test watches it.
var fsync = (*os.File).Sync

func (l *metricsLog) close() error {
	if l.f == nil {
		return nil
	}
	return l.f.Close()
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
