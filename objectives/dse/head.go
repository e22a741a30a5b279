package dse

import (
	"fmt"
	"math"

	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/objectives"
)

// contrastHead is the projection MLP Linear(d,d) → ReLU → Linear(d,out), both without bias, that
// contrastive objectives put on top of the pooled embedding; the loss L2-normalises its outputs.
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
		init := objectives.Uniform{Bound: 1 / math.Sqrt(float64(d))}
		h.w1 = p.Sub("0").MustNewVar("weight", []int64{d, d}, init)
		h.w2 = p.Sub("2").MustNewVar("weight", []int64{out, d}, init)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}

// forward maps pooled embeddings [N,d] to the head's outputs [N,out], before the L2 normalisation (which
// the loss does in fp32). It panics on a libtorch error (callers Catch).
func (h *contrastHead) forward(e *ts.Tensor) *ts.Tensor {
	x := noBias(e, h.w1).MustRelu(true)
	z := noBias(x, h.w2)
	x.MustDrop()
	return z
}

// noBias is torch.nn.Linear(bias=False), x·Wᵀ (gotch's Linear cannot take a missing bias).
func noBias(x, w *ts.Tensor) *ts.Tensor {
	wt := w.MustT(false)
	y := x.MustMm(wt, false)
	wt.MustDrop()
	return y
}
