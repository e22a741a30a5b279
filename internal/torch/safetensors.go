package torch

import (
	"fmt"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/safetensors"
)

var dtypes = map[safetensors.DType]gotch.DType{
	"F32": gotch.Float, "F64": gotch.Double, "F16": gotch.Half, "BF16": gotch.BFloat16,
	"I64": gotch.Int64, "I32": gotch.Int, "I16": gotch.Int16, "I8": gotch.Int8, "U8": gotch.Uint8, "BOOL": gotch.Bool,
}

// FromSafetensor makes a CPU tensor of the stored bytes, in the stored dtype.
func FromSafetensor(t safetensors.Tensor) (*ts.Tensor, error) {
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

// ToSafetensor copies a float32, float64 or int64 tensor's values to the CPU as stored bytes, bit for bit.
func ToSafetensor(name string, x *ts.Tensor) (safetensors.Tensor, error) {
	var out safetensors.Tensor
	err := Catch("read tensor "+name, func() error {
		cpu := x.MustDetach(false).MustTo(gotch.CPU, true).MustContiguous(true)
		defer cpu.MustDrop()
		shape := cpu.MustSize()
		var err error
		switch v := cpu.Vals().(type) {
		case []float32:
			out, err = safetensors.FromFloat32s(name, shape, v)
		case []float64:
			out, err = safetensors.FromFloat64s(name, shape, v)
		case []int64:
			out, err = safetensors.FromInt64s(name, shape, v)
		default:
			err = fmt.Errorf("dtype %v cannot be stored", cpu.DType())
		}
		return err
	})
	return out, err
}

// CopyFromSafetensor overwrites dst's values with stored ones of the same shape (dtype and device are
// converted), without recording the copy for autograd.
func CopyFromSafetensor(dst *ts.Tensor, t safetensors.Tensor) error {
	if got := dst.MustSize(); fmt.Sprint(got) != fmt.Sprint(t.Shape) {
		return fmt.Errorf("tensor %s: stored shape %v, expected %v", t.Name, t.Shape, got)
	}
	src, err := FromSafetensor(t)
	if err != nil {
		return err
	}
	defer src.MustDrop()
	return Catch("copy "+t.Name, func() error {
		return NoGrad(func() error { dst.Copy_(src); return nil })
	})
}
