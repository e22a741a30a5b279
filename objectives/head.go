package objectives

import (
	"fmt"
	"math"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
)

// contrastHead is the projection MLP Linear(d,d) → ReLU → Linear(d,out), both without bias, that
// contrastive objectives put on top of the pooled embedding; its outputs are L2-normalised.
// Its weights are named <name>.0.weight and <name>.2.weight, the indices of a torch nn.Sequential.
type contrastHead struct {
	w1, w2 *ts.Tensor // [d,d] and [out,d], torch.nn.Linear's layout
}

// newContrastHead adds the head to m.VS under name.
func newContrastHead(m *models.Model, name string, out int64) (*contrastHead, error) {
	if _, err := m.VS.Root().Get(name + ".0.weight"); err == nil {
		return nil, fmt.Errorf("the model already has a %s", name)
	}
	d := m.Config.HiddenSize
	h := &contrastHead{}
	err := torch.Catch("build the "+name, func() error {
		p := m.VS.Root().Sub(name)
		// torch.nn.Linear's default initialisation, U(−1/√fan_in, 1/√fan_in); fan_in is d for both layers.
		init := uniform{bound: 1 / math.Sqrt(float64(d))}
		h.w1 = p.Sub("0").MustNewVar("weight", []int64{d, d}, init)
		h.w2 = p.Sub("2").MustNewVar("weight", []int64{out, d}, init)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}

// forward maps pooled embeddings [N,d] to unit vectors [N,out]. It panics on a libtorch error (callers Catch).
func (h *contrastHead) forward(e *ts.Tensor) *ts.Tensor {
	x := noBias(e, h.w1).MustRelu(true)
	z := noBias(x, h.w2)
	x.MustDrop()
	out := normalize(z)
	z.MustDrop()
	return out
}

// noBias is torch.nn.Linear(bias=False), x·Wᵀ (gotch's Linear cannot take a missing bias).
func noBias(x, w *ts.Tensor) *ts.Tensor {
	wt := w.MustT(false)
	y := x.MustMm(wt, false)
	wt.MustDrop()
	return y
}

// uniform initialises U(−bound, bound). gotch's own uniform init wraps its work in ts.NoGrad, which
// switches grad mode on whatever OS thread the goroutine is on at each end; this one touches no grad state.
type uniform struct{ bound float64 }

func (u uniform) InitTensor(dims []int64, dev gotch.Device, dtype ...gotch.DType) *ts.Tensor {
	dt := gotch.DefaultDType
	if len(dtype) > 0 {
		dt = dtype[0]
	}
	return ts.MustRand(dims, dt, dev).MustMulScalar(ts.FloatScalar(2*u.bound), true).MustSubScalar(ts.FloatScalar(u.bound), true)
}

func (u uniform) Set(x *ts.Tensor) {
	v := u.InitTensor(x.MustSize(), x.MustDevice(), x.DType())
	defer v.MustDrop()
	torch.NoGrad(func() error { x.Copy_(v); return nil })
}

var _ nn.Init = uniform{}
