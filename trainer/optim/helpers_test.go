package optim

import (
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/safetensors"
)

// lockThread keeps the test on one OS thread: gotch's error slot and autograd's grad mode are per thread.
func lockThread(t testing.TB) {
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
}

// leaf makes a parameter: a leaf tensor requiring grad, holding vals (rounded to dtype).
func leaf(t testing.TB, vals []float64, shape []int64, dtype gotch.DType) *ts.Tensor {
	t.Helper()
	var out *ts.Tensor
	err := torch.Catch("leaf", func() error {
		var flat *ts.Tensor
		if dtype == gotch.Float {
			flat = ts.MustOfSlice(toFloat32s(vals))
		} else {
			flat = ts.MustOfSlice(vals)
		}
		out = flat.MustReshape(shape, true).MustSetRequiresGrad(true, true)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func toFloat32s(vals []float64) []float32 {
	out := make([]float32, len(vals))
	for i, v := range vals {
		out[i] = float32(v)
	}
	return out
}

// roundTo rounds vals to what a tensor of dtype holds, so that the float64 reference starts from the same
// numbers as libtorch.
func roundTo(vals []float64, dtype gotch.DType) []float64 {
	out := make([]float64, len(vals))
	for i, v := range vals {
		if dtype == gotch.Float {
			v = float64(float32(v))
		}
		out[i] = v
	}
	return out
}

// values reads a tensor as float64s.
func values(t testing.TB, x *ts.Tensor) []float64 {
	t.Helper()
	var out []float64
	if err := torch.Catch("values", func() error { out = x.Float64Values(); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// gradValues reads the gradient of x, nil when it has none.
func gradValues(t testing.TB, x *ts.Tensor) []float64 {
	t.Helper()
	var out []float64
	err := torch.Catch("grad", func() error {
		g := x.MustGrad(false)
		defer g.MustDrop()
		if g.MustDefined() {
			out = g.Float64Values()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// backward sets the gradient of each params[i] whose grads[i] is not nil to grads[i] (added to what is
// there), through loss = Σ_i sum(params[i] · grads[i]).
func backward(t testing.TB, params []*ts.Tensor, grads [][]float64) {
	t.Helper()
	err := torch.Catch("backward", func() error {
		var loss *ts.Tensor
		for i, p := range params {
			if grads[i] == nil {
				continue
			}
			var c *ts.Tensor
			if p.DType() == gotch.Float {
				c = ts.MustOfSlice(toFloat32s(grads[i]))
			} else {
				c = ts.MustOfSlice(grads[i])
			}
			c = c.MustReshape(p.MustSize(), true).MustTo(p.MustDevice(), true)
			term := p.MustMul(c, false).MustSum(p.DType(), true)
			c.MustDrop()
			if loss == nil {
				loss = term
			} else {
				loss = loss.MustAdd(term, true)
				term.MustDrop()
			}
		}
		if loss == nil {
			return nil
		}
		defer loss.MustDrop()
		return loss.Backward()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// closeTo reports whether got is within tol of want relative to max(|want|, floor).
func closeTo(got, want, tol, floor float64) bool {
	return math.Abs(got-want) <= tol*math.Max(math.Abs(want), floor)
}

// decodeFloats reads an F32, F64 or I64 checkpoint tensor as float64s.
func decodeFloats(t testing.TB, st safetensors.Tensor) []float64 {
	t.Helper()
	var out []float64
	switch st.DType {
	case safetensors.F32:
		v, err := st.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range v {
			out = append(out, float64(x))
		}
	case safetensors.F64:
		v, err := st.Float64s()
		if err != nil {
			t.Fatal(err)
		}
		out = v
	case safetensors.I64:
		v, err := st.Int64s()
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range v {
			out = append(out, float64(x))
		}
	default:
		t.Fatalf("tensor %q: unexpected dtype %s", st.Name, st.DType)
	}
	return out
}

// compare checks got against want element by element, relative to max(|want|, floor).
func compare(t testing.TB, name string, got, want []float64, tol, floor float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d values, want %d", name, len(got), len(want))
		return
	}
	for i := range want {
		if !closeTo(got[i], want[i], tol, floor) {
			t.Errorf("%s[%d] = %.17g, want %.17g (rel. diff %.3g)", name, i, got[i], want[i],
				math.Abs(got[i]-want[i])/math.Max(math.Abs(want[i]), floor))
		}
	}
}

func maxAbs(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, math.Abs(x))
	}
	return m
}

// equalBits reports whether a and b hold the same bit patterns.
func equalBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// catch turns a panic of a gotch Must* call into an error.
func catch(fn func()) error {
	return torch.Catch("test", func() error { fn(); return nil })
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
