package models

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"convrep/models/torchbin"
	"convrep/safetensors"
)

// weightFiles are the single-file checkpoint names HuggingFace writes, in the order they are preferred.
var weightFiles = []string{"model.safetensors", "pytorch_model.bin"}

// findWeights returns the checkpoint file of a model folder.
func findWeights(dir string) (string, error) {
	var looked []string
	for _, name := range weightFiles {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); err == nil {
			return path, nil
		}
		looked = append(looked, path)
	}
	return "", fmt.Errorf("no weights in %s: looked for %s", dir, strings.Join(looked, ", "))
}

// readStateDict reads a safetensors file or a PyTorch state dict (.bin, zip or legacy format) into
// tensors keyed by their checkpoint names.
func readStateDict(path string) (map[string]safetensors.Tensor, error) {
	var list []safetensors.Tensor
	if strings.HasSuffix(path, ".safetensors") {
		f, err := safetensors.ReadFile(path)
		if err != nil {
			return nil, err
		}
		list = f.Tensors
	} else {
		var err error
		if list, err = torchbin.ReadFile(path); err != nil {
			return nil, err
		}
	}
	out := make(map[string]safetensors.Tensor, len(list))
	for _, t := range list {
		out[t.Name] = t
	}
	return out, nil
}
