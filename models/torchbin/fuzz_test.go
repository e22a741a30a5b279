package torchbin

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadPickle feeds arbitrary data.pkl bytes, wrapped in a checkpoint
// with a few storages, to the reader. It must return tensors or an error:
// never crash, hang or allocate beyond what the input justifies, and what
// it returns must be consistent.
//
//	go test -run XXX -fuzz FuzzReadPickle -fuzztime 60s ./models/torchbin
func FuzzReadPickle(f *testing.F) {
	specs := []spec{
		{name: "a", class: "FloatStorage", key: "0", numel: 6, size: []int{2, 3}, stride: []int{3, 1}},
		{name: "b", class: "FloatStorage", key: "0", numel: 6, offset: 1, size: []int{3, 2}, stride: []int{1, 3}},
		{name: "c", class: "LongStorage", key: "1", numel: 1, size: []int{}, stride: []int{}},
		{name: "d", class: "HalfStorage", key: "2", numel: 32, size: []int{4, 8}, stride: []int{8, 1}},
	}
	f.Add(statePickle(specs, false))
	f.Add(statePickle(specs[:1], false))
	var od pk
	od.proto(2).emptyOrderedDict().mark().str("a").tensor(specs[0], false).op('u').stop()
	f.Add(od.Bytes())
	var evil pk
	f.Add(evil.proto(2).global("posix", "system").str("true").op(0x85).reduce().stop().Bytes())

	// The real data.pkl of a fixture: its storages are missing here, but it
	// seeds the fuzzer with everything torch writes.
	zr, err := zip.OpenReader(filepath.Join(fixtures(f), "tiny-bert", "pytorch_model.bin"))
	if err != nil {
		f.Fatal(err)
	}
	rc, err := zr.Open("pytorch_model/data.pkl")
	if err != nil {
		f.Fatal(err)
	}
	real, err := io.ReadAll(rc)
	rc.Close()
	zr.Close()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(real)

	storages := [][]byte{make([]byte, 24), make([]byte, 8), make([]byte, 64)}
	f.Fuzz(func(t *testing.T, pkl []byte) {
		z := checkpoint(t, pkl, storages...)
		ts, err := read(bytes.NewReader(z), int64(len(z)))
		if err != nil {
			return
		}
		for i, x := range ts {
			if i > 0 && ts[i-1].Name >= x.Name {
				t.Fatalf("names out of order or repeated: %q, %q", ts[i-1].Name, x.Name)
			}
			n, err := x.Numel()
			if err != nil {
				t.Fatal(err)
			}
			size, err := x.DType.Size()
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(x.Data)) != n*int64(size) {
				t.Fatalf("%s: %d bytes for shape %v of %s", x.Name, len(x.Data), x.Shape, x.DType)
			}
		}
	})
}

// FuzzReadFile feeds whole .bin files, zip container and legacy stream alike, to ReadFile: no panic, no hang,
// and a refusal names the file. Seeds are small checkpoints of both formats.
//
//	go test -run XXX -fuzz FuzzReadFile -fuzztime 60s ./models/torchbin
func FuzzReadFile(f *testing.F) {
	s := spec{name: "w", class: "FloatStorage", key: "0", numel: 2, size: []int{2}, stride: []int{1}}
	f.Add(checkpoint(f, statePickle([]spec{s}, false), le([]float32{1, 2})))
	f.Add(zipBytes(f, []record{{"archive/data.pkl", statePickle([]spec{s}, false)}, {"archive/data/0", le([]float32{1, 2})}}, true))
	s.key = "k"
	f.Add(legacyBytes(statePickle([]spec{s}, true), []string{"k"}, [][]byte{le([]float32{1, 2})}, []int{4}))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "pytorch_model.bin")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadFile(p); err != nil && !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not name the file", err)
		}
	})
}
