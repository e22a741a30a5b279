package objectives

import (
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
)

// Mixed precision. Under train.precision bf16 the trainer runs Loss under autocast: the encoder's matmuls
// run in bf16 and its outputs may arrive in bf16. A loss itself is computed in fp32, as torch.autocast's
// own policy keeps log-softmax, NLL, cross-entropy and the reductions in fp32: its inputs are widened with
// Upcast and its arithmetic runs in FP32, with autocast off, since autocast would cast the inputs of a
// similarity matmul back to bf16 whatever their dtype. Without autocast both cost nothing.

// Upcast returns x as Float when it is a low-precision float (BFloat16, Half) and a new handle to x
// otherwise: Float and Double stay as they are (the float64 tests keep their precision). The cast is in
// the graph. The caller drops the result. It panics on a libtorch error (callers Catch).
func Upcast(x *ts.Tensor) *ts.Tensor {
	if dt := x.DType(); dt == gotch.BFloat16 || dt == gotch.Half {
		return x.MustTotype(gotch.Float, false)
	}
	return x.MustShallowClone()
}

// LossDType is the dtype a loss reduces in (log-softmax, sums, means) for an input of x's dtype: Float for
// bf16 and fp16, x's own otherwise.
func LossDType(x *ts.Tensor) gotch.DType {
	if dt := x.DType(); dt == gotch.BFloat16 || dt == gotch.Half {
		return gotch.Float
	}
	return x.DType()
}

// FP32 runs fn, the arithmetic of a loss on Upcast inputs, with autocast off on the current OS thread,
// turning a panic inside into an error named by what (torch.Catch).
func FP32(what string, fn func() error) error {
	return torch.Catch(what, func() error { return torch.WithoutAutocast(fn) })
}

// Metrics are what Loss reports beside the loss: each a detached 0-dim Float tensor on the batch's device.
// Reading one back to the host would wait for the device to finish the step's queued work, so the trainer
// sums them on the device and reads them once per log line (trainer/objmetrics.go). The caller owns them
// and drops them (DropMetrics).

// Metric is the mean of x as a metric: detached from the graph, 0-dim, Float, on x's device. It panics on
// a libtorch error (callers Catch).
func Metric(x *ts.Tensor) *ts.Tensor {
	d := x.MustDetach(false)
	return d.MustMean(gotch.Float, true)
}

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
