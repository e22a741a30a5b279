package models

import (
	"fmt"

	"github.com/sugarme/gotch"
)

// Precision is the arithmetic an Embedder's forward pass runs in.
type Precision string

const (
	// FP32 runs every op in float32.
	FP32 Precision = "fp32"
	// BF16 runs the forward pass under libtorch's autocast with bfloat16 (CPU or CUDA).
	BF16 Precision = "bf16"
)

// ParsePrecision reads a --precision flag for inference on dev. "" is fp32. bf16 is refused, with the
// reason, where dev cannot run it fast.
func ParsePrecision(s string, dev gotch.Device) (Precision, error) {
	switch Precision(s) {
	case "", FP32:
		return FP32, nil
	case BF16:
		return "", fmt.Errorf("--precision bf16 on %v: not supported yet", dev)
	}
	return "", fmt.Errorf("--precision %q: fp32 or bf16", s)
}
