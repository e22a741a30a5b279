package models

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/sugarme/gotch"
	"go.uber.org/zap"

	"convrep/internal/torch"
	"convrep/safetensors"
)

// LoadOptions say what to build around a checkpoint.
type LoadOptions struct {
	// Heads to build; nil builds those the checkpoint has. A requested head the checkpoint lacks is
	// initialised and logged; a head the checkpoint has but was not requested is left out and logged.
	Heads *Heads
	// WeightsFile overrides the file looked for in the folder (model.safetensors, then pytorch_model.bin).
	WeightsFile string
	// VocabSize, when larger than the checkpoint's vocabulary, grows the model to it (tokens added to the
	// tokenizer, such as role tokens): the checkpoint fills the first rows of the word embeddings and of
	// the MLM head's bias, the new rows are initialised as a fresh model's (HuggingFace's
	// resize_token_embeddings). A smaller value is ignored.
	VocabSize int64
	// Dropout, when set, replaces the checkpoint config's hidden and attention dropout (as HuggingFace's
	// from_pretrained(..., hidden_dropout_prob=p, attention_probs_dropout_prob=p)); the saved config says p.
	Dropout *float64
	Device  gotch.Device
	Logger  *zap.Logger
}

// Load builds a model from a folder holding HuggingFace's config.json and a weight file. Loading is strict:
// every parameter must be in the checkpoint with its shape and every checkpoint tensor must be used; all that
// does not fit is reported together in one error.
func Load(dir string, opt LoadOptions) (*Model, error) {
	log := opt.Logger
	if log == nil {
		log = zap.NewNop()
	}
	cfg, err := ReadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	if p := opt.Dropout; p != nil {
		if !(*p >= 0 && *p < 1) {
			return nil, fmt.Errorf("load %s: dropout %v must be in [0, 1)", dir, *p)
		}
		cfg.HiddenDropout, cfg.AttentionDropout = *p, *p
	}
	file := opt.WeightsFile
	if file == "" {
		if file, err = findWeights(dir); err != nil {
			return nil, err
		}
	}
	raw, err := readStateDict(file)
	if err != nil {
		return nil, err
	}
	sd, err := canonical(cfg, raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	grown := growVocab(cfg, opt.VocabSize)
	f := cfg.Family()
	has := headsIn(f, sd)
	heads := has
	if opt.Heads != nil {
		heads = *opt.Heads
	}
	m, err := New(cfg, heads, opt.Device)
	if err != nil {
		return nil, err
	}
	fresh := map[string]bool{} // parameter groups the checkpoint lacks, initialised instead
	for _, g := range []struct {
		name      string
		want, got bool
		prefix    string
	}{
		{"pooler", heads.Pooler, has.Pooler, f.poolerPrefix()},
		{"MLM head", heads.MLM, has.MLM, f.mlm.prefix},
		{"next-sentence head", heads.NSP, has.NSP, f.nsp + "."}, // neither wanted nor found where the family has none
	} {
		switch {
		case g.want && !g.got:
			fresh[g.prefix] = true
			log.Info("checkpoint has no "+g.name+"; initialised it", zap.String("file", file))
		case g.got && !g.want:
			for k := range sd {
				if strings.HasPrefix(k, g.prefix) {
					delete(sd, k)
				}
			}
			log.Info("checkpoint's "+g.name+" left out", zap.String("file", file))
		}
	}
	if err := m.assign(file, sd, fresh, grown); err != nil {
		return nil, err
	}
	if grown > 0 {
		log.Info("grew the vocabulary", zap.Int64("checkpoint", grown), zap.Int64("model", cfg.VocabSize))
	}
	log.Info("loaded model", zap.String("arch", string(cfg.Arch)), zap.String("file", file), zap.Int("tensors", len(m.params)))
	return m, nil
}

// canonical renames checkpoint keys to the model's names: legacy LayerNorm gamma/beta become weight/bias,
// encoder-only checkpoints get the family prefix, buffers are dropped and tied aliases merge into the tensor
// they alias. Two checkpoint keys for one tensor (x.gamma and x.weight) are an error, not a choice by map
// order.
func canonical(c *Config, raw map[string]safetensors.Tensor) (map[string]safetensors.Tensor, error) {
	f := c.Family()
	out := make(map[string]safetensors.Tensor, len(raw))
	aliases := map[string]safetensors.Tensor{}
	from := make(map[string]string, len(raw)) // canonical name → the checkpoint key it came from
	for _, orig := range slices.Sorted(maps.Keys(raw)) {
		t, k := raw[orig], legacyName(orig)
		if f.bare(k) {
			k = f.Prefix() + k
		}
		if k == f.EmbeddingsPrefix()+"position_ids" {
			continue // a buffer (0..max-1), recomputed by the model
		}
		if target, ok := f.aliasOf(k, c.TieWordEmbeddings); ok {
			aliases[target] = t
			continue
		}
		if other, dup := from[k]; dup {
			return nil, fmt.Errorf("checkpoint keys %s and %s both name the tensor %s", other, orig, k)
		}
		from[k] = orig
		t.Name = k
		out[k] = t
	}
	for k, t := range aliases {
		if _, ok := out[k]; !ok {
			t.Name = k
			out[k] = t
		}
	}
	return out, nil
}

// legacyName maps the LayerNorm names of old Google-converted checkpoints (gamma, beta) to weight and bias.
func legacyName(k string) string {
	if base, ok := strings.CutSuffix(k, ".gamma"); ok {
		return base + ".weight"
	}
	if base, ok := strings.CutSuffix(k, ".beta"); ok {
		return base + ".bias"
	}
	return k
}

// headsIn says which heads a (canonical) checkpoint holds.
func headsIn(f Family, sd map[string]safetensors.Tensor) Heads {
	var h Heads
	for k := range sd {
		h.Pooler = h.Pooler || strings.HasPrefix(k, f.poolerPrefix())
		h.MLM = h.MLM || strings.HasPrefix(k, f.mlm.prefix)
		h.NSP = h.NSP || f.nsp != "" && strings.HasPrefix(k, f.nsp+".")
	}
	return h
}

// assign copies checkpoint tensors into the parameters, after checking that they fit one to one.
// grown is the checkpoint's vocabulary when the model's is larger (0 otherwise): vocabulary tensors then
// fill their first grown rows.
func (m *Model) assign(file string, sd map[string]safetensors.Tensor, fresh map[string]bool, grown int64) error {
	vocab := vocabTensors(m.Config)
	var missing, misshaped, unexpected []string
	for name, p := range m.params {
		t, ok := sd[name]
		if !ok {
			if !freshParam(name, fresh) {
				missing = append(missing, fmt.Sprintf("%s %v", name, p.MustSize()))
			}
			continue
		}
		want := p.MustSize()
		if grown > 0 && vocab[name] {
			want[0] = grown
		}
		if !slices.Equal(want, t.Shape) {
			misshaped = append(misshaped, fmt.Sprintf("%s: checkpoint %v, model %v", name, t.Shape, want))
		}
	}
	for name, t := range sd {
		if _, ok := m.params[name]; !ok {
			unexpected = append(unexpected, fmt.Sprintf("%s %s%v", name, t.DType, t.Shape))
		}
	}
	if len(missing)+len(misshaped)+len(unexpected) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "%s does not fit a %s model with %+v:", file, m.Config.Arch, m.Heads)
		for _, part := range []struct {
			what  string
			names []string
		}{{"missing", missing}, {"mis-shaped", misshaped}, {"unexpected", unexpected}} {
			if len(part.names) > 0 {
				sort.Strings(part.names)
				fmt.Fprintf(&b, "\n  %s (%d): %s", part.what, len(part.names), strings.Join(part.names, ", "))
			}
		}
		return fmt.Errorf("%s", b.String())
	}
	return torch.Catch("load "+file, func() error {
		return torch.NoGrad(func() error {
			for name, p := range m.params {
				t, ok := sd[name]
				if !ok {
					continue
				}
				src, err := torch.FromSafetensor(t)
				if err != nil {
					return fmt.Errorf("%s: %w", file, err)
				}
				dst := p
				if grown > 0 && vocab[name] {
					dst = p.MustNarrow(0, 0, grown, false) // a view: copying into it fills p's first rows
				}
				dst.Copy_(src) // converts dtype and device
				if dst != p {
					dst.MustDrop()
				}
				src.MustDrop()
			}
			return nil
		})
	})
}

func freshParam(name string, fresh map[string]bool) bool {
	for prefix := range fresh {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}
