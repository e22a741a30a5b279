package models

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"convrep/internal/torch"
	"convrep/safetensors"
)

// Save writes the model in HuggingFace's layout (config.json and model.safetensors) so that HuggingFace
// transformers and convrep load it. Tied weights are written once, as HuggingFace does; a family whose
// position_ids buffer is persistent (BERT, RoBERTa) also gets it, as transformers 4.29 expects.
func (m *Model) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	names := make([]string, 0, len(m.params))
	for name := range m.params {
		names = append(names, name)
	}
	sort.Strings(names)
	tensors := make([]safetensors.Tensor, 0, len(names)+1)
	for _, name := range names {
		t, err := torch.ToSafetensor(name, m.params[name])
		if err != nil {
			return fmt.Errorf("save model: %w", err)
		}
		tensors = append(tensors, t)
	}
	if f := m.Config.Family(); f.savesPositionIDs {
		ids := make([]int64, m.Config.MaxPositions)
		for i := range ids {
			ids[i] = int64(i)
		}
		t, err := safetensors.FromInt64s(f.EmbeddingsPrefix()+"position_ids", []int64{1, m.Config.MaxPositions}, ids)
		if err != nil {
			return err
		}
		tensors = append(tensors, t)
	}
	if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), map[string]string{"format": "pt"}, tensors); err != nil {
		return err
	}
	return m.Config.WriteConfig(dir)
}
