package torchbin

import (
	"bytes"
	"slices"
	"testing"

	"convrep/safetensors"
)

// TestViews checks dtypes, strides, offsets, scalars, empty tensors and
// tied names on hand-built checkpoints, in both container formats.
func TestViews(t *testing.T) {
	// storage 0: F32 0..11; storage 1: one of each other dtype's storages.
	f32 := le([]float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	specs := []spec{
		// contiguous [3,4] over the whole storage, and a tied second name
		{name: "a.weight", class: "FloatStorage", key: "0", numel: 12, size: []int{3, 4}, stride: []int{4, 1}},
		{name: "tied.weight", class: "FloatStorage", key: "0", numel: 12, size: []int{3, 4}, stride: []int{4, 1}},
		// transpose: [4,3] with stride (1,4)
		{name: "t", class: "FloatStorage", key: "0", numel: 12, size: []int{4, 3}, stride: []int{1, 4}},
		// offset 5, contiguous run of 3
		{name: "slice", class: "FloatStorage", key: "0", numel: 12, offset: 5, size: []int{3}, stride: []int{1}},
		// every other column of rows 1..2: offset 4, size [2,2], stride [4,2]
		{name: "strided", class: "FloatStorage", key: "0", numel: 12, offset: 4, size: []int{2, 2}, stride: []int{4, 2}},
		// 0-dim scalar at offset 7; size-1 dimension with an odd stride
		{name: "scalar", class: "FloatStorage", key: "0", numel: 12, offset: 7, size: []int{}, stride: []int{}},
		{name: "unit", class: "FloatStorage", key: "0", numel: 12, offset: 2, size: []int{1, 3}, stride: []int{99, 1}},
		{name: "empty", class: "FloatStorage", key: "0", numel: 12, size: []int{0, 4}, stride: []int{4, 1}},
		{name: "f64", class: "DoubleStorage", key: "1", numel: 2, size: []int{2}, stride: []int{1}},
		{name: "f16", class: "HalfStorage", key: "2", numel: 2, size: []int{2}, stride: []int{1}},
		{name: "bf16", class: "BFloat16Storage", key: "3", numel: 2, size: []int{2}, stride: []int{1}},
		{name: "i64", class: "LongStorage", key: "4", numel: 2, size: []int{2}, stride: []int{1}},
		{name: "i32", class: "IntStorage", key: "5", numel: 2, size: []int{2}, stride: []int{1}},
		{name: "i16", class: "ShortStorage", key: "6", numel: 2, size: []int{2}, stride: []int{1}},
		{name: "i8", class: "CharStorage", key: "7", numel: 2, size: []int{2}, stride: []int{1}},
		{name: "u8", class: "ByteStorage", key: "8", numel: 2, size: []int{2}, stride: []int{1}},
		{name: "bool", class: "BoolStorage", key: "9", numel: 2, size: []int{2}, stride: []int{1}},
	}
	storages := [][]byte{
		f32,
		le([]float64{1.5, -2}),
		le([]uint16{0x3c00, 0xc000}), // F16 1, -2
		le([]uint16{0x3f80, 0xc000}), // BF16 1, -2
		le([]int64{-1, 1 << 40}),
		le([]int32{-7, 7}),
		le([]int16{-3, 3}),
		le([]int8{-1, 1}),
		[]byte{0, 255},
		[]byte{1, 0},
	}
	elems := []int{4, 8, 2, 2, 8, 4, 2, 1, 1, 1}
	want := []safetensors.Tensor{
		{Name: "a.weight", DType: safetensors.F32, Shape: []int64{3, 4}, Data: f32},
		{Name: "bf16", DType: safetensors.BF16, Shape: []int64{2}, Data: storages[3]},
		{Name: "bool", DType: safetensors.Bool, Shape: []int64{2}, Data: storages[9]},
		{Name: "empty", DType: safetensors.F32, Shape: []int64{0, 4}, Data: []byte{}},
		{Name: "f16", DType: safetensors.F16, Shape: []int64{2}, Data: storages[2]},
		{Name: "f64", DType: safetensors.F64, Shape: []int64{2}, Data: storages[1]},
		{Name: "i16", DType: safetensors.I16, Shape: []int64{2}, Data: storages[6]},
		{Name: "i32", DType: safetensors.I32, Shape: []int64{2}, Data: storages[5]},
		{Name: "i64", DType: safetensors.I64, Shape: []int64{2}, Data: storages[4]},
		{Name: "i8", DType: safetensors.I8, Shape: []int64{2}, Data: storages[7]},
		{Name: "scalar", DType: safetensors.F32, Shape: []int64{}, Data: le([]float32{7})},
		{Name: "slice", DType: safetensors.F32, Shape: []int64{3}, Data: le([]float32{5, 6, 7})},
		{Name: "strided", DType: safetensors.F32, Shape: []int64{2, 2}, Data: le([]float32{4, 6, 8, 10})},
		{Name: "t", DType: safetensors.F32, Shape: []int64{4, 3}, Data: le([]float32{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11})},
		{Name: "tied.weight", DType: safetensors.F32, Shape: []int64{3, 4}, Data: f32},
		{Name: "u8", DType: safetensors.U8, Shape: []int64{2}, Data: storages[8]},
		{Name: "unit", DType: safetensors.F32, Shape: []int64{1, 3}, Data: le([]float32{2, 3, 4})},
	}
	var keys []string
	for i := range storages {
		keys = append(keys, string(rune('0'+i)))
	}
	tests := []struct {
		name string
		file []byte
	}{
		{"zip, stored", checkpoint(t, statePickle(specs, false), storages...)},
		{"zip, deflated", func() []byte {
			recs := []record{{"archive/data.pkl", statePickle(specs, false)}}
			for i, s := range storages {
				recs = append(recs, record{"archive/data/" + keys[i], s})
			}
			return zipBytes(t, recs, true)
		}()},
		{"legacy", legacyBytes(statePickle(specs, true), keys, storages, elems)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadFile(writeTemp(t, "pytorch_model.bin", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("got %d tensors, want %d", len(got), len(want))
			}
			for i, w := range want {
				g := got[i]
				if g.Name != w.Name || g.DType != w.DType || !slices.Equal(g.Shape, w.Shape) || !bytes.Equal(g.Data, w.Data) {
					t.Errorf("tensor %d:\n got %s %s %v % x\nwant %s %s %v % x", i, g.Name, g.DType, g.Shape, g.Data, w.Name, w.DType, w.Shape, w.Data)
				}
			}
			a, b := got[0], got[14]
			if &a.Data[0] == &b.Data[0] {
				t.Error("tied tensors share memory")
			}
		})
	}
}

// TestTorchLayouts checks the other shapes torch gives a state dict: an
// OrderedDict carrying _metadata (model.state_dict()), parameters wrapped in
// _rebuild_parameter, and a pickle in protocol 4 frames with MEMOIZE.
func TestTorchLayouts(t *testing.T) {
	s := spec{name: "w", class: "FloatStorage", key: "0", numel: 2, size: []int{2}, stride: []int{1}}
	data := le([]float32{3, 4})
	var od pk
	od.proto(2).emptyOrderedDict().mark().str("w").tensor(s, false).op('u')
	od.op('}').str("_metadata").emptyOrderedDict().mark().str("").op('}').str("version").int(1).op('s').op('u').op('s')
	od.op('b').stop()

	var param pk
	param.proto(2).op('}').str("w").global("torch._utils", "_rebuild_parameter").mark()
	param.tensor(s, false).op(0x88).emptyOrderedDict().tuple().reduce().op('s').stop()

	var inner pk
	inner.op(0x8c, 1, 'w', 0x94).tensor(s, false).op(0x94, 's', '.')
	var framed pk
	framed.proto(4).op(0x95).Write(le([]uint64{uint64(inner.Len() + 1)}))
	framed.op('}').Write(inner.Bytes())

	tests := []struct {
		name   string
		pickle []byte
	}{
		{"OrderedDict with _metadata", od.Bytes()},
		{"_rebuild_parameter", param.Bytes()},
		{"protocol 4 frame", framed.Bytes()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadFile(writeTemp(t, "m.bin", checkpoint(t, tc.pickle, data)))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Name != "w" || got[0].DType != safetensors.F32 || !bytes.Equal(got[0].Data, data) {
				t.Fatalf("got %+v", got)
			}
		})
	}
}
