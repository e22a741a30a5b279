package objectives

import (
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
)

// Metrics are what Loss reports beside the loss: each a detached 0-dim Float tensor on the batch's device.
// Reading one back to the host would wait for the device to finish the step's queued work, so the trainer
// sums them on the device and reads them once per log line (trainer/objmetrics.go). The caller owns them
// and drops them (DropMetrics).

// Metric is the mean of x as a metric: detached from the graph, 0-dim, Float, on x's device. It panics on
// a libtorch error; a loss hands it out of its scope with keep (torch.Scoped).
func Metric(x torch.Tensor) torch.Tensor { return x.Detach().Mean(gotch.Float) }

// Known is a metric whose value Go already knows, filled on dev: copying a number from the host to a CUDA
// device would wait for the device (a blocking copy from pageable memory synchronises its stream).
func Known(v float64, dev gotch.Device) *ts.Tensor {
	return ts.MustFull([]int64{1}, ts.FloatScalar(v), gotch.Float, dev).MustSqueeze(true) // gotch cannot pass an empty size
}

// DropMetrics drops every tensor of m; a nil map is fine.
func DropMetrics(m map[string]*ts.Tensor) {
	for _, x := range m {
		torch.Drop(x)
	}
}
