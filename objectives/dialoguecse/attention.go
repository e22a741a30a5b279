package dialoguecse

import (
	"fmt"
	"math"

	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/objectives/tensors"
)

// turnAttention is the FFN of DialogueCSE's I1 aggregation (§4.3, Eq. 6): a two-layer feed-forward network
// with ReLU, Linear(d,h) → ReLU → Linear(h,1), that scores one context turn's refined embedding matrix R̂_i.
// α_i is one weight per turn (Eq. 5 scales whole matrices), so the network reads R̂_i mean-pooled over the
// rows of the turn's real tokens: the paper does not say how the n×d matrix becomes one score, and the
// pooled row is the reading that keeps I1 as light as the rest of MGE. Its weights are named
// <name>.0.{weight,bias} and <name>.2.{weight,bias}, as a torch nn.Sequential would.
type turnAttention struct {
	w1, b1, w2, b2 *ts.Tensor // [h,d], [h], [1,h], [1]: torch.nn.Linear's layout
}

// newTurnAttention adds the FFN to m.VS under name, with hidden width h.
func newTurnAttention(m *models.Model, name string, h int64) (*turnAttention, error) {
	if _, err := m.VS.Root().Get(name + ".0.weight"); err == nil {
		return nil, fmt.Errorf("the model already has a %s", name)
	}
	d := m.Config.HiddenSize
	a := &turnAttention{}
	err := torch.Catch("build the "+name, func() error {
		p := m.VS.Root().Sub(name)
		// torch.nn.Linear's default initialisation: weights and biases U(−1/√fan_in, 1/√fan_in).
		in1, in2 := tensors.Uniform{Bound: 1 / math.Sqrt(float64(d))}, tensors.Uniform{Bound: 1 / math.Sqrt(float64(h))}
		a.w1 = p.Sub("0").MustNewVar("weight", []int64{h, d}, in1)
		a.b1 = p.Sub("0").MustNewVar("bias", []int64{h}, in1)
		a.w2 = p.Sub("2").MustNewVar("weight", []int64{1, h}, in2)
		a.b2 = p.Sub("2").MustNewVar("bias", []int64{1}, in2)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// score maps pooled turn rows [..., d] to one score each [...]. It panics on a libtorch error.
func (a *turnAttention) score(p torch.Tensor) torch.Tensor {
	return linear(linear(p, a.w1, a.b1).Relu(), a.w2, a.b2).SqueezeDim(-1)
}

// linear is torch.nn.Linear on the last dimension of x: x·Wᵀ + b.
func linear(x torch.Tensor, w, b *ts.Tensor) torch.Tensor {
	return x.Matmul(torch.Of(w).T()).Add(torch.Of(b))
}
