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

// mlmNames are each family's names for the head's parts: transform dense, LayerNorm, output bias.
var mlmNames = map[Arch]struct{ dense, norm, bias string }{
	BERT:       {"cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm", "cls.predictions.bias"},
	RoBERTa:    {"lm_head.dense", "lm_head.layer_norm", "lm_head.bias"},
	DistilBERT: {"vocab_transform", "vocab_layer_norm", "vocab_projector.bias"},
}

// tiedAliases are names under which checkpoints store a tied tensor a second time; they load as the
// tensor they alias and are not written again on save, as HuggingFace does.
var tiedAliases = map[string]func(c *Config) string{
	"cls.predictions.decoder.weight": func(c *Config) string { return c.Prefix() + "embeddings.word_embeddings.weight" },
	"cls.predictions.decoder.bias":   func(*Config) string { return "cls.predictions.bias" },
	"lm_head.decoder.weight":         func(c *Config) string { return c.Prefix() + "embeddings.word_embeddings.weight" },
	"lm_head.decoder.bias":           func(*Config) string { return "lm_head.bias" },
	"vocab_projector.weight":         func(c *Config) string { return c.Prefix() + "embeddings.word_embeddings.weight" },
}

func newMLMHead(p *params, c *Config, wordEmb *ts.Tensor) *mlmHead {
	n := mlmNames[c.Arch]
	actName := c.HiddenAct
	if c.Arch == RoBERTa {
		actName = "gelu" // RobertaLMHead applies gelu whatever hidden_act says
	}
	act, _ := activation(actName)
	eps := c.LayerNormEps
	if c.Arch == DistilBERT {
		eps = 1e-12
	}
	decoder := wordEmb
	if !c.TieWordEmbeddings {
		decoder = p.normal(map[Arch]string{BERT: "cls.predictions.decoder.weight", RoBERTa: "lm_head.decoder.weight",
			DistilBERT: "vocab_projector.weight"}[c.Arch], c.VocabSize, c.HiddenSize)
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
