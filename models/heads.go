package models

import (
	"fmt"

	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
)

// mlmHead maps hidden states to vocabulary logits: dense, activation, LayerNorm, then a decoder whose weight
// is the word-embedding table (tied, as in all three families) plus an output bias.
type mlmHead struct {
	dense   linear
	act     func(*ts.Tensor) *ts.Tensor
	norm    layerNorm
	decoder *ts.Tensor // the word embeddings, [V,H]
	bias    *ts.Tensor
}

// newMLMHead builds the family's MLM head, with the decoder tied to wordEmb unless the config unties it.
func newMLMHead(p *params, c *Config, wordEmb *ts.Tensor) *mlmHead {
	n := c.Family().mlm
	actName := c.HiddenAct
	if n.act != "" {
		actName = n.act
	}
	act, _ := activation(actName)
	eps := c.LayerNormEps
	if n.eps != 0 {
		eps = n.eps
	}
	decoder := wordEmb
	if !c.TieWordEmbeddings {
		decoder = p.normal(n.decoder, c.VocabSize, c.HiddenSize)
	}
	return &mlmHead{
		dense:   p.linear(n.dense, c.HiddenSize, c.HiddenSize, true),
		act:     act,
		norm:    p.layerNorm(n.norm, c.HiddenSize, eps),
		decoder: decoder,
		bias:    p.constant(n.bias, 0, c.VocabSize),
	}
}

func (h *mlmHead) forward(x *ts.Tensor) *ts.Tensor {
	d := h.dense.forward(x)
	a := h.act(d)
	d.MustDrop()
	n := h.norm.forward(a)
	a.MustDrop()
	logits := ts.MustLinear(n, h.decoder, h.bias)
	n.MustDrop()
	return logits
}

// MLMLogits maps hidden states [..., H] (usually Output.Last, or only the masked positions) to
// vocabulary logits [..., V].
func (m *Model) MLMLogits(hidden *ts.Tensor) (*ts.Tensor, error) {
	if m.mlm == nil {
		return nil, fmt.Errorf("model was built without an MLM head")
	}
	var out *ts.Tensor
	err := torch.Catch("MLM head", func() error { out = m.mlm.forward(hidden); return nil })
	return out, err
}

// NSPLogits maps BERT's pooled output [B,H] to next-sentence logits [B,2].
func (m *Model) NSPLogits(pooled *ts.Tensor) (*ts.Tensor, error) {
	if m.nsp == nil {
		return nil, fmt.Errorf("model was built without a next-sentence head")
	}
	var out *ts.Tensor
	err := torch.Catch("NSP head", func() error { out = m.nsp.forward(pooled); return nil })
	return out, err
}
