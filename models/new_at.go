package models

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/safetensors"
)

// NewAt builds a randomly initialised encoder (no heads) whose parameters live in an existing VarStore under
// prefix, so that a second encoder (MGT's response encoder beside the context encoder of a dual encoder)
// is trained, clipped and checkpointed with the first without the trainer knowing it exists. Its VarStore
// names are "<prefix>.<HuggingFace name>"; Params() gives the HuggingFace names without the prefix, so Save
// writes an ordinary HuggingFace folder. prefix is one path element (no '.').
func NewAt(vs *nn.VarStore, prefix string, c *Config) (*Model, error) {
	if vs == nil {
		return nil, fmt.Errorf("models: new at %q: no VarStore", prefix)
	}
	if prefix == "" || strings.Contains(prefix, ".") {
		return nil, fmt.Errorf("models: new at %q: the prefix must be one non-empty name without '.'", prefix)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	if _, err := vs.Root().Get(prefix + "." + c.Prefix() + "embeddings.word_embeddings.weight"); err == nil {
		return nil, fmt.Errorf("models: new at %q: the VarStore already holds an encoder there", prefix)
	}
	// As in New: gotch's initialisers toggle grad mode on the current OS thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	m := &Model{Config: c, VS: vs, params: map[string]*ts.Tensor{}}
	err := torch.Catch("build "+string(c.Arch)+" at "+prefix, func() error {
		p := &params{root: vs.Root().Sub(prefix), byName: m.params, std: c.InitializerRange}
		m.emb = newEmbeddings(p, c.Prefix(), c)
		names, layers := bertBlock, "encoder.layer."
		if c.Arch == DistilBERT {
			names, layers = distilBlock, "transformer.layer."
		}
		for i := int64(0); i < c.NumLayers; i++ {
			m.layers = append(m.layers, newBlock(p, fmt.Sprintf("%s%s%d.", c.Prefix(), layers, i), names, c))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// CopyEncoder overwrites m's encoder parameters (embeddings and layers, not heads) with src's, without
// recording the copy for autograd: a second encoder starts from the first one's (pretrained) weights.
func (m *Model) CopyEncoder(src *Model) error {
	if m.Config.Arch != src.Config.Arch || m.Config.HiddenSize != src.Config.HiddenSize || m.Config.NumLayers != src.Config.NumLayers ||
		m.Config.VocabSize != src.Config.VocabSize {
		return fmt.Errorf("models: copy encoder: %s %d×%d (vocab %d) from %s %d×%d (vocab %d)", m.Config.Arch, m.Config.NumLayers,
			m.Config.HiddenSize, m.Config.VocabSize, src.Config.Arch, src.Config.NumLayers, src.Config.HiddenSize, src.Config.VocabSize)
	}
	return torch.Catch("copy encoder", func() error {
		return torch.NoGrad(func() error {
			for name, p := range m.params {
				if !strings.HasPrefix(name, m.Config.Prefix()) {
					continue // heads
				}
				s, ok := src.params[name]
				if !ok {
					return fmt.Errorf("copy encoder: the source has no %s", name)
				}
				p.Copy_(s)
			}
			return nil
		})
	})
}

// LoadTensors copies stored tensors into m's parameters: the tensor "<prefix><HuggingFace name>" of sd goes
// into the parameter of that name (prefix "" for plain names). Every parameter must be found, with its
// shape; tensors under other prefixes are ignored. It reads a second encoder back out of a checkpoint.
func (m *Model) LoadTensors(sd map[string]safetensors.Tensor, prefix string) error {
	var missing []string
	for name := range m.params {
		if _, ok := sd[prefix+name]; !ok {
			missing = append(missing, prefix+name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("models: load tensors: %d parameters missing, e.g. %s", len(missing), missing[0])
	}
	for name, p := range m.params {
		if err := torch.CopyFromSafetensor(p, sd[prefix+name]); err != nil {
			return fmt.Errorf("models: load tensors: %w", err)
		}
	}
	return nil
}
