package optim

import (
	"math"
	"testing"
	"time"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
)

func TestClipGradNorm(t *testing.T) {
	lockThread(t)
	grads := [][]float64{{3, -4, 0.5}, {12, 0.25}, nil} // the third parameter has no gradient
	var want float64
	for _, g := range grads {
		for _, x := range g {
			want += x * x
		}
	}
	want = math.Sqrt(want) // ≈ 13.0
	cases := []struct {
		name    string
		dtype   gotch.DType
		maxNorm float64
		tol     float64
	}{
		{"clipped f32", gotch.Float, 1, 1e-6},
		{"clipped f64", gotch.Double, 5, 1e-12},
		{"below the limit f32", gotch.Float, 20, 1e-6},
		{"just above the limit f64", gotch.Double, want - 1e-3, 1e-12},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			params := []*ts.Tensor{
				leaf(t, []float64{1, 2, 3}, []int64{3}, c.dtype),
				leaf(t, []float64{1, 2}, []int64{2}, c.dtype),
				leaf(t, []float64{1}, []int64{1}, c.dtype),
			}
			backward(t, params, grads)
			total, err := ClipGradNorm(params, c.maxNorm)
			if err != nil {
				t.Fatal(err)
			}
			if !closeTo(total, want, c.tol, 1) {
				t.Errorf("total = %.17g, want %.17g", total, want)
			}
			coef := math.Min(1, c.maxNorm/(want+1e-6))
			for k, g := range grads {
				got := gradValues(t, params[k])
				if g == nil {
					if got != nil {
						t.Errorf("param %d: gradient %v appeared", k, got)
					}
					continue
				}
				scaled := make([]float64, len(g))
				for i := range g {
					scaled[i] = g[i] * coef
				}
				compare(t, "grad", got, scaled, c.tol, 1e-3)
			}
		})
	}
}

func TestClipGradNormEdges(t *testing.T) {
	lockThread(t)
	p := leaf(t, []float64{1, 2}, []int64{2}, gotch.Float)
	if total, err := ClipGradNorm([]*ts.Tensor{p}, 1); err != nil || total != 0 {
		t.Errorf("no gradients: total %v, error %v; want 0, nil", total, err)
	}
	if total, err := ClipGradNorm(nil, 1); err != nil || total != 0 {
		t.Errorf("no params: total %v, error %v; want 0, nil", total, err)
	}
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := ClipGradNorm([]*ts.Tensor{p}, bad); err == nil {
			t.Errorf("max norm %v accepted", bad)
		}
	}
	if _, err := ClipGradNorm([]*ts.Tensor{p, nil}, 1); err == nil || !contains(err.Error(), "param 1 is nil") {
		t.Errorf("nil param: error %v", err)
	}
}

// gotch's own Optimizer.ClipGradNorm deadlocks on its VarStore's lock; this one, given a VarStore's
// variables, must return.
func TestClipGradNormOnVarStoreDoesNotDeadlock(t *testing.T) {
	lockThread(t)
	vs := nn.NewVarStore(gotch.CPU)
	w := vs.Root().MustOnes("w", []int64{4})
	backward(t, []*ts.Tensor{w}, [][]float64{{10, 0, 0, 0}})
	type result struct {
		total float64
		err   error
	}
	done := make(chan result, 1)
	go func() {
		total, err := ClipGradNorm(vs.TrainableVariables(), 1)
		done <- result{total, err}
	}()
	select {
	case r := <-done:
		if r.err != nil || r.total != 10 {
			t.Fatalf("total %v, error %v; want 10, nil", r.total, r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ClipGradNorm on a VarStore's variables did not return within 30 s")
	}
	if g := gradValues(t, w); !closeTo(g[0], 10/(10+1e-6), 1e-6, 1) {
		t.Errorf("clipped gradient %v, want [≈1 0 0 0]", g)
	}
}

// ClipGradNormTensor clips as ClipGradNorm does and leaves the norm on the device: no host read (the counted
// torch.Read) and a 0-dim tensor of the gradients' dtype, NaN when a gradient is.
func TestClipGradNormTensorReadsNothing(t *testing.T) {
	lockThread(t)
	for _, c := range []struct {
		name  string
		grads [][]float64
		want  float64
	}{
		{"finite", [][]float64{{3, -4}, {12}}, 13},
		{"a NaN gradient", [][]float64{{3, math.NaN()}, {12}}, math.NaN()},
		{"no gradients", [][]float64{nil, nil}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			params := []*ts.Tensor{leaf(t, []float64{1, 2}, []int64{2}, gotch.Float), leaf(t, []float64{1}, []int64{1}, gotch.Float)}
			var withGrad []*ts.Tensor
			var grads [][]float64
			for i, g := range c.grads {
				if g != nil {
					withGrad, grads = append(withGrad, params[i]), append(grads, g)
				}
			}
			if len(withGrad) > 0 {
				backward(t, withGrad, grads)
			}
			before := torch.Reads()
			norm, err := ClipGradNormTensor(params, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer norm.MustDrop()
			if n := torch.Reads() - before; n != 0 {
				t.Errorf("%d host reads, want none", n)
			}
			if dims := norm.MustSize(); len(dims) != 0 || norm.DType() != gotch.Float {
				t.Errorf("norm has shape %v and dtype %v, want a 0-dim float tensor", dims, norm.DType())
			}
			v, err := torch.Read(norm)
			if err != nil {
				t.Fatal(err)
			}
			if !(math.IsNaN(c.want) && math.IsNaN(v[0])) && !closeTo(v[0], c.want, 1e-6, 1) {
				t.Errorf("norm %v, want %v", v[0], c.want)
			}
		})
	}
}
