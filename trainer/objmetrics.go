package trainer

import (
	"maps"
	"slices"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/objectives"
)

// objWindow accumulates the objective's metrics (detached 0-dim tensors on the device, see
// objectives.Metric) over the micro-batches between two metrics lines. It sums them on the device and reads
// the sums back once, when the line is written: reading a metric per micro-batch would make the host wait
// for the device to finish the step's queued work every time.
type objWindow struct {
	sums  map[string]*ts.Tensor // float64 sums on the device
	count map[string]int        // micro-batches that reported each metric
	err   error                 // the first failure to add, reported by mean
}

// add takes over m's tensors: each is added to its metric's sum, then dropped. A failure is kept and
// returned by the next mean, so that the step loop has one place that reads and reports the metrics.
func (w *objWindow) add(m map[string]*ts.Tensor) {
	defer objectives.DropMetrics(m)
	if w.sums == nil {
		w.sums, w.count = map[string]*ts.Tensor{}, map[string]int{}
	}
	err := torch.Catch("objective metrics", func() error {
		for name, x := range m {
			if s, ok := w.sums[name]; ok {
				s.MustAdd_(x)
			} else {
				w.sums[name] = x.MustTotype(gotch.Double, false)
				torch.Persist(w.sums[name]) // made in a step, it outlives the step's torch.Scope
			}
			w.count[name]++
		}
		return nil
	})
	if w.err == nil {
		w.err = err
	}
}

// mean reads the sums back with one copy to the host and returns each metric's mean over the
// micro-batches added since the last call (nil when none reported one), then empties the window.
func (w *objWindow) mean() (map[string]float64, error) {
	defer w.reset()
	sums, counts, err := w.state()
	if err != nil || sums == nil {
		return nil, err
	}
	for name, n := range counts {
		sums[name] /= float64(n)
	}
	return sums, nil
}

// state reads the sums back with one copy to the host, with the micro-batches each covers (nil maps for
// an empty window), and leaves the window as it is: a checkpoint keeps them (checkpoint.Window), so that the
// first line of a resumed run averages what an uninterrupted run's does.
func (w *objWindow) state() (map[string]float64, map[string]int64, error) {
	if w.err != nil {
		return nil, nil, w.err
	}
	if len(w.sums) == 0 {
		return nil, nil, nil
	}
	names := slices.Sorted(maps.Keys(w.sums))
	parts := make([]*ts.Tensor, len(names))
	for i, name := range names {
		parts[i] = w.sums[name]
	}
	var stacked *ts.Tensor
	err := torch.Catch("stack the objective metrics", func() error {
		stacked = ts.MustStack(parts, 0)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	vals, err := torch.Read(stacked)
	stacked.MustDrop()
	if err != nil {
		return nil, nil, err
	}
	sums, counts := make(map[string]float64, len(names)), make(map[string]int64, len(names))
	for i, name := range names {
		sums[name], counts[name] = vals[i], int64(w.count[name])
	}
	return sums, counts, nil
}

// restore starts the window afresh from a checkpoint's sums and counts, on dev.
func (w *objWindow) restore(sums map[string]float64, counts map[string]int64, dev gotch.Device) error {
	w.reset()
	if len(sums) == 0 {
		return nil
	}
	w.sums, w.count = map[string]*ts.Tensor{}, map[string]int{}
	return torch.Catch("restore the objective metrics", func() error {
		for name, s := range sums {
			w.sums[name] = ts.MustFull([]int64{1}, ts.FloatScalar(s), gotch.Double, dev).MustSqueeze(true)
			w.count[name] = int(counts[name])
		}
		return nil
	})
}

// reset drops the sums.
func (w *objWindow) reset() {
	objectives.DropMetrics(w.sums)
	w.sums, w.count, w.err = nil, nil, nil
}
