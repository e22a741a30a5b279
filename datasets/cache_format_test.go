package datasets

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"reflect"
	"testing"
)

func sampleTokenized() *TokenizedPairs {
	return &TokenizedPairs{
		Query:    [][]int32{{101, 7592, 102}, {101, 102}, {101, 1, 2, 3, 65535, 102}},
		Response: [][]int32{{101, 2088, 999, 102}, {}, {101, 0, 102}},
	}
}

func encodeToBytes(t testing.TB, digest [32]byte, desc []byte, tp *TokenizedPairs) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := encodeCache(&b, digest, desc, tp); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestCacheFormatRoundTrip(t *testing.T) {
	digest := [32]byte{1, 2, 3, 31: 9}
	tests := []struct {
		name  string
		tp    *TokenizedPairs
		width uint32
	}{
		{"uint16 ids", sampleTokenized(), 2},
		{"ids beyond uint16", &TokenizedPairs{Query: [][]int32{{0, 65536}}, Response: [][]int32{{1 << 30}}}, 4},
		{"negative id", &TokenizedPairs{Query: [][]int32{{-1}}, Response: [][]int32{{5}}}, 4},
		{"empty", &TokenizedPairs{Query: [][]int32{}, Response: [][]int32{}}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := encodeToBytes(t, digest, []byte(`{"k":1}`), tc.tp)
			got, h, err := decodeBytes(data)
			if err != nil {
				t.Fatal(err)
			}
			if h.Digest != digest || string(h.Desc) != `{"k":1}` || h.Version != cacheFormatVersion {
				t.Errorf("header %+v", h)
			}
			if w := binary.LittleEndian.Uint32(data[cacheHeadLen+7+8:]); w != tc.width {
				t.Errorf("id width %d, want %d", w, tc.width)
			}
			if !equalRows(got.Query, tc.tp.Query) || !equalRows(got.Response, tc.tp.Response) {
				t.Errorf("decoded %v / %v, want %v / %v", got.Query, got.Response, tc.tp.Query, tc.tp.Response)
			}
		})
	}
}

// equalRows compares rows, an empty row equal to a nil one.
func equalRows(a, b [][]int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) || (len(a[i]) > 0 && !reflect.DeepEqual(a[i], b[i])) {
			return false
		}
	}
	return true
}

func TestCacheRowsDoNotAlias(t *testing.T) {
	tp, _, err := decodeBytes(encodeToBytes(t, [32]byte{}, nil, sampleTokenized()))
	if err != nil {
		t.Fatal(err)
	}
	_ = append(tp.Query[0], 42)
	if tp.Query[1][0] != 101 {
		t.Fatal("appending to a decoded row overwrote the next row")
	}
}

func TestCacheEncodeRejectsUnevenSides(t *testing.T) {
	var b bytes.Buffer
	err := encodeCache(&b, [32]byte{}, nil, &TokenizedPairs{Query: [][]int32{{1}}})
	if err == nil {
		t.Fatal("one query, no response: no error")
	}
}

// Every proper prefix and every single-bit flip of a valid file must be
// rejected: the checksum covers all of it.
func TestCacheDecodeRejectsDamage(t *testing.T) {
	data := encodeToBytes(t, [32]byte{7}, []byte("key"), sampleTokenized())
	for n := range len(data) {
		if _, _, err := decodeBytes(data[:n]); err == nil {
			t.Fatalf("prefix of %d of %d bytes decoded", n, len(data))
		}
	}
	for i := range data {
		for bit := range 8 {
			d := bytes.Clone(data)
			d[i] ^= 1 << bit
			if _, _, err := decodeBytes(d); err == nil {
				t.Fatalf("flip of bit %d in byte %d decoded", bit, i)
			}
		}
	}
	if _, _, err := decodeBytes(append(bytes.Clone(data), 0)); err == nil {
		t.Fatal("a trailing byte decoded")
	}
}

func TestCacheDecodeVersion(t *testing.T) {
	data := encodeToBytes(t, [32]byte{}, nil, sampleTokenized())
	binary.LittleEndian.PutUint32(data[8:], cacheFormatVersion+1)
	fixCRC(data)
	if _, _, err := decodeBytes(data); !errors.Is(err, errCacheVersion) {
		t.Fatalf("another version: %v, want errCacheVersion", err)
	}
}

// Counts that disagree with the bytes present must fail even under a
// valid checksum.
func TestCacheDecodeInconsistentCounts(t *testing.T) {
	base := encodeToBytes(t, [32]byte{}, nil, sampleTokenized())
	nOff := cacheHeadLen // descLen is 0
	tests := []struct {
		name string
		edit func(d []byte)
	}{
		{"huge pair count", func(d []byte) { binary.LittleEndian.PutUint64(d[nOff:], 1<<62) }},
		{"pair count off by one", func(d []byte) { binary.LittleEndian.PutUint64(d[nOff:], 2) }},
		{"width 3", func(d []byte) { binary.LittleEndian.PutUint32(d[nOff+8:], 3) }},
		{"huge query total", func(d []byte) { binary.LittleEndian.PutUint64(d[nOff+12:], 1<<63) }},
		{"row longer than ids", func(d []byte) { binary.LittleEndian.PutUint32(d[nOff+28:], 1000) }},
		{"rows shorter than ids", func(d []byte) { binary.LittleEndian.PutUint32(d[nOff+28:], 2) }},
		{"huge description", func(d []byte) { binary.LittleEndian.PutUint32(d[44:], 1<<31) }},
	}
	for _, tc := range tests {
		d := bytes.Clone(base)
		tc.edit(d)
		fixCRC(d)
		if tp, _, err := decodeBytes(d); err == nil {
			t.Errorf("%s: decoded %v", tc.name, tp)
		}
	}
}

func decodeBytes(data []byte) (*TokenizedPairs, cacheHeader, error) {
	return decodeCache(bytes.NewReader(data), int64(len(data)), nil)
}

// fixCRC rewrites the trailing checksum to match the bytes before it.
func fixCRC(d []byte) {
	if len(d) >= 4 {
		binary.LittleEndian.PutUint32(d[len(d)-4:], crc32.Checksum(d[:len(d)-4], crcTable))
	}
}

// FuzzDecodeCache feeds damaged files to the decoder, both as they are
// (stopped by the checksum) and with the checksum repaired (reaching the
// parser). Nothing may panic, and what decodes must be self-consistent.
func FuzzDecodeCache(f *testing.F) {
	f.Add(encodeToBytes(f, [32]byte{1}, []byte(`{"v":"dse"}`), sampleTokenized()))
	f.Add(encodeToBytes(f, [32]byte{}, nil, &TokenizedPairs{Query: [][]int32{{1 << 20}}, Response: [][]int32{{-5, 3}}}))
	f.Add(encodeToBytes(f, [32]byte{}, nil, &TokenizedPairs{Query: [][]int32{}, Response: [][]int32{}}))
	f.Add([]byte("CVRPAIRS"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		fixed := bytes.Clone(data)
		fixCRC(fixed)
		for _, d := range [][]byte{data, fixed} {
			tp, h, err := decodeBytes(d)
			if err != nil {
				continue
			}
			if len(tp.Query) != len(tp.Response) {
				t.Fatalf("decoded %d queries and %d responses", len(tp.Query), len(tp.Response))
			}
			again, _, err := decodeBytes(encodeToBytes(t, h.Digest, h.Desc, tp))
			if err != nil {
				t.Fatalf("re-encoded file does not decode: %v", err)
			}
			if !equalRows(again.Query, tp.Query) || !equalRows(again.Response, tp.Response) {
				t.Fatal("re-encoding changed the ids")
			}
		}
	})
}
