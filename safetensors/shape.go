package safetensors

import (
	"fmt"
	"math/bits"
)

// byteSize returns numel(shape)*dtype size, refusing negative dimensions and
// products that overflow int64, since both come straight from untrusted files.
func byteSize(dtype DType, shape []int64) (int64, error) {
	size, err := dtype.Size()
	if err != nil {
		return 0, err
	}
	n := uint64(size)
	for i, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("%w: dimension %d is negative (%d)", ErrShape, i, d)
		}
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 || lo > 1<<63-1 {
			return 0, fmt.Errorf("%w: %v of %s overflows the byte count", ErrShape, shape, dtype)
		}
		n = lo
	}
	return int64(n), nil
}

// numel returns the number of elements of shape, refusing negative dimensions
// and overflow.
func numel(shape []int64) (int64, error) {
	return byteSize(U8, shape)
}
