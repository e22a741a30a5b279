package models

import (
	"fmt"
	"strings"
)

// Arch is the architecture family of a checkpoint, from config.json's model_type.
type Arch string

const (
	BERT       Arch = "bert"
	RoBERTa    Arch = "roberta"
	DistilBERT Arch = "distilbert"
)

// Family is everything that differs between the architectures: the rest of the package asks a config's
// family and never tests its Arch. Names are the keys of HuggingFace's checkpoints, as transformers 4.29
// writes them (models/bert/modeling_bert.py, models/roberta/modeling_roberta.py,
// models/distilbert/modeling_distilbert.py; the config classes beside them).
type Family struct {
	Arch Arch

	// base is the attribute under which the head models keep the encoder (BertForPreTraining.bert, ...).
	base string
	// embeddings is the encoder's embeddings module, the same name in all three families.
	embeddings string
	// layers is the list of transformer blocks: BertModel.encoder.layer, DistilBertModel.transformer.layer.
	layers string
	block  blockNames
	// pooler is BertModel.pooler (BertPooler: tanh(dense(h_CLS))). HuggingFace's DistilBERT has none;
	// convrep's sits where BERT's would.
	pooler string
	mlm    mlmNames
	// nsp is BertForPreTraining's next-sentence layer (cls.seq_relationship); "" where the family has none.
	nsp string

	// positionsAfterPad: real tokens are numbered from pad+1 and padding gets the pad id, so the position
	// table has pad+1 more rows than the longest input and a padding row (RobertaEmbeddings,
	// create_position_ids_from_input_ids). Otherwise positions are 0..T-1.
	positionsAfterPad bool
	// tokenTypes: token-type (segment) embeddings are added; DistilBERT has none.
	tokenTypes bool
	// sinusoidal: the position table may be fixed sinusoids (DistilBERT's sinusoidal_pos_embds,
	// create_sinusoidal_embeddings).
	sinusoidal bool
	// savesPositionIDs: the embeddings' position_ids buffer is persistent, so checkpoints hold it and Save
	// writes it (BERT and RoBERTa in 4.29; DistilBERT registers it with persistent=False).
	savesPositionIDs bool

	keys configKeys
	// defaults are the config class's values for what config.json leaves out (BertConfig, RobertaConfig,
	// DistilBertConfig).
	defaults configDefaults
	// released are the values of the family's released base checkpoint (bert-base-uncased, roberta-base,
	// distilbert-base-uncased) that NewConfig gives a randomly initialised model (its pad id is the tokenizer's).
	released configDefaults
}

// blockNames are a family's names for the parts of a transformer block, below the block's prefix.
type blockNames struct{ query, key, value, attnOut, attnNorm, ffnIn, ffnOut, outNorm string }

// mlmNames are a family's names for its masked-language-model head and the two rules the head keeps in code.
type mlmNames struct {
	prefix            string // every name of the head starts with it
	dense, norm, bias string // the transform's dense layer and LayerNorm, the output bias
	// decoder is the output projection's weight: the word embeddings under a second name when they are tied
	// (not written on save, as HuggingFace does), a tensor of its own when not.
	decoder string
	// decoderBias is the bias under a second name (the decoder's, tied to the head's); "" where the bias is
	// the decoder's own.
	decoderBias string
	// act is the activation the head applies whatever hidden_act says ("" for hidden_act).
	act string
	// eps is the head's LayerNorm epsilon where the modeling code fixes it (0 for the config's).
	eps float64
}

// configKeys are a family's config.json names for the fields that change the math; "" where the family's
// config has no such field.
type configKeys struct {
	hidden, layers, heads, intermediate, act string
	hiddenDropout, attnDropout               string
	typeVocab, layerNormEps                  string
	positionType                             string // only "absolute" is supported
	sinusoidal                               string
}

// configDefaults are the values a family takes when they are not given.
type configDefaults struct {
	padTokenID, typeVocabSize int64
	layerNormEps              float64
}

// bertKeys are BertConfig's and RobertaConfig's names (RobertaConfig has BertConfig's fields).
var bertKeys = configKeys{
	hidden: "hidden_size", layers: "num_hidden_layers", heads: "num_attention_heads",
	intermediate: "intermediate_size", act: "hidden_act",
	hiddenDropout: "hidden_dropout_prob", attnDropout: "attention_probs_dropout_prob",
	typeVocab: "type_vocab_size", layerNormEps: "layer_norm_eps", positionType: "position_embedding_type",
}

// bertBlock is BertLayer (RobertaLayer is a copy): encoder.layer.N.attention.self.query, ...
var bertBlock = blockNames{
	query: "attention.self.query", key: "attention.self.key", value: "attention.self.value",
	attnOut: "attention.output.dense", attnNorm: "attention.output.LayerNorm",
	ffnIn: "intermediate.dense", ffnOut: "output.dense", outNorm: "output.LayerNorm",
}

var bert = Family{
	Arch: BERT, base: "bert", embeddings: "embeddings", layers: "encoder.layer", block: bertBlock, pooler: "pooler",
	// BertOnlyMLMHead.predictions: BertPredictionHeadTransform (dense, hidden_act, LayerNorm), then the decoder.
	mlm: mlmNames{prefix: "cls.predictions.", dense: "cls.predictions.transform.dense",
		norm: "cls.predictions.transform.LayerNorm", bias: "cls.predictions.bias",
		decoder: "cls.predictions.decoder.weight", decoderBias: "cls.predictions.decoder.bias"},
	nsp:        "cls.seq_relationship",
	tokenTypes: true, savesPositionIDs: true,
	keys:     bertKeys,
	defaults: configDefaults{padTokenID: 0, typeVocabSize: 2, layerNormEps: 1e-12},
	released: configDefaults{typeVocabSize: 2, layerNormEps: 1e-12},
}

var roberta = Family{
	Arch: RoBERTa, base: "roberta", embeddings: "embeddings", layers: "encoder.layer", block: bertBlock, pooler: "pooler",
	// RobertaLMHead: dense, gelu (called directly, not hidden_act), layer_norm, then the decoder.
	mlm: mlmNames{prefix: "lm_head.", dense: "lm_head.dense", norm: "lm_head.layer_norm", bias: "lm_head.bias",
		decoder: "lm_head.decoder.weight", decoderBias: "lm_head.decoder.bias", act: "gelu"},
	positionsAfterPad: true, tokenTypes: true, savesPositionIDs: true,
	keys:     bertKeys,
	defaults: configDefaults{padTokenID: 1, typeVocabSize: 2, layerNormEps: 1e-12},
	released: configDefaults{typeVocabSize: 1, layerNormEps: 1e-5},
}

var distilbert = Family{
	Arch: DistilBERT, base: "distilbert", embeddings: "embeddings", layers: "transformer.layer", pooler: "pooler",
	// TransformerBlock: transformer.layer.N.attention.q_lin, ...
	block: blockNames{
		query: "attention.q_lin", key: "attention.k_lin", value: "attention.v_lin",
		attnOut: "attention.out_lin", attnNorm: "sa_layer_norm",
		ffnIn: "ffn.lin1", ffnOut: "ffn.lin2", outNorm: "output_layer_norm",
	},
	// DistilBertForMaskedLM keeps its head as three top-level modules; vocab_layer_norm's eps is 1e-12 in code.
	mlm: mlmNames{prefix: "vocab_", dense: "vocab_transform", norm: "vocab_layer_norm", bias: "vocab_projector.bias",
		decoder: "vocab_projector.weight", eps: 1e-12},
	sinusoidal: true,
	keys: configKeys{hidden: "dim", layers: "n_layers", heads: "n_heads", intermediate: "hidden_dim", act: "activation",
		hiddenDropout: "dropout", attnDropout: "attention_dropout", sinusoidal: "sinusoidal_pos_embds"},
	// No token types, and every LayerNorm's eps is 1e-12 in the modeling code, not a config field.
	defaults: configDefaults{padTokenID: 0, typeVocabSize: 0, layerNormEps: 1e-12},
	released: configDefaults{typeVocabSize: 0, layerNormEps: 1e-12},
}

// families are the known families, in the order Archs lists them.
var families = []Family{bert, roberta, distilbert}

// Archs are the known families' names, as config.json's model_type spells them.
func Archs() []Arch {
	out := make([]Arch, len(families))
	for i, f := range families {
		out[i] = f.Arch
	}
	return out
}

// ParseArch checks a family name (config.json's model_type, an experiment's model.random.arch). Its error
// reads on from the name of the field: `"gpt2" is not one of bert, roberta, distilbert`.
func ParseArch(name string) (Arch, error) {
	if _, ok := familyOf(Arch(name)); ok {
		return Arch(name), nil
	}
	var known []string
	for _, a := range Archs() {
		known = append(known, string(a))
	}
	return "", fmt.Errorf("%q is not one of %s", name, strings.Join(known, ", "))
}

func familyOf(a Arch) (Family, bool) {
	for _, f := range families {
		if f.Arch == a {
			return f, true
		}
	}
	return Family{}, false
}

// Family is the config's architecture family; the zero Family for an unknown Arch, which validation refuses.
func (c *Config) Family() Family {
	f, _ := familyOf(c.Arch)
	return f
}

// Prefix is the name under which HuggingFace's head models keep the encoder: "bert.", "roberta.", "distilbert.".
func (f Family) Prefix() string { return f.base + "." }

// EmbeddingsPrefix starts the names of the embeddings' parameters: "bert.embeddings.".
func (f Family) EmbeddingsPrefix() string { return f.Prefix() + f.embeddings + "." }

// LayerPrefix starts the names of encoder layer i's parameters: "bert.encoder.layer.3.",
// "distilbert.transformer.layer.3.".
func (f Family) LayerPrefix(i int) string { return fmt.Sprintf("%s%s.%d.", f.Prefix(), f.layers, i) }

// wordEmbeddings is the word-embedding table's name: "bert.embeddings.word_embeddings.weight".
func (f Family) wordEmbeddings() string { return f.EmbeddingsPrefix() + "word_embeddings.weight" }

// poolerPrefix starts the names of the pooler's parameters: "bert.pooler.".
func (f Family) poolerPrefix() string { return f.Prefix() + f.pooler + "." }

// bare reports whether a checkpoint key is an encoder tensor named without the base prefix, as the encoder
// classes themselves (BertModel, DistilBertModel) save it: embeddings..., encoder.layer..., pooler....
func (f Family) bare(key string) bool {
	root, _, _ := strings.Cut(key, ".")
	layersRoot, _, _ := strings.Cut(f.layers, ".")
	return root == f.embeddings || root == layersRoot || root == f.pooler
}

// aliasOf returns the tensor a checkpoint key names a second time (the tied MLM decoder's weight and bias).
// An untied decoder weight is a tensor of its own.
func (f Family) aliasOf(key string, tied bool) (string, bool) {
	switch {
	case key == f.mlm.decoder && tied:
		return f.wordEmbeddings(), true
	case key == f.mlm.decoderBias && key != "":
		return f.mlm.bias, true
	}
	return "", false
}
