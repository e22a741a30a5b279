package safetensors

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// allDTypes builds one small tensor of every dtype, with distinct bytes.
func allDTypes(t *testing.T) []Tensor {
	t.Helper()
	var out []Tensor
	for d, size := range dtypeSizes {
		data := make([]byte, 3*size)
		for i := range data {
			data[i] = byte(i + len(d))
		}
		out = append(out, Tensor{Name: "t." + string(d), DType: d, Shape: []int64{3, 1}, Data: data})
	}
	return out
}

func TestEncodeRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		meta    map[string]string
		tensors []Tensor
	}{
		{"nothing", nil, nil},
		{"empty metadata", map[string]string{}, nil},
		{"every dtype", map[string]string{"format": "pt"}, allDTypes(t)},
		{"zero-size and scalar", nil, []Tensor{
			{Name: "empty", DType: F32, Shape: []int64{0, 4}, Data: nil},
			{Name: "scalar", DType: I64, Shape: []int64{}, Data: make([]byte, 8)},
			{Name: "also-empty", DType: I8, Shape: []int64{5, 0}, Data: []byte{}},
		}},
		{"awkward strings", map[string]string{"q\"uote": "back\\slash\nnewline\x01", "é": "日本🙂"}, []Tensor{
			{Name: "名前.weight", DType: U8, Shape: []int64{2}, Data: []byte{7, 9}},
			{Name: "tab\there", DType: U8, Shape: []int64{1}, Data: []byte{1}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Encode(&buf, tc.meta, tc.tensors); err != nil {
				t.Fatal(err)
			}
			b := buf.Bytes()
			hdrLen := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
			if hdrLen%8 != 0 {
				t.Errorf("header length %d is not a multiple of 8", hdrLen)
			}
			for _, c := range b[8 : 8+hdrLen] {
				if c >= 0x80 || c < 0x20 {
					t.Fatalf("header byte %#x is not printable ASCII: %q", c, b[8:8+hdrLen])
				}
			}
			f, err := Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			if (f.Metadata == nil) != (tc.meta == nil) || !maps.Equal(f.Metadata, tc.meta) {
				t.Errorf("metadata %v, want %v", f.Metadata, tc.meta)
			}
			want := slices.Clone(tc.tensors)
			slices.SortFunc(want, func(a, b Tensor) int { return strings.Compare(a.Name, b.Name) })
			if len(f.Tensors) != len(want) {
				t.Fatalf("%d tensors, want %d", len(f.Tensors), len(want))
			}
			for i, g := range f.Tensors {
				w := want[i]
				if g.Name != w.Name || g.DType != w.DType || !slices.Equal(g.Shape, w.Shape) || !bytes.Equal(g.Data, w.Data) {
					t.Errorf("tensor %d: %s %s %v %v, want %s %s %v %v", i, g.Name, g.DType, g.Shape, g.Data, w.Name, w.DType, w.Shape, w.Data)
				}
			}
			// Encoding what was read must give the same bytes again.
			var again bytes.Buffer
			if err := f.Encode(&again); err != nil || !bytes.Equal(again.Bytes(), b) {
				t.Errorf("re-encode differs (err %v)", err)
			}
		})
	}
}

// TestEncodeLayout pins the exact bytes: compact JSON, metadata first, name
// order, Python-style \u escapes, space padding, contiguous data.
func TestEncodeLayout(t *testing.T) {
	tensors := []Tensor{
		{Name: "b", DType: U8, Shape: []int64{2}, Data: []byte{3, 4}},
		{Name: "a\u00e9", DType: I16, Shape: []int64{1, 1}, Data: []byte{1, 2}},
	}
	var buf bytes.Buffer
	if err := Encode(&buf, map[string]string{"z": "1", "format": "pt"}, tensors); err != nil {
		t.Fatal(err)
	}
	hdr := `{"__metadata__":{"format":"pt","z":"1"},"a\u00e9":{"dtype":"I16","shape":[1,1],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}`
	for len(hdr)%8 != 0 {
		hdr += " "
	}
	want := append(build(hdr, 0), 1, 2, 3, 4)
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("got\n%q\nwant\n%q", buf.Bytes(), want)
	}
	if tensors[0].Name != "b" {
		t.Error("Encode reordered the caller's slice")
	}
}

func TestEncodeErrors(t *testing.T) {
	ok := Tensor{Name: "w", DType: F32, Shape: []int64{1}, Data: make([]byte, 4)}
	for _, tc := range []struct {
		name    string
		meta    map[string]string
		tensors []Tensor
		kind    error
		msg     string
	}{
		{"duplicate", nil, []Tensor{ok, ok}, ErrDuplicate, `tensor "w" given twice`},
		{"short data", nil, []Tensor{{Name: "w", DType: F32, Shape: []int64{2}, Data: make([]byte, 4)}}, ErrData, `tensor "w": invalid tensor data: 4 bytes, but shape [2] of F32 needs 8`},
		{"unknown dtype", nil, []Tensor{{Name: "w", DType: "F12", Shape: []int64{1}, Data: make([]byte, 4)}}, ErrDType, `"F12"`},
		{"negative dim", nil, []Tensor{{Name: "w", DType: F32, Shape: []int64{-1}}}, ErrShape, "negative"},
		{"reserved name", nil, []Tensor{{Name: "__metadata__", DType: U8, Shape: []int64{0}}}, ErrHeader, "may not be called"},
		{"bad UTF-8 name", nil, []Tensor{{Name: "w\xff", DType: U8, Shape: []int64{0}}}, ErrHeader, "not valid UTF-8"},
		{"bad UTF-8 metadata", map[string]string{"k": "\xff"}, nil, ErrHeader, "not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Encode(&buf, tc.meta, tc.tensors)
			if err == nil || !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v, want %v mentioning %q", err, tc.kind, tc.msg)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes before failing", buf.Len())
			}
		})
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.safetensors")
	if err := os.WriteFile(path, []byte("old contents"), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := FromFloat32s("w", []int64{2}, []float32{1.5, -2})
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]string{"format": "pt"}
	if err := WriteFile(path, meta, []Tensor{v}); err != nil {
		t.Fatal(err)
	}
	assertOnly(t, dir, "model.safetensors")
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := f.Tensors[0].Float32s(); !slices.Equal(got, []float32{1.5, -2}) || f.Metadata["format"] != "pt" {
		t.Fatalf("read back %v %v", got, f.Metadata)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	var want bytes.Buffer
	if err := Encode(&want, meta, []Tensor{v}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, want.Bytes()) {
		t.Error("WriteFile and Encode disagree")
	}

	// A failed write leaves the previous file untouched and no temp file.
	bad := Tensor{Name: "w", DType: F32, Shape: []int64{3}, Data: make([]byte, 4)}
	if err := WriteFile(path, nil, []Tensor{bad}); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("bad tensor: %v", err)
	}
	assertOnly(t, dir, "model.safetensors")
	if got, _ := os.ReadFile(path); !bytes.Equal(got, want.Bytes()) {
		t.Error("failed write changed the target")
	}

	// Writing into a missing directory fails and names the path.
	missing := filepath.Join(dir, "nope", "x.safetensors")
	if err := WriteFile(missing, nil, nil); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("missing dir: %v", err)
	}
}

func assertOnly(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("directory holds %v, want %v", got, want)
	}
}
