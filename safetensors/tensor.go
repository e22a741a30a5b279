package safetensors

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// Tensor is one named tensor. Data holds numel*size bytes, little-endian and
// row-major.
type Tensor struct {
	Name  string
	DType DType
	Shape []int64
	Data  []byte
}

// Numel returns the number of elements the shape holds.
func (t Tensor) Numel() (int64, error) {
	n, err := numel(t.Shape)
	if err != nil {
		return 0, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	return n, nil
}

// check verifies that t holds want elements, consistent with its shape, and
// returns how many there are.
func (t Tensor) check(want DType) (int, error) {
	if t.DType != want {
		return 0, fmt.Errorf("safetensors: tensor %q: dtype is %s, not %s", t.Name, t.DType, want)
	}
	n, err := byteSize(t.DType, t.Shape)
	if err != nil {
		return 0, fmt.Errorf("safetensors: tensor %q: %w", t.Name, err)
	}
	if n != int64(len(t.Data)) {
		return 0, fmt.Errorf("safetensors: tensor %q: %w: %d bytes, but shape %v of %s needs %d",
			t.Name, ErrData, len(t.Data), t.Shape, t.DType, n)
	}
	size, _ := want.Size()
	return len(t.Data) / size, nil
}

// Float32s decodes an F32 tensor.
func (t Tensor) Float32s() ([]float32, error) {
	n, err := t.check(F32)
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
	}
	return out, nil
}

// Float64s decodes an F64 tensor.
func (t Tensor) Float64s() ([]float64, error) {
	n, err := t.check(F64)
	if err != nil {
		return nil, err
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(t.Data[8*i:]))
	}
	return out, nil
}

// Int64s decodes an I64 tensor.
func (t Tensor) Int64s() ([]int64, error) {
	n, err := t.check(I64)
	if err != nil {
		return nil, err
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(t.Data[8*i:]))
	}
	return out, nil
}

// FromFloat32s builds an F32 tensor, checking that v fills shape.
func FromFloat32s(name string, shape []int64, v []float32) (Tensor, error) {
	t := Tensor{Name: name, DType: F32, Shape: slices.Clone(shape), Data: make([]byte, 4*len(v))}
	for i, x := range v {
		binary.LittleEndian.PutUint32(t.Data[4*i:], math.Float32bits(x))
	}
	if err := t.fits(len(v)); err != nil {
		return Tensor{}, err
	}
	return t, nil
}

// FromFloat64s builds an F64 tensor, checking that v fills shape.
func FromFloat64s(name string, shape []int64, v []float64) (Tensor, error) {
	t := Tensor{Name: name, DType: F64, Shape: slices.Clone(shape), Data: make([]byte, 8*len(v))}
	for i, x := range v {
		binary.LittleEndian.PutUint64(t.Data[8*i:], math.Float64bits(x))
	}
	if err := t.fits(len(v)); err != nil {
		return Tensor{}, err
	}
	return t, nil
}

// FromInt64s builds an I64 tensor, checking that v fills shape.
func FromInt64s(name string, shape []int64, v []int64) (Tensor, error) {
	t := Tensor{Name: name, DType: I64, Shape: slices.Clone(shape), Data: make([]byte, 8*len(v))}
	for i, x := range v {
		binary.LittleEndian.PutUint64(t.Data[8*i:], uint64(x))
	}
	if err := t.fits(len(v)); err != nil {
		return Tensor{}, err
	}
	return t, nil
}

func (t Tensor) fits(count int) error {
	n, err := t.Numel()
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	if n != int64(count) {
		return fmt.Errorf("safetensors: tensor %q: %w: %d values do not fill shape %v (%d elements)",
			t.Name, ErrData, count, t.Shape, n)
	}
	return nil
}
