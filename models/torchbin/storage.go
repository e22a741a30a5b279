package torchbin

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"

	"convrep/safetensors"
	"github.com/sugarme/gotch/half"
	"github.com/sugarme/gotch/pickle"
)

// storageDTypes are the storage classes a checkpoint may hold (the allow-list), each with its safetensors dtype.
var storageDTypes = map[reflect.Type]safetensors.DType{
	reflect.TypeFor[*pickle.FloatStorageClass]():    safetensors.F32,
	reflect.TypeFor[*pickle.DoubleStorageClass]():   safetensors.F64,
	reflect.TypeFor[*pickle.HalfStorageClass]():     safetensors.F16,
	reflect.TypeFor[*pickle.BFloat16StorageClass](): safetensors.BF16,
	reflect.TypeFor[*pickle.LongStorageClass]():     safetensors.I64,
	reflect.TypeFor[*pickle.IntStorageClass]():      safetensors.I32,
	reflect.TypeFor[*pickle.ShortStorageClass]():    safetensors.I16,
	reflect.TypeFor[*pickle.CharStorageClass]():     safetensors.I8,
	reflect.TypeFor[*pickle.ByteStorageClass]():     safetensors.U8,
	reflect.TypeFor[*pickle.BoolStorageClass]():     safetensors.Bool,
}

// kindOf returns the safetensors dtype and element size of a storage class from the allow-list.
func kindOf(c pickle.StorageClass) (safetensors.DType, int, error) {
	dtype, ok := storageDTypes[reflect.TypeOf(c)]
	if !ok {
		return "", 0, fmt.Errorf("unsupported storage class %T", c)
	}
	size, err := dtype.Size()
	return dtype, size, err
}

// storageRef is what a persistent id names: a storage's class, key and
// element count.
type storageRef struct {
	class pickle.StorageClass
	dtype safetensors.DType
	elem  int
	key   string
	numel int64
}

// parseStorageID checks a persistent id ('storage', class, key, location,
// numel[, view_metadata]) of want entries and returns the storage it names
// and the view metadata (nil when absent).
func parseStorageID(id any, want int) (storageRef, any, error) {
	t, ok := id.(*pickle.Tuple)
	if !ok || t.Len() == 0 {
		return storageRef{}, nil, fmt.Errorf("persistent id is %s, want a non-empty tuple", describe(id))
	}
	if tag, _ := t.Get(0).(string); tag != "storage" {
		return storageRef{}, nil, fmt.Errorf("persistent id of kind %s, want 'storage'", describe(t.Get(0)))
	}
	if t.Len() != want {
		return storageRef{}, nil, fmt.Errorf("storage persistent id has %d entries, want %d", t.Len(), want)
	}
	class, ok := t.Get(1).(pickle.StorageClass)
	if !ok {
		return storageRef{}, nil, fmt.Errorf("storage type is %s, not a storage class", describe(t.Get(1)))
	}
	key, ok := t.Get(2).(string)
	if !ok {
		return storageRef{}, nil, fmt.Errorf("storage key is %s, not a string", describe(t.Get(2)))
	}
	if _, ok := t.Get(3).(string); !ok {
		return storageRef{}, nil, fmt.Errorf("storage %q: location is %s, not a string", key, describe(t.Get(3)))
	}
	numel, ok := t.Get(4).(int)
	if !ok || numel < 0 {
		return storageRef{}, nil, fmt.Errorf("storage %q: size is %s, want a non-negative int", key, describe(t.Get(4)))
	}
	dtype, elem, err := kindOf(class)
	if err != nil {
		return storageRef{}, nil, fmt.Errorf("storage %q: %w", key, err)
	}
	ref := storageRef{class: class, dtype: dtype, elem: elem, key: key, numel: int64(numel)}
	var view any
	if want > 5 {
		view = t.Get(5)
	}
	return ref, view, nil
}

// nbytes returns the storage's size in bytes, or an error on overflow.
func (s storageRef) nbytes() (int64, error) {
	if s.numel > math.MaxInt64/int64(s.elem) {
		return 0, fmt.Errorf("storage %q: %d elements of %s overflow", s.key, s.numel, s.dtype)
	}
	return s.numel * int64(s.elem), nil
}

// sameAs reports whether a second reference to a key agrees with the first.
func (s storageRef) sameAs(o storageRef) bool {
	return s.dtype == o.dtype && s.numel == o.numel
}

// fill has gotch read the storage's elements from r, which the caller has
// checked holds at least that many bytes. gotch fills its buffer with a
// single Read and trusts it to be full; fullReader makes it so, and turns a
// short read into an error instead of stale bytes.
func fill(st pickle.Storage, r io.Reader, numel int64) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("reading storage panicked: %v", p)
		}
	}()
	return st.SetFromFileWithSize(fullReader{r}, int(numel))
}

type fullReader struct{ r io.Reader }

func (f fullReader) Read(p []byte) (int, error) {
	n, err := io.ReadFull(f.r, p)
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// storageBytes returns a loaded storage's elements as little-endian bytes.
func storageBytes(st pickle.Storage) ([]byte, error) {
	switch d := st.GetData().(type) {
	case []float32:
		b := make([]byte, 4*len(d))
		for i, x := range d {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		return b, nil
	case []float64:
		b := make([]byte, 8*len(d))
		for i, x := range d {
			binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
		}
		return b, nil
	case []int64:
		b := make([]byte, 8*len(d))
		for i, x := range d {
			binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
		}
		return b, nil
	case []int32:
		b := make([]byte, 4*len(d))
		for i, x := range d {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
		}
		return b, nil
	case []int16:
		b := make([]byte, 2*len(d))
		for i, x := range d {
			binary.LittleEndian.PutUint16(b[2*i:], uint16(x))
		}
		return b, nil
	case []int8:
		b := make([]byte, len(d))
		for i, x := range d {
			b[i] = byte(x)
		}
		return b, nil
	case []uint8:
		return d, nil
	case []bool:
		b := make([]byte, len(d))
		for i, x := range d {
			if x {
				b[i] = 1
			}
		}
		return b, nil
	case []half.Float16:
		b := make([]byte, 2*len(d))
		for i, x := range d {
			binary.LittleEndian.PutUint16(b[2*i:], uint16(x))
		}
		return b, nil
	case []half.BFloat16:
		b := make([]byte, 2*len(d))
		for i, x := range d {
			binary.LittleEndian.PutUint16(b[2*i:], uint16(x))
		}
		return b, nil
	}
	return nil, fmt.Errorf("unsupported storage data %T", st.GetData())
}
