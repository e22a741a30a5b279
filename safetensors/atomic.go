package safetensors

import (
	"fmt"
	"io"

	"convrep/internal/atomicfile"
)

// WriteFile writes a safetensors file at path atomically: readers see the old
// file or the complete new one, never a torn checkpoint, even after a crash.
func WriteFile(path string, meta map[string]string, tensors []Tensor) error {
	err := atomicfile.Write(path, func(w io.Writer) error { return encode(w, meta, tensors, false) })
	if err != nil {
		return fmt.Errorf("safetensors: write %s: %w", path, err)
	}
	return nil
}
