package models

import (
	"fmt"
	"strings"

	"github.com/sugarme/gotch/nn"

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
	if _, err := vs.Root().Get(prefix + "." + c.Family().wordEmbeddings()); err == nil {
		return nil, fmt.Errorf("models: new at %q: the VarStore already holds an encoder there", prefix)
	}
	return build(c, Heads{}, vs, vs.Root().Sub(prefix), "build "+string(c.Arch)+" at "+prefix)
}

// CopyEncoder overwrites m's encoder parameters (embeddings and layers, not heads) with src's, without
// recording the copy for autograd: a second encoder starts from the first one's (pretrained) weights.
func (m *Model) CopyEncoder(src *Model) error {
	if m.Config.Family() != src.Config.Family() || m.Config.HiddenSize != src.Config.HiddenSize || m.Config.NumLayers != src.Config.NumLayers ||
		m.Config.VocabSize != src.Config.VocabSize {
		return fmt.Errorf("models: copy encoder: %s %d×%d (vocab %d) from %s %d×%d (vocab %d)", m.Config.Arch, m.Config.NumLayers,
			m.Config.HiddenSize, m.Config.VocabSize, src.Config.Arch, src.Config.NumLayers, src.Config.HiddenSize, src.Config.VocabSize)
	}
	return torch.Catch("copy encoder", func() error {
		return torch.NoGrad(func() error {
			for name, p := range m.params {
				if !strings.HasPrefix(name, m.Config.Family().Prefix()) {
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
