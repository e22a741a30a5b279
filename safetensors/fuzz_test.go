package safetensors

import (
	"bytes"
	"encoding/binary"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// addSeeds feeds the fuzzers the fixture files (or their headers) and the
// corrupt cases.
func addSeeds(f *testing.F, add func(file []byte)) {
	fx, files := fixtureFiles(f)
	for _, rel := range files {
		b, err := os.ReadFile(filepath.Join(fx, rel))
		if err != nil {
			f.Fatal(err)
		}
		add(b)
	}
	for _, tc := range corruptCases() {
		add(tc.file)
	}
}

// FuzzHeader checks that any header either fails cleanly or yields
// entries that tile the data section and survive an encode/parse round trip.
func FuzzHeader(f *testing.F) {
	addSeeds(f, func(file []byte) {
		if len(file) < 8 {
			f.Add(file, int64(0))
			return
		}
		n := binary.LittleEndian.Uint64(file)
		if n > uint64(len(file)-8) {
			f.Add(file[8:], int64(0))
			return
		}
		f.Add(file[8:8+n], int64(len(file)-8-int(n)))
	})
	f.Fuzz(func(t *testing.T, hdr []byte, dataLen int64) {
		meta, infos, err := ParseHeader(hdr, dataLen)
		if err != nil {
			return
		}
		var covered int64
		for i, info := range infos {
			if i > 0 && infos[i-1].Name >= info.Name {
				t.Fatalf("infos not strictly sorted: %q then %q", infos[i-1].Name, info.Name)
			}
			n, err := byteSize(info.DType, info.Shape)
			if err != nil || n != info.End-info.Begin || info.Begin < 0 || info.End > dataLen {
				t.Fatalf("accepted bad entry %+v (size %d, %v) for %d data bytes", info, n, err, dataLen)
			}
			covered += n
		}
		if covered != dataLen {
			t.Fatalf("entries cover %d of %d bytes", covered, dataLen)
		}
		if dataLen > 1<<20 {
			return
		}
		tensors := make([]Tensor, len(infos))
		for i, info := range infos {
			tensors[i] = Tensor{Name: info.Name, DType: info.DType, Shape: info.Shape, Data: make([]byte, info.End-info.Begin)}
		}
		var buf bytes.Buffer
		if err := Encode(&buf, meta, tensors); err != nil {
			t.Fatalf("cannot re-encode an accepted header: %v", err)
		}
		back, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatalf("cannot parse our own encoding: %v", err)
		}
		if !maps.Equal(back.Metadata, meta) || len(back.Tensors) != len(infos) {
			t.Fatalf("round trip changed the header: %v %d", back.Metadata, len(back.Tensors))
		}
		for i, tn := range back.Tensors {
			if tn.Name != infos[i].Name || tn.DType != infos[i].DType || !slices.Equal(tn.Shape, infos[i].Shape) {
				t.Fatalf("round trip changed entry %d: %+v -> %s %s %v", i, infos[i], tn.Name, tn.DType, tn.Shape)
			}
		}
	})
}

// FuzzParse checks that any file either fails cleanly or re-encodes to a file
// that parses to the same content and re-encodes to itself.
func FuzzParse(f *testing.F) {
	addSeeds(f, func(file []byte) {
		if len(file) <= 64<<10 {
			f.Add(file)
		}
	})
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse(b)
		if err != nil {
			return
		}
		var once bytes.Buffer
		if err := file.Encode(&once); err != nil {
			t.Fatalf("cannot re-encode an accepted file: %v", err)
		}
		back, err := Parse(once.Bytes())
		if err != nil {
			t.Fatalf("cannot parse our own encoding: %v", err)
		}
		if !maps.Equal(back.Metadata, file.Metadata) || len(back.Tensors) != len(file.Tensors) {
			t.Fatal("round trip changed the file")
		}
		for i, tn := range back.Tensors {
			w := file.Tensors[i]
			if tn.Name != w.Name || tn.DType != w.DType || !slices.Equal(tn.Shape, w.Shape) || !bytes.Equal(tn.Data, w.Data) {
				t.Fatalf("round trip changed tensor %q", w.Name)
			}
		}
		var twice bytes.Buffer
		if err := back.Encode(&twice); err != nil || !bytes.Equal(once.Bytes(), twice.Bytes()) {
			t.Fatalf("encoding is not stable (err %v)", err)
		}
	})
}
