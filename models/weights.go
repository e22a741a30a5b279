package models

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/models/safetensors"
	"convrep/models/torchbin"
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

var dtypes = map[safetensors.DType]gotch.DType{
	"F32": gotch.Float, "F64": gotch.Double, "F16": gotch.Half, "BF16": gotch.BFloat16,
	"I64": gotch.Int64, "I32": gotch.Int, "I16": gotch.Int16, "I8": gotch.Int8, "U8": gotch.Uint8, "BOOL": gotch.Bool,
}

// toTensor makes a CPU tensor from checkpoint bytes, with the checkpoint's dtype.
func toTensor(t safetensors.Tensor) (*ts.Tensor, error) {
	dt, ok := dtypes[t.DType]
	if !ok {
		return nil, fmt.Errorf("tensor %s: dtype %s is not supported", t.Name, t.DType)
	}
	x, err := ts.OfDataSize(t.Data, t.Shape, dt)
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", t.Name, err)
	}
	return x, nil
}

// fromTensor copies a tensor's values to the CPU as float32 checkpoint bytes.
func fromTensor(name string, x *ts.Tensor) (safetensors.Tensor, error) {
	cpu := x.MustTo(gotch.CPU, false).MustTotype(gotch.Float, true).MustContiguous(true)
	defer cpu.MustDrop()
	shape := cpu.MustSize()
	vals, ok := cpu.Vals().([]float32)
	if !ok {
		return safetensors.Tensor{}, fmt.Errorf("tensor %s: could not read float32 values", name)
	}
	return safetensors.FromFloat32s(name, shape, vals)
}
