package torchbin

import (
	"fmt"
	"slices"
	"strings"

	"convrep/safetensors"
	"github.com/sugarme/gotch/pickle"
)

// maxAliasFactor bounds how many times over the entries may repeat their
// storages' bytes. Tied weights repeat a storage a few times; a hostile
// pickle could name one storage under millions of keys and have each copied.
const maxAliasFactor = 16

// tensors copies every entry's view out of its storage into a contiguous,
// row-major safetensors.Tensor, sorted by name.
func tensors(es []entry, refs map[pickle.Storage]storageRef) ([]safetensors.Tensor, error) {
	uses := make(map[pickle.Storage]int)
	for _, e := range es {
		uses[e.t.Source]++
	}
	var storageBytesTotal int64
	for st := range uses {
		ref, ok := refs[st]
		if !ok {
			return nil, fmt.Errorf("a tensor's storage was not loaded from this file")
		}
		n, _ := ref.nbytes() // checked when the storage was loaded
		storageBytesTotal += n
	}
	budget := maxAliasFactor * storageBytesTotal

	cache := make(map[pickle.Storage][]byte)
	out := make([]safetensors.Tensor, 0, len(es))
	for _, e := range es {
		ref := refs[e.t.Source]
		data, ok := cache[e.t.Source]
		if !ok {
			var err error
			if data, err = storageBytes(e.t.Source); err != nil {
				return nil, fmt.Errorf("tensor %q: storage %q: %w", e.name, ref.key, err)
			}
			if want, _ := ref.nbytes(); int64(len(data)) != want {
				return nil, fmt.Errorf("tensor %q: storage %q holds %d bytes, want %d", e.name, ref.key, len(data), want)
			}
			cache[e.t.Source] = data
		}
		v := view{offset: e.t.StorageOffset, size: e.t.Size, stride: e.t.Stride}
		n, err := v.check(ref.numel)
		if err != nil {
			return nil, fmt.Errorf("tensor %q (storage %q): %w", e.name, ref.key, err)
		}
		if budget -= n * int64(ref.elem); budget < 0 {
			return nil, fmt.Errorf("tensor %q: the tensors add up to more than %d times their storages' bytes", e.name, maxAliasFactor)
		}
		out = append(out, safetensors.Tensor{
			Name:  e.name,
			DType: ref.dtype,
			Shape: slices.Clone(v.size),
			Data:  v.copy(data, ref.elem, uses[e.t.Source] == 1),
		})
	}
	slices.SortFunc(out, func(a, b safetensors.Tensor) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// view is a strided window on a storage, in elements.
type view struct {
	offset       int64
	size, stride []int64
}

// check returns the view's element count after checking that every element
// it addresses lies inside a storage of numel elements, and that it does not
// address more elements than the storage has (torch's expanded views, which
// could make a tiny storage into an enormous tensor, are refused).
func (v view) check(numel int64) (int64, error) {
	if len(v.size) != len(v.stride) {
		return 0, fmt.Errorf("size %v and stride %v differ in rank", v.size, v.stride)
	}
	for i, s := range v.size {
		if s < 0 || v.stride[i] < 0 {
			return 0, fmt.Errorf("negative size %v or stride %v", v.size, v.stride)
		}
	}
	if slices.Contains(v.size, 0) {
		return 0, nil
	}
	count := int64(1)
	for _, s := range v.size {
		if s > numel/count {
			return 0, fmt.Errorf("size %v holds more elements than the storage's %d (expanded views are not supported)", v.size, numel)
		}
		count *= s
	}
	if v.offset < 0 {
		return 0, fmt.Errorf("negative storage offset %d", v.offset)
	}
	last := v.offset // index of the view's last element, kept below numel
	if last >= numel {
		return 0, fmt.Errorf("storage offset %d lies outside the storage's %d elements", v.offset, numel)
	}
	for i, s := range v.size {
		st := v.stride[i]
		if s > 1 && st > (numel-1-last)/(s-1) {
			return 0, fmt.Errorf("offset %d, size %v and stride %v reach past the storage's %d elements",
				v.offset, v.size, v.stride, numel)
		}
		last += (s - 1) * st
	}
	return count, nil
}

// copy returns the view's elements contiguously. A view that is the whole
// storage in order, used by no other entry, keeps the storage's bytes.
func (v view) copy(data []byte, elem int, sole bool) []byte {
	count := int64(1)
	for _, s := range v.size {
		count *= s
	}
	if count == 0 {
		return []byte{}
	}
	e := int64(elem)
	if v.contiguous() {
		b := data[v.offset*e : (v.offset+count)*e]
		if sole && int64(len(b)) == int64(len(data)) {
			return b
		}
		return slices.Clone(b)
	}
	out := make([]byte, count*e)
	idx := make([]int64, len(v.size))
	pos := v.offset
	for k := int64(0); k < count; k++ {
		copy(out[k*e:(k+1)*e], data[pos*e:(pos+1)*e])
		for d := len(idx) - 1; d >= 0; d-- {
			idx[d]++
			pos += v.stride[d]
			if idx[d] < v.size[d] {
				break
			}
			pos -= v.stride[d] * v.size[d]
			idx[d] = 0
		}
	}
	return out
}

// contiguous reports whether the view is row-major with no gaps; strides of
// dimensions of size 1 do not matter.
func (v view) contiguous() bool {
	want := int64(1)
	for i := len(v.size) - 1; i >= 0; i-- {
		if v.size[i] != 1 && v.stride[i] != want {
			return false
		}
		want *= v.size[i]
	}
	return true
}
