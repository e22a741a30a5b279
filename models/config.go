package models

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"convrep/internal/atomicfile"
)

// Arch is the architecture family of a checkpoint, from config.json's model_type.
type Arch string

const (
	BERT       Arch = "bert"
	RoBERTa    Arch = "roberta"
	DistilBERT Arch = "distilbert"
)

// Config holds every config.json field that changes the math, with DistilBERT's own names mapped onto
// BERT's. Raw keeps the file's other fields so that saving writes them back.
type Config struct {
	Arch                Arch
	VocabSize           int64
	HiddenSize          int64
	NumLayers           int64
	NumHeads            int64
	IntermediateSize    int64
	HiddenAct           string // gelu (erf), gelu_new / gelu_pytorch_tanh (tanh approximation), relu
	HiddenDropout       float64
	AttentionDropout    float64
	MaxPositions        int64
	TypeVocabSize       int64 // 0 for DistilBERT, which has no token types
	LayerNormEps        float64
	PadTokenID          int64
	InitializerRange    float64
	SinusoidalPositions bool // DistilBERT's sinusoidal_pos_embds
	TieWordEmbeddings   bool
	Raw                 map[string]any
}

// bertJSON and distilJSON are config.json as HuggingFace writes it for each family.
type bertJSON struct {
	ModelType                 string   `json:"model_type"`
	VocabSize                 int64    `json:"vocab_size"`
	HiddenSize                int64    `json:"hidden_size"`
	NumHiddenLayers           int64    `json:"num_hidden_layers"`
	NumAttentionHeads         int64    `json:"num_attention_heads"`
	IntermediateSize          int64    `json:"intermediate_size"`
	HiddenAct                 string   `json:"hidden_act"`
	HiddenDropoutProb         *float64 `json:"hidden_dropout_prob"`
	AttentionProbsDropoutProb *float64 `json:"attention_probs_dropout_prob"`
	MaxPositionEmbeddings     int64    `json:"max_position_embeddings"`
	TypeVocabSize             *int64   `json:"type_vocab_size"`
	LayerNormEps              *float64 `json:"layer_norm_eps"`
	PadTokenID                *int64   `json:"pad_token_id"`
	InitializerRange          *float64 `json:"initializer_range"`
	PositionEmbeddingType     string   `json:"position_embedding_type"`
	TieWordEmbeddings         *bool    `json:"tie_word_embeddings"`
}

type distilJSON struct {
	VocabSize             int64    `json:"vocab_size"`
	Dim                   int64    `json:"dim"`
	NLayers               int64    `json:"n_layers"`
	NHeads                int64    `json:"n_heads"`
	HiddenDim             int64    `json:"hidden_dim"`
	Activation            string   `json:"activation"`
	Dropout               *float64 `json:"dropout"`
	AttentionDropout      *float64 `json:"attention_dropout"`
	MaxPositionEmbeddings int64    `json:"max_position_embeddings"`
	SinusoidalPosEmbds    bool     `json:"sinusoidal_pos_embds"`
	PadTokenID            *int64   `json:"pad_token_id"`
	InitializerRange      *float64 `json:"initializer_range"`
	TieWordEmbeddings     *bool    `json:"tie_word_embeddings"`
}

// ReadConfig reads a HuggingFace config.json.
func ReadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read model config: %w", err)
	}
	c, err := ParseConfig(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ParseConfig decodes config.json's bytes and checks that the sizes make a model.
func ParseConfig(b []byte) (*Config, error) {
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("config is not a JSON object: %w", err)
	}
	mt, _ := raw["model_type"].(string)
	c := &Config{Arch: Arch(mt), Raw: raw, TieWordEmbeddings: true}
	switch c.Arch {
	case BERT, RoBERTa:
		var j bertJSON
		if err := json.Unmarshal(b, &j); err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		if j.PositionEmbeddingType != "" && j.PositionEmbeddingType != "absolute" {
			return nil, fmt.Errorf("config: position_embedding_type %q is not supported (only absolute)", j.PositionEmbeddingType)
		}
		c.VocabSize, c.HiddenSize, c.NumLayers = j.VocabSize, j.HiddenSize, j.NumHiddenLayers
		c.NumHeads, c.IntermediateSize, c.HiddenAct = j.NumAttentionHeads, j.IntermediateSize, j.HiddenAct
		c.MaxPositions = j.MaxPositionEmbeddings
		c.HiddenDropout = orFloat(j.HiddenDropoutProb, 0.1)
		c.AttentionDropout = orFloat(j.AttentionProbsDropoutProb, 0.1)
		c.TypeVocabSize = orInt(j.TypeVocabSize, 2)
		c.LayerNormEps = orFloat(j.LayerNormEps, 1e-12)
		c.PadTokenID = orInt(j.PadTokenID, map[Arch]int64{BERT: 0, RoBERTa: 1}[c.Arch])
		c.InitializerRange = orFloat(j.InitializerRange, 0.02)
		c.TieWordEmbeddings = j.TieWordEmbeddings == nil || *j.TieWordEmbeddings
	case DistilBERT:
		var j distilJSON
		if err := json.Unmarshal(b, &j); err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		c.VocabSize, c.HiddenSize, c.NumLayers = j.VocabSize, j.Dim, j.NLayers
		c.NumHeads, c.IntermediateSize, c.HiddenAct = j.NHeads, j.HiddenDim, j.Activation
		c.MaxPositions, c.SinusoidalPositions = j.MaxPositionEmbeddings, j.SinusoidalPosEmbds
		c.HiddenDropout = orFloat(j.Dropout, 0.1)
		c.AttentionDropout = orFloat(j.AttentionDropout, 0.1)
		c.LayerNormEps = 1e-12 // fixed in DistilBERT's modeling code, not a config field
		c.PadTokenID = orInt(j.PadTokenID, 0)
		c.InitializerRange = orFloat(j.InitializerRange, 0.02)
		c.TieWordEmbeddings = j.TieWordEmbeddings == nil || *j.TieWordEmbeddings
	default:
		return nil, fmt.Errorf("config: model_type %q is not one of bert, roberta, distilbert", mt)
	}
	if c.HiddenAct == "" {
		c.HiddenAct = "gelu"
	}
	return c, c.validate()
}

func (c *Config) validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"vocab size", c.VocabSize}, {"hidden size", c.HiddenSize}, {"number of layers", c.NumLayers},
		{"number of heads", c.NumHeads}, {"intermediate size", c.IntermediateSize}, {"max positions", c.MaxPositions}} {
		if f.v <= 0 {
			return fmt.Errorf("config: %s must be positive, got %d", f.name, f.v)
		}
	}
	if c.HiddenSize%c.NumHeads != 0 {
		return fmt.Errorf("config: hidden size %d is not a multiple of the number of heads %d", c.HiddenSize, c.NumHeads)
	}
	if _, err := activation(c.HiddenAct); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if c.PadTokenID < 0 || c.PadTokenID >= c.VocabSize {
		return fmt.Errorf("config: pad_token_id %d outside the vocabulary of %d", c.PadTokenID, c.VocabSize)
	}
	if c.Arch == RoBERTa && c.MaxPositions <= c.PadTokenID+1 {
		return fmt.Errorf("config: RoBERTa needs max_position_embeddings > pad_token_id+1 (positions start after the pad id), got %d", c.MaxPositions)
	}
	for _, p := range []float64{c.HiddenDropout, c.AttentionDropout} {
		if p < 0 || p >= 1 {
			return fmt.Errorf("config: dropout %g outside [0, 1)", p)
		}
	}
	return nil
}

// Prefix is the name under which HuggingFace's head models keep the encoder ("bert.", ...).
func (c *Config) Prefix() string { return string(c.Arch) + "." }

// MaxSequence is the longest input the position table allows (RoBERTa's positions start after the pad id).
func (c *Config) MaxSequence() int64 {
	if c.Arch == RoBERTa {
		return c.MaxPositions - c.PadTokenID - 1
	}
	return c.MaxPositions
}

// WriteConfig writes config.json, keeping the fields it was read with and updating those the math uses.
func (c *Config) WriteConfig(dir string) error {
	out := map[string]any{}
	for k, v := range c.Raw {
		out[k] = v
	}
	out["model_type"] = string(c.Arch)
	out["vocab_size"] = c.VocabSize
	out["max_position_embeddings"] = c.MaxPositions
	out["pad_token_id"] = c.PadTokenID
	out["initializer_range"] = c.InitializerRange
	out["tie_word_embeddings"] = c.TieWordEmbeddings
	if c.Arch == DistilBERT {
		out["dim"], out["n_layers"], out["n_heads"], out["hidden_dim"] = c.HiddenSize, c.NumLayers, c.NumHeads, c.IntermediateSize
		out["activation"], out["dropout"], out["attention_dropout"] = c.HiddenAct, c.HiddenDropout, c.AttentionDropout
		out["sinusoidal_pos_embds"] = c.SinusoidalPositions
	} else {
		out["hidden_size"], out["num_hidden_layers"], out["num_attention_heads"] = c.HiddenSize, c.NumLayers, c.NumHeads
		out["intermediate_size"], out["hidden_act"] = c.IntermediateSize, c.HiddenAct
		out["hidden_dropout_prob"], out["attention_probs_dropout_prob"] = c.HiddenDropout, c.AttentionDropout
		out["type_vocab_size"], out["layer_norm_eps"] = c.TypeVocabSize, c.LayerNormEps
		if _, ok := out["position_embedding_type"]; !ok {
			out["position_embedding_type"] = "absolute"
		}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, "config.json"), append(b, '\n'))
}

func orFloat(p *float64, def float64) float64 {
	if p == nil {
		return def
	}
	return *p
}

func orInt(p *int64, def int64) int64 {
	if p == nil {
		return def
	}
	return *p
}
