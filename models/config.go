package models

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"convrep/internal/atomicfile"
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

// ParseConfig decodes config.json's bytes, under its family's names, and checks that the sizes make a model.
// A field the file leaves out takes the default of HuggingFace's config class.
func ParseConfig(b []byte) (*Config, error) {
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("config is not a JSON object: %w", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, fmt.Errorf("config is not a JSON object: %w", err)
	}
	mt, _ := raw["model_type"].(string)
	arch, err := ParseArch(mt)
	if err != nil {
		return nil, fmt.Errorf("config: model_type %w", err)
	}
	f, _ := familyOf(arch)
	k, d := f.keys, f.defaults
	r := fieldReader{fields: fields}
	c := &Config{
		Arch:                arch,
		VocabSize:           r.int("vocab_size", 0),
		HiddenSize:          r.int(k.hidden, 0),
		NumLayers:           r.int(k.layers, 0),
		NumHeads:            r.int(k.heads, 0),
		IntermediateSize:    r.int(k.intermediate, 0),
		HiddenAct:           r.text(k.act, ""),
		HiddenDropout:       r.float(k.hiddenDropout, 0.1),
		AttentionDropout:    r.float(k.attnDropout, 0.1),
		MaxPositions:        r.int("max_position_embeddings", 0),
		TypeVocabSize:       r.int(k.typeVocab, d.typeVocabSize),
		LayerNormEps:        r.float(k.layerNormEps, d.layerNormEps),
		PadTokenID:          r.int("pad_token_id", d.padTokenID),
		InitializerRange:    r.float("initializer_range", 0.02),
		SinusoidalPositions: r.flag(k.sinusoidal, false),
		TieWordEmbeddings:   r.flag("tie_word_embeddings", true),
		Raw:                 raw,
	}
	positions := r.text(k.positionType, "")
	if r.err != nil {
		return nil, fmt.Errorf("config: %w", r.err)
	}
	if positions != "" && positions != "absolute" {
		return nil, fmt.Errorf("config: %s %q is not supported (only absolute)", k.positionType, positions)
	}
	if c.HiddenAct == "" {
		c.HiddenAct = "gelu"
	}
	return c, c.validate()
}

// fieldReader reads config.json's fields by name: a field that is missing or null, or a name that is ""
// (a field the family does not have), gives the default. The first malformed field is kept in err.
type fieldReader struct {
	fields map[string]json.RawMessage
	err    error
}

// read decodes the field name into v, which holds the default.
func (r *fieldReader) read(name string, v any) {
	raw, ok := r.fields[name]
	if name == "" || !ok || r.err != nil {
		return
	}
	if err := json.Unmarshal(raw, v); err != nil {
		r.err = fmt.Errorf("%s: %w", name, err)
	}
}

func (r *fieldReader) int(name string, def int64) int64       { r.read(name, &def); return def }
func (r *fieldReader) float(name string, def float64) float64 { r.read(name, &def); return def }
func (r *fieldReader) text(name string, def string) string    { r.read(name, &def); return def }
func (r *fieldReader) flag(name string, def bool) bool        { r.read(name, &def); return def }

func (c *Config) validate() error {
	if _, err := ParseArch(string(c.Arch)); err != nil {
		return fmt.Errorf("config: model_type %w", err)
	}
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
	if c.Family().positionsAfterPad && c.MaxPositions <= c.PadTokenID+1 {
		return fmt.Errorf("config: %s needs max_position_embeddings > pad_token_id+1 (positions start after the pad id), got %d", c.Arch, c.MaxPositions)
	}
	for _, p := range []float64{c.HiddenDropout, c.AttentionDropout} {
		if p < 0 || p >= 1 {
			return fmt.Errorf("config: dropout %g outside [0, 1)", p)
		}
	}
	return nil
}

// MaxSequence is the longest input the position table allows: its rows, less pad+1 in a family whose
// positions start after the pad id.
func (c *Config) MaxSequence() int64 {
	if c.Family().positionsAfterPad {
		return c.MaxPositions - c.PadTokenID - 1
	}
	return c.MaxPositions
}

// Sizes are the dimensions and the few settings of a randomly initialised model.
type Sizes struct {
	VocabSize, HiddenSize, NumLayers, NumHeads, IntermediateSize int64
	// MaxSequence is the longest input; the position table gets pad+1 rows more in a family whose positions
	// start after the pad id.
	MaxSequence      int64
	PadTokenID       int64
	Dropout          float64 // hidden and attention dropout
	InitializerRange float64 // 0 for HuggingFace's 0.02
}

// NewConfig is the config of a randomly initialised model of family arch: the sizes s, gelu, tied word
// embeddings, and the token types and LayerNorm epsilon of the family's released base checkpoint.
func NewConfig(arch Arch, s Sizes) (*Config, error) {
	if _, err := ParseArch(string(arch)); err != nil {
		return nil, fmt.Errorf("architecture %w", err)
	}
	f, _ := familyOf(arch)
	c := &Config{Arch: arch, VocabSize: s.VocabSize, HiddenSize: s.HiddenSize, NumLayers: s.NumLayers,
		NumHeads: s.NumHeads, IntermediateSize: s.IntermediateSize, HiddenAct: "gelu",
		HiddenDropout: s.Dropout, AttentionDropout: s.Dropout, MaxPositions: s.MaxSequence,
		TypeVocabSize: f.released.typeVocabSize, LayerNormEps: f.released.layerNormEps, PadTokenID: s.PadTokenID,
		InitializerRange: s.InitializerRange, TieWordEmbeddings: true, Raw: map[string]any{}}
	if f.positionsAfterPad {
		c.MaxPositions += c.PadTokenID + 1
	}
	if c.InitializerRange == 0 {
		c.InitializerRange = 0.02
	}
	return c, c.validate()
}

// WriteConfig writes config.json under the family's names, keeping the fields it was read with and updating
// those the math uses.
func (c *Config) WriteConfig(dir string) error {
	out := map[string]any{}
	for k, v := range c.Raw {
		out[k] = v
	}
	k := c.Family().keys
	out["model_type"] = string(c.Arch)
	out["vocab_size"] = c.VocabSize
	out["max_position_embeddings"] = c.MaxPositions
	out["pad_token_id"] = c.PadTokenID
	out["initializer_range"] = c.InitializerRange
	out["tie_word_embeddings"] = c.TieWordEmbeddings
	out[k.hidden], out[k.layers], out[k.heads], out[k.intermediate] = c.HiddenSize, c.NumLayers, c.NumHeads, c.IntermediateSize
	out[k.act], out[k.hiddenDropout], out[k.attnDropout] = c.HiddenAct, c.HiddenDropout, c.AttentionDropout
	for _, field := range []struct {
		name  string
		value any
	}{{k.typeVocab, c.TypeVocabSize}, {k.layerNormEps, c.LayerNormEps}, {k.sinusoidal, c.SinusoidalPositions}} {
		if field.name != "" { // a field the family's config has
			out[field.name] = field.value
		}
	}
	if _, ok := out[k.positionType]; k.positionType != "" && !ok {
		out[k.positionType] = "absolute"
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, "config.json"), append(b, '\n'))
}
