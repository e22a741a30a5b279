package torchbin

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCorrupt feeds damaged and inconsistent files: each must give an error
// naming the file and the problem, never a panic or a huge allocation.
func TestCorrupt(t *testing.T) {
	w := spec{name: "w", class: "FloatStorage", key: "0", numel: 6, size: []int{2, 3}, stride: []int{3, 1}}
	six := le([]float32{1, 2, 3, 4, 5, 6})
	good := checkpoint(t, statePickle([]spec{w}, false), six)
	with := func(f func(*spec)) []byte {
		s := w
		f(&s)
		return statePickle([]spec{s}, false)
	}
	pickleOf := func(f func(p *pk)) []byte {
		var p pk
		f(&p)
		return p.Bytes()
	}
	fixtureHead := func() []byte {
		b, err := os.ReadFile(filepath.Join(fixtures(t), "tiny-bert", "pytorch_model.bin"))
		if err != nil {
			t.Fatal(err)
		}
		return b[:len(b)/2]
	}
	badCRC := func() []byte {
		b := bytes.Clone(good)
		i := bytes.Index(b, six)
		if i < 0 {
			t.Fatal("storage bytes not found in the archive")
		}
		b[i] ^= 0xff
		return b
	}
	legacyState := statePickle([]spec{{name: "w", class: "FloatStorage", key: "k", numel: 2, size: []int{2}, stride: []int{1}}}, true)
	legacyGood := legacyBytes(legacyState, []string{"k"}, [][]byte{le([]float32{1, 2})}, []int{4})

	tests := []struct {
		name string
		file []byte
		want string
	}{
		{"zip cut in half", good[:len(good)/2], "zip archive is truncated or corrupt"},
		{"fixture cut in half", fixtureHead(), "zip archive is truncated or corrupt"},
		{"empty zip", zipBytes(t, nil, false), "no records"},
		{"data.pkl cut mid-stream", checkpoint(t, statePickle([]spec{w}, false)[:60], six), "pickle truncated"},
		{"data.pkl without STOP", checkpoint(t, bytes.TrimSuffix(statePickle([]spec{w}, false), []byte{'.'}), six), "without a STOP opcode"},
		{"storage record missing", checkpoint(t, statePickle([]spec{w}, false)), "record archive/data/0 is missing"},
		{"storage record short", checkpoint(t, statePickle([]spec{w}, false), six[:20]), "holds 20 bytes, but 6 elements of F32 need 24"},
		{"storage record long", checkpoint(t, statePickle([]spec{w}, false), append(six, 0, 0, 0, 0)), "holds 28 bytes"},
		{"storage record fails its CRC", badCRC(), "checksum"},
		{"view past the storage", checkpoint(t, with(func(s *spec) { s.stride = []int{4, 1} }), six), "reach past the storage's 6 elements"},
		{"offset past the storage", checkpoint(t, with(func(s *spec) { s.offset, s.size, s.stride = 6, []int{1}, []int{1} }), six), "outside the storage"},
		{"offset plus size past the storage", checkpoint(t, with(func(s *spec) { s.offset, s.size, s.stride = 2, []int{6}, []int{1} }), six), "reach past"},
		{"expanded view", checkpoint(t, with(func(s *spec) { s.size, s.stride = []int{1000, 6}, []int{0, 1} }), six), "expanded views are not supported"},
		{"rank mismatch", checkpoint(t, with(func(s *spec) { s.stride = []int{1} }), six), "size has 2 dimensions but stride has 1"},
		{"negative size", checkpoint(t, with(func(s *spec) { s.size = []int{-2, 3} }), six), "want a non-negative int"},
		{"huge storage claim", checkpoint(t, with(func(s *spec) { s.numel = 1 << 40 }), six), "need 4398046511104"},
		{"storage named twice with different sizes", checkpoint(t, statePickle([]spec{w, {name: "v", class: "FloatStorage", key: "0", numel: 5, size: []int{5}, stride: []int{1}}}, false), six), `storage "0" is named as 6 x F32 and as 5 x F32`},
		{"BINBYTES8 of an exabyte", checkpoint(t, pickleOf(func(p *pk) {
			p.proto(4).op(0x8e).Write(binary.LittleEndian.AppendUint64(nil, 1<<60))
		})), "length 1152921504606846976"},
		{"BINUNICODE of 4 GiB", checkpoint(t, pickleOf(func(p *pk) {
			p.proto(2).op('X', 0xff, 0xff, 0xff, 0xff)
		})), "length 4294967295"},
		{"FRAME of an exabyte", checkpoint(t, pickleOf(func(p *pk) {
			p.proto(4).op(0x95).Write(binary.LittleEndian.AppendUint64(nil, 1<<60))
		})), "length 1152921504606846976"},
		{"negative LONG4", checkpoint(t, pickleOf(func(p *pk) { p.proto(2).op(0x8b, 0xff, 0xff, 0xff, 0xff) })), "negative length"},
		{"unknown opcode", checkpoint(t, []byte{0x80, 2, 0xff, '.'}), "unknown pickle opcode 0xff"},
		{"top level is a list", checkpoint(t, pickleOf(func(p *pk) { p.proto(2).op(']').stop() })), "not a state dict"},
		{"value is not a tensor", checkpoint(t, pickleOf(func(p *pk) { p.proto(2).op('}').str("w").int(3).op('s').stop() })), `entry "w" is int 3, not a tensor`},
		{"key is not a string", checkpoint(t, pickleOf(func(p *pk) { p.proto(2).op('}').int(1).tensor(w, false).op('s').stop() }), six), "key 0 is int 1"},
		{"duplicate key", checkpoint(t, pickleOf(func(p *pk) {
			p.proto(2).op('}').mark().str("w").tensor(w, false).str("w").tensor(w, false).op('u').stop()
		}), six), `names "w" twice`},
		{"non-empty tensor metadata", checkpoint(t, pickleOf(func(p *pk) {
			p.proto(2).op('}').str("w").global("torch._utils", "_rebuild_tensor_v2").mark()
			p.storageID(w, false).int(0).ints(2, 3).ints(3, 1).op(0x89).emptyOrderedDict()
			p.op('}').str("conj").op(0x88, 's').tuple().reduce().op('s').stop()
		}), six), "tensor metadata"},
		{"persistent id not a storage", checkpoint(t, pickleOf(func(p *pk) { p.proto(2).mark().str("module").tuple().op('Q').stop() })), "want 'storage'"},
		{"no data.pkl", zipBytes(t, []record{{"archive/data/0", six}}, false), "no record archive/data.pkl"},
		{"record outside a folder", zipBytes(t, []record{{"data.pkl", statePickle([]spec{w}, false)}}, false), "not inside a folder"},
		{"TorchScript archive", zipBytes(t, []record{{"m/data.pkl", []byte{'N', '.'}}, {"m/constants.pkl", []byte{'N', '.'}}}, false), "TorchScript"},
		{"big-endian archive", zipBytes(t, []record{{"m/data.pkl", []byte{'N', '.'}}, {"m/byteorder", []byte("big")}}, false), "only little-endian"},
		{"duplicate record", zipBytes(t, []record{{"m/data.pkl", []byte{'N', '.'}}, {"m/data.pkl", []byte{'N', '.'}}}, false), "twice"},

		{"legacy: garbage", []byte("this is not a checkpoint at all, just text\n"), "neither a zip archive nor a legacy torch.save file"},
		{"legacy: empty file", nil, "neither a zip archive nor a legacy torch.save file"},
		{"legacy: wrong magic number", append([]byte{0x80, 2, 'K', 7, '.'}, legacyGood[16:]...), "magic number is int 7"},
		{"legacy: tar archive", append(make([]byte, 257), []byte("ustar\x0000")...), "tar-based format"},
		{"legacy: storage data cut short", legacyGood[:len(legacyGood)-3], "need 8 bytes, only 5 left"},
		{"legacy: element count cut short", legacyGood[:len(legacyGood)-12], "element count"},
		{"legacy: element count disagrees", legacyBytes(legacyState, []string{"k"}, [][]byte{le([]float32{1, 2, 3})}, []int{4}), "file says 3 elements"},
		{"legacy: key not in the state dict", legacyBytes(legacyState, []string{"x"}, [][]byte{le([]float32{1, 2})}, []int{4}), `"x" is listed twice or not named`},
		{"legacy: key list short", legacyBytes(legacyState, nil, nil, nil), "0 storage keys listed"},
		{"legacy: state dict cut mid-stream", legacyBytes(legacyState[:40], nil, nil, nil), "state dict pickle"},
		{"legacy: storage view", legacyBytes(pickleOf(func(p *pk) {
			p.proto(2).mark().str("storage").global("torch", "FloatStorage").str("k").str("cpu").int(2)
			p.mark().str("v").int(0).int(1).tuple().tuple().op('Q').stop()
		}), nil, nil, nil), "views of storages are not supported"},
		{"legacy: pickled nn.Module", legacyBytes(pickleOf(func(p *pk) {
			p.proto(2).mark().str("module").str("M").str("m.py").str("src").tuple().op('Q').stop()
		}), nil, nil, nil), "whole nn.Module"},
		{"legacy: big-endian", func() []byte {
			b := bytes.Clone(legacyGood)
			i := bytes.Index(b, []byte("little_endian"))
			b[i+len("little_endian")] = 0x89 // NEWTRUE -> NEWFALSE
			return b
		}(), "only little-endian"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTemp(t, "pytorch_model.bin", tc.file)
			ts, err := ReadFile(path)
			if err == nil {
				t.Fatalf("no error; got %d tensors", len(ts))
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %q\nshould name the file and contain %q", err, tc.want)
			}
		})
	}
}
