package safetensors

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestDTypeSize(t *testing.T) {
	for _, tc := range []struct {
		d    DType
		size int
		msg  string
	}{
		{F64, 8, ""}, {F32, 4, ""}, {F16, 2, ""}, {BF16, 2, ""}, {I64, 8, ""}, {I32, 4, ""},
		{I16, 2, ""}, {I8, 1, ""}, {U8, 1, ""}, {Bool, 1, ""}, {U16, 2, ""}, {U32, 4, ""},
		{U64, 8, ""}, {F8E4M3, 1, ""}, {F8E5M2, 1, ""}, {F8E8M0, 1, ""}, {C64, 8, ""},
		{"f32", 0, `unknown dtype "f32"`}, {"", 0, `unknown dtype ""`}, {"F6_E2M3", 0, "sub-byte"},
	} {
		size, err := tc.d.Size()
		if tc.msg == "" {
			if err != nil || size != tc.size {
				t.Errorf("%s: %d %v, want %d", tc.d, size, err, tc.size)
			}
			continue
		}
		if err == nil || !errors.Is(err, ErrDType) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%q: %d %v, want error %q", tc.d, size, err, tc.msg)
		}
	}
}

func TestDecoders(t *testing.T) {
	f32, err := FromFloat32s("f", []int64{2, 2}, []float32{1, -0.5, float32(math.Inf(1)), 3e-38})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := f32.Float32s(); err != nil || !slices.Equal(got, []float32{1, -0.5, float32(math.Inf(1)), 3e-38}) {
		t.Errorf("Float32s: %v %v", got, err)
	}
	if f32.Data[0] != 0 || f32.Data[3] != 0x3f || f32.Data[2] != 0x80 { // 1.0 = 0x3f800000, little-endian
		t.Errorf("F32 bytes % x not little-endian", f32.Data[:4])
	}
	f64, err := FromFloat64s("d", []int64{3}, []float64{math.Pi, -1, 0})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := f64.Float64s(); err != nil || !slices.Equal(got, []float64{math.Pi, -1, 0}) {
		t.Errorf("Float64s: %v %v", got, err)
	}
	i64, err := FromInt64s("i", []int64{}, []int64{-7})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := i64.Int64s(); err != nil || !slices.Equal(got, []int64{-7}) {
		t.Errorf("Int64s: %v %v", got, err)
	}

	for _, tc := range []struct {
		name string
		err  error
		msg  string
	}{
		{"Float64s of F32", second(f32.Float64s()), `tensor "f": dtype is F32, not F64`},
		{"Int64s of F64", second(f64.Int64s()), `tensor "d": dtype is F64, not I64`},
		{"Float32s of I64", second(i64.Float32s()), "dtype is I64, not F32"},
		{"short data", second(Tensor{Name: "s", DType: F32, Shape: []int64{3}, Data: make([]byte, 8)}.Float32s()), "8 bytes, but shape [3] of F32 needs 12"},
		{"negative shape", second(Tensor{Name: "n", DType: I64, Shape: []int64{-2}}.Int64s()), "negative"},
		{"values do not fill shape", second(FromFloat32s("x", []int64{2, 2}, []float32{1})), "1 values do not fill shape [2 2] (4 elements)"},
		{"negative shape in constructor", second(FromInt64s("y", []int64{-1}, nil)), "negative"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.msg) {
			t.Errorf("%s: error %v, want %q", tc.name, tc.err, tc.msg)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func TestLookup(t *testing.T) {
	f, err := Parse(build(`{"b":`+f32x1+`,"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if tn, ok := f.Lookup(name); !ok || tn.Name != name {
			t.Errorf("Lookup(%q) = %v %v", name, tn.Name, ok)
		}
	}
	if _, ok := f.Lookup("c"); ok {
		t.Error("Lookup found a missing tensor")
	}
}
