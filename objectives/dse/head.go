package dse

import (
	"fmt"
	"math"

	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/settings"
	"convrep/internal/torch"
	"convrep/models"
	"convrep/objectives/tensors"
)

// contrastHead is the projection MLP Linear(d,d) → ReLU → Linear(d,out), both without bias, that
// contrastive objectives put on top of the pooled embedding; the loss L2-normalises its outputs.
// Its weights are named <name>.0.weight and <name>.2.weight, the indices of a torch nn.Sequential.
type contrastHead struct {
	w1, w2 *ts.Tensor // [d,d] and [out,d], torch.nn.Linear's layout
}

// HeadInit is how the contrastive head's weights are drawn.
type HeadInit string

const (
	// HeadInitNormal draws N(0, initializer_range) (0.02 for the paper's backbones): DSE's PSCBert is a
	// BertPreTrainedModel built by from_pretrained, which initialises every weight the checkpoint lacks, the
	// head's included, with transformers' _init_weights (pretrain/models/Transformers.py; modeling_bert.py,
	// BertPreTrainedModel._init_weights, v4.29.2). The default.
	HeadInitNormal HeadInit = "normal"
	// HeadInitUniform draws torch.nn.Linear's own U(−1/√fan_in, 1/√fan_in), what a head built outside
	// from_pretrained gets (std 1/√(3d): 0.036 at d = 256, 0.018 at d = 1024); Appendix A.2 names no
	// initialisation.
	HeadInitUniform HeadInit = "uniform"
)

// ParseHeadInit reads a head_init setting case-insensitively.
func ParseHeadInit(s string) (HeadInit, error) {
	return settings.OneOf("head initialisation", s, HeadInitNormal, HeadInitUniform)
}

// newContrastHead adds the head to m.VS under name, its weights drawn as init says.
func newContrastHead(m *models.Model, name string, out int64, init HeadInit) (*contrastHead, error) {
	if _, err := m.VS.Root().Get(name + ".0.weight"); err == nil {
		return nil, fmt.Errorf("the model already has a %s", name)
	}
	d := m.Config.HiddenSize
	var draw nn.Init
	switch init {
	case HeadInitNormal:
		std := m.Config.InitializerRange
		if std <= 0 {
			std = 0.02 // transformers' PretrainedConfig default
		}
		draw = nn.NewRandnInit(0, std)
	case HeadInitUniform:
		// fan_in is d for both layers.
		draw = tensors.Uniform{Bound: 1 / math.Sqrt(float64(d))}
	default:
		return nil, fmt.Errorf("build the %s: unknown head initialisation %q", name, init)
	}
	h := &contrastHead{}
	err := torch.Catch("build the "+name, func() error {
		p := m.VS.Root().Sub(name)
		h.w1 = p.Sub("0").MustNewVar("weight", []int64{d, d}, draw)
		h.w2 = p.Sub("2").MustNewVar("weight", []int64{out, d}, draw)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}

// forward maps pooled embeddings [N,d] to the head's outputs [N,out], before the L2 normalisation (which
// the loss does in fp32). It panics on a libtorch error; its intermediates go to the scope it runs in.
func (h *contrastHead) forward(e *ts.Tensor) *ts.Tensor {
	return noBias(noBias(torch.Of(e), h.w1).Relu(), h.w2).Raw()
}

// noBias is torch.nn.Linear(bias=False), x·Wᵀ (gotch's Linear cannot take a missing bias).
func noBias(x torch.Tensor, w *ts.Tensor) torch.Tensor { return x.Mm(torch.Of(w).T()) }
