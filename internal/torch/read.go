package torch

import (
	"sync/atomic"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// Read copies x's values to the host as float64s. On a GPU the copy waits for every kernel queued before
// it (a blocking device-to-host copy synchronises the stream), so a training step that reads a value stalls
// the host until the GPU has caught up, and the next step's kernels are queued only afterwards. The trainer
// reads through Read alone, which counts the reads (Reads), so that a test can tell how many a step made.
func Read(x *ts.Tensor) (vals []float64, err error) {
	reads.Add(1)
	err = Catch("read a tensor", func() error {
		d := x.MustToDevice(gotch.CPU, gotch.Double, false, false, false)
		defer d.MustDrop()
		vals = make([]float64, d.Numel())
		d.MustCopyData(vals, uint(len(vals)))
		return nil
	})
	return vals, err
}

var reads atomic.Int64

// Reads is the number of Read calls so far in this process.
func Reads() int64 { return reads.Load() }
