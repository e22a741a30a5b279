package safetensors

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// build assembles a file from a header (left unpadded) and a data section.
func build(hdr string, dataLen int) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	b = append(b, hdr...)
	return append(b, make([]byte, dataLen)...)
}

// withLen assembles a file whose length prefix is n whatever follows.
func withLen(n uint64, rest string) []byte {
	return append(binary.LittleEndian.AppendUint64(nil, n), rest...)
}

const (
	f32x1 = `{"dtype":"F32","shape":[1],"data_offsets":[0,4]}`
	f32x2 = `{"dtype":"F32","shape":[2],"data_offsets":[0,8]}`
)

type corruptCase struct {
	name string
	file []byte
	kind error
	msg  string // a fragment the error must contain
}

func corruptCases() []corruptCase {
	return []corruptCase{
		{"empty file", nil, ErrTruncated, "shorter than the 8-byte header length"},
		{"5 bytes", []byte{1, 2, 3, 4, 5}, ErrTruncated, "5 bytes, shorter than the 8-byte"},
		{"header length beyond file", withLen(100, "{}"), ErrTruncated, "header length 100 runs past the end of the file (2 bytes"},
		{"huge header length", withLen(1<<40, "{}"), ErrHeaderTooLarge, "exceeds the limit"},
		{"max header length", withLen(1<<64-1, "{}"), ErrHeaderTooLarge, "header length 18446744073709551615"},
		{"empty header", withLen(0, ""), ErrHeader, "JSON ends early"},
		{"unterminated JSON", build(`{"a":`, 0), ErrHeader, "JSON ends early"},
		{"bad JSON", build(`{"a" 1}`, 0), ErrHeader, "bad JSON"},
		{"not an object", build(`[1,2]`, 0), ErrHeader, "the header is '[', not a JSON object"},
		{"invalid UTF-8", build("{\"\xff\":1}", 0), ErrHeader, "not valid UTF-8 (first bad byte at 2)"},
		{"trailing garbage", build(`{} x`, 0), ErrHeader, "after the header object"},
		{"two objects", build(`{}{}`, 0), ErrHeader, "after the header object"},
		{"entry not object", build(`{"a":3}`, 0), ErrHeader, `tensor "a": invalid header: the entry is the number 3, not a JSON object`},
		{"entry is array", build(`{"a":[]}`, 0), ErrHeader, `tensor "a"`},
		{"unknown dtype", build(`{"w":{"dtype":"F31","shape":[1],"data_offsets":[0,4]}}`, 4), ErrDType, `tensor "w": unknown dtype "F31"`},
		{"sub-byte dtype", build(`{"w":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}}`, 1), ErrDType, "sub-byte"},
		{"dtype not string", build(`{"w":{"dtype":4,"shape":[1],"data_offsets":[0,4]}}`, 4), ErrHeader, "dtype is the number 4, not a string"},
		{"negative dim", build(`{"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, 4), ErrShape, "shape[0] = -1: negative"},
		{"fractional dim", build(`{"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}}`, 4), ErrShape, "shape[0] = 1.5: not an integer"},
		{"exponent dim", build(`{"w":{"dtype":"F32","shape":[1e0],"data_offsets":[0,4]}}`, 4), ErrShape, "not an integer"},
		{"string dim", build(`{"w":{"dtype":"F32","shape":["1"],"data_offsets":[0,4]}}`, 4), ErrShape, `shape[0] is the string "1", not an integer`},
		{"shape not array", build(`{"w":{"dtype":"F32","shape":1,"data_offsets":[0,4]}}`, 4), ErrHeader, "shape is the number 1, not a JSON array"},
		{"dim too large", build(`{"w":{"dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,4]}}`, 4), ErrShape, "too large"},
		{"numel overflow", build(`{"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}}`, 4), ErrShape, "overflows"},
		{"size overflow", build(`{"w":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,4]}}`, 4), ErrShape, "overflows"},
		{"shape mismatch", build(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, 4), ErrShape, "shape [2] of F32 needs 8 bytes but data_offsets [0,4] span 4"},
		{"begin after end", build(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}}`, 8), ErrOffsets, "data_offsets [8,4] has begin > end"},
		{"one offset", build(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[4]}}`, 4), ErrOffsets, "data_offsets has 1 numbers"},
		{"negative offset", build(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}}`, 4), ErrOffsets, "negative"},
		{"offsets beyond data", build(`{"w":`+f32x2+`}`, 4), ErrOffsets, `tensor "w": invalid data offsets: data_offsets [0,8] run past the end of the 4-byte data section (file truncated?)`},
		{"no data section", build(`{"w":`+f32x1+`}`, 0), ErrOffsets, "run past the end of the 0-byte data section"},
		{"overlap", build(`{"a":`+f32x2+`,"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, 12), ErrOffsets, `tensor "b": invalid data offsets: data_offsets [4,12] overlap tensor "a", which ends at 8`},
		{"same offsets", build(`{"a":`+f32x1+`,"b":`+f32x1+`}`, 4), ErrOffsets, "overlap"},
		{"empty tensor inside another", build(`{"a":`+f32x2+`,"b":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}}`, 8), ErrOffsets, `tensor "b"`},
		{"gap", build(`{"a":`+f32x1+`,"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}`, 12), ErrOffsets, `tensor "b": invalid data offsets: gap: data bytes [4,8) before it belong to no tensor`},
		{"gap at start", build(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), ErrOffsets, "gap: data bytes [0,4)"},
		{"trailing bytes", build(`{"a":`+f32x1+`}`, 8), ErrOffsets, "trailing bytes: the tensors cover 4 bytes of the 8-byte data section"},
		{"data but no tensors", build(`{}`, 1), ErrOffsets, "trailing bytes"},
		{"duplicate name", build(`{"a":`+f32x1+`,"a":`+f32x1+`}`, 4), ErrDuplicate, `"a" appears twice`},
		{"duplicate metadata", build(`{"__metadata__":{},"__metadata__":{}}`, 0), ErrDuplicate, `"__metadata__" appears twice`},
		{"duplicate field", build(`{"a":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 4), ErrDuplicate, "field dtype appears twice"},
		{"missing shape", build(`{"a":{"dtype":"F32","data_offsets":[0,4]}}`, 4), ErrHeader, `tensor "a": invalid header: missing shape`},
		{"missing dtype", build(`{"a":{"shape":[1],"data_offsets":[0,4]}}`, 4), ErrHeader, "missing dtype"},
		{"missing offsets", build(`{"a":{"dtype":"F32","shape":[1]}}`, 4), ErrHeader, "missing data_offsets"},
		{"unknown field", build(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"stride":[1]}}`, 4), ErrHeader, `unknown field "stride"`},
		{"metadata not object", build(`{"__metadata__":[1]}`, 0), ErrHeader, "__metadata__ is '[', not a JSON object of strings"},
		{"metadata value not string", build(`{"__metadata__":{"epoch":3}}`, 0), ErrHeader, `__metadata__["epoch"] is the number 3, not a string`},
		{"metadata duplicate key", build(`{"__metadata__":{"k":"1","k":"2"}}`, 0), ErrDuplicate, `key "k" appears twice`},
	}
}

func TestCorruptInputs(t *testing.T) {
	for _, tc := range corruptCases() {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse(tc.file)
			if err == nil {
				t.Fatalf("parsed %d tensors, want an error", len(f.Tensors))
			}
			if !errors.Is(err, tc.kind) {
				t.Errorf("error %q does not wrap %q", err, tc.kind)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not mention %q", err, tc.msg)
			}
			// From disk, both readers must name the file.
			path := filepath.Join(t.TempDir(), "bad.safetensors")
			if err := os.WriteFile(path, tc.file, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("ReadFile: %v", err)
			}
			if _, _, err := ReadHeader(path); err == nil || !strings.Contains(err.Error(), path) || !errors.Is(err, tc.kind) {
				t.Errorf("ReadHeader: %v", err)
			}
		})
	}
}

func TestValidEdgeCases(t *testing.T) {
	for _, tc := range []struct {
		name    string
		file    []byte
		tensors int
		meta    map[string]string
	}{
		{"empty header", build(`{}`, 0), 0, nil},
		{"padded", build(`{}      `, 0), 0, nil},
		{"null metadata", build(`{"__metadata__":null}`, 0), 0, nil},
		{"metadata only", build(`{"__metadata__":{"k":"v"}}`, 0), 0, map[string]string{"k": "v"}},
		{"scalar", build(`{"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}`, 4), 1, nil},
		{"empty tensors share an offset", build(`{"a":{"dtype":"F32","shape":[0,3],"data_offsets":[0,0]},"b":{"dtype":"I64","shape":[0],"data_offsets":[0,0]}}`, 0), 2, nil},
		{"offset order differs from name order", build(`{"b":`+f32x1+`,"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), 2, nil},
		{"unicode names", build(`{"\u00e9t\u00e9":`+f32x1+`}`, 4), 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Tensors) != tc.tensors || len(f.Metadata) != len(tc.meta) {
				t.Fatalf("got %d tensors, meta %v", len(f.Tensors), f.Metadata)
			}
			for k, v := range tc.meta {
				if f.Metadata[k] != v {
					t.Fatalf("meta %v, want %v", f.Metadata, tc.meta)
				}
			}
		})
	}
	f, err := Parse(build(`{"b":`+f32x1+`,"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8))
	if err != nil {
		t.Fatal(err)
	}
	if f.Tensors[0].Name != "a" || f.Tensors[1].Name != "b" {
		t.Fatalf("tensors not sorted by name: %v", names(f))
	}
	if f, err := Parse(build(`{"\u00e9t\u00e9":`+f32x1+`}`, 4)); err != nil || f.Tensors[0].Name != "été" {
		t.Fatalf("unicode name: %v %v", f, err)
	}
}
