package torch

import (
	"fmt"
	"math"
	"runtime"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// CheckDevice runs one tiny step through the shim on dev and returns what it checked: a matrix product whose
// result is known exactly, and on a GPU a CUDA graph captured and replayed on new input. It is the set-up's
// last step on a CUDA host, so that a library the build failed to link, or a GPU libtorch cannot use, stops the
// set-up with the cause instead of the first training run.
func CheckDevice(dev gotch.Device) (checked []string, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := MakeCurrent(dev); err != nil {
		return nil, err
	}
	s := NewScope()
	defer func() {
		if e := s.Free(); err == nil {
			err = e
		}
	}()
	if err := checkMatmul(dev); err != nil {
		return checked, fmt.Errorf("a matrix product on %s: %w", DeviceName(dev), err)
	}
	checked = append(checked, "matmul")
	if !dev.IsCuda() {
		return checked, nil
	}
	if err := checkGraph(dev); err != nil {
		return checked, fmt.Errorf("a CUDA graph on %s: %w", DeviceName(dev), err)
	}
	return append(checked, "graph capture and replay"), nil
}

// checkMatmul multiplies a 4×3 matrix by a 3×2 one, both small integers, on dev: the product is exact in fp32,
// so it must equal the one computed here.
func checkMatmul(dev gotch.Device) error {
	a := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	b := []float32{1, -1, 2, 0, -3, 5}
	ta, err := ts.OfSlice(a)
	if err != nil {
		return err
	}
	tb, err := ts.OfSlice(b)
	if err != nil {
		return err
	}
	if ta, err = ta.Reshape([]int64{4, 3}, true); err != nil {
		return err
	}
	if tb, err = tb.Reshape([]int64{3, 2}, true); err != nil {
		return err
	}
	if ta, err = ta.To(dev, true); err != nil {
		return err
	}
	if tb, err = tb.To(dev, true); err != nil {
		return err
	}
	prod, err := ta.Matmul(tb, false)
	if err != nil {
		return err
	}
	got, err := hostValues(prod)
	if err != nil {
		return err
	}
	for i := 0; i < 4; i++ {
		for j := 0; j < 2; j++ {
			var want float64
			for k := 0; k < 3; k++ {
				want += float64(a[i*3+k]) * float64(b[k*2+j])
			}
			if got[i*2+j] != want {
				return fmt.Errorf("element (%d, %d) is %g, want %g", i, j, got[i*2+j], want)
			}
		}
	}
	return nil
}

// checkGraph captures y = 2x + 1 on a static x, then fills x with 3 and replays: y must hold 7 everywhere, which
// only the replayed kernels can have written.
func checkGraph(dev gotch.Device) error {
	x, err := ts.Ones([]int64{256}, gotch.Float, dev)
	if err != nil {
		return err
	}
	y, err := ts.Zeros([]int64{256}, gotch.Float, dev)
	if err != nil {
		return err
	}
	g, err := NewGraph(dev)
	if err != nil {
		return err
	}
	defer g.Free()
	body := func() error {
		twice, err := x.MulScalar(ts.FloatScalar(2), false)
		if err != nil {
			return err
		}
		plus, err := twice.AddScalar(ts.FloatScalar(1), true)
		if err != nil {
			return err
		}
		y.Copy_(plus)
		return nil
	}
	// torch.cuda.graph warms up on the side stream before capturing (torch/cuda/graphs.py).
	if err := g.OnStream(body); err != nil {
		return err
	}
	if err := g.Capture(body); err != nil {
		return err
	}
	if err := x.Fill_(ts.FloatScalar(3)); err != nil {
		return err
	}
	if err := g.Replay(); err != nil {
		return err
	}
	got, err := hostValues(y)
	if err != nil {
		return err
	}
	for i, v := range got {
		if v != 7 {
			return fmt.Errorf("after the replay y[%d] is %g, want 7", i, v)
		}
	}
	return nil
}

// hostValues copies t to the host (waiting for the device) as float64s; NaN or Inf is an error.
func hostValues(t *ts.Tensor) ([]float64, error) {
	cpu, err := t.To(gotch.CPU, false)
	if err != nil {
		return nil, err
	}
	v := cpu.Float64Values()
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("element %d is %g", i, x)
		}
	}
	return v, nil
}
