package buckets

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"convrep/internal/atomicfile"
)

// The cache files hold one array each (the pool's embeddings, float32, or the negatives, int32): a header
// (magic, element kind, the 32-byte digest of what the array was computed from, three dimensions), the
// little-endian values and a CRC-32 of them. A file of another digest, kind or size, or with a bad checksum,
// is refused, and the caller computes the array afresh.

var magic = [8]byte{'c', 'r', 'm', 'g', 't', '1', '\n', 0}

const (
	kindFloat32 byte = 'f'
	kindInt32   byte = 'i'
)

// Key is the SHA-256 digest of everything a cached array depends on.
type Key [32]byte

// ErrStale says a cache file exists but was computed from something else (or is damaged).
var ErrStale = errors.New("cache file does not match")

// SaveFloat32s writes data (dims[0]×dims[1]×dims[2] values) under key, atomically.
func SaveFloat32s(path string, key Key, dims [3]int, data []float32) error {
	return save(path, kindFloat32, key, dims, len(data), func(i int) uint32 { return math.Float32bits(data[i]) })
}

// SaveInt32s is SaveFloat32s for int32 values.
func SaveInt32s(path string, key Key, dims [3]int, data []int32) error {
	return save(path, kindInt32, key, dims, len(data), func(i int) uint32 { return uint32(data[i]) })
}

// LoadFloat32s reads an array SaveFloat32s wrote under key; a missing file gives an error wrapping
// fs.ErrNotExist, one of another key or a damaged one an error wrapping ErrStale.
func LoadFloat32s(path string, key Key) ([3]int, []float32, error) {
	var out []float32
	dims, err := load(path, kindFloat32, key, func(n int) { out = make([]float32, n) }, func(i int, v uint32) { out[i] = math.Float32frombits(v) })
	return dims, out, err
}

// LoadInt32s is LoadFloat32s for int32 values.
func LoadInt32s(path string, key Key) ([3]int, []int32, error) {
	var out []int32
	dims, err := load(path, kindInt32, key, func(n int) { out = make([]int32, n) }, func(i int, v uint32) { out[i] = int32(v) })
	return dims, out, err
}

func save(path string, kind byte, key Key, dims [3]int, n int, at func(int) uint32) error {
	if dims[0]*dims[1]*dims[2] != n {
		return fmt.Errorf("cache %s: dimensions %v do not hold %d values", path, dims, n)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("cache %s: %w", path, err)
	}
	err := atomicfile.Write(path, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		hdr := header(kind, key, dims)
		if _, err := bw.Write(hdr); err != nil {
			return err
		}
		crc := crc32.NewIEEE()
		buf := make([]byte, 0, 1<<16)
		for i := 0; i < n; i++ {
			buf = binary.LittleEndian.AppendUint32(buf, at(i))
			if len(buf) == cap(buf) || i == n-1 {
				crc.Write(buf)
				if _, err := bw.Write(buf); err != nil {
					return err
				}
				buf = buf[:0]
			}
		}
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], crc.Sum32())
		if _, err := bw.Write(b[:]); err != nil {
			return err
		}
		return bw.Flush()
	})
	if err != nil {
		return fmt.Errorf("cache %s: write: %w", path, err)
	}
	return nil
}

func header(kind byte, key Key, dims [3]int) []byte {
	h := append([]byte{}, magic[:]...)
	h = append(h, kind)
	h = append(h, key[:]...)
	for _, d := range dims {
		h = binary.LittleEndian.AppendUint64(h, uint64(d))
	}
	return h
}

func load(path string, kind byte, key Key, alloc func(int), set func(int, uint32)) ([3]int, error) {
	var dims [3]int
	f, err := os.Open(path)
	if err != nil {
		return dims, fmt.Errorf("cache %s: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return dims, fmt.Errorf("cache %s: %w", path, err)
	}
	br := bufio.NewReaderSize(f, 1<<20)
	hdr := make([]byte, len(magic)+1+len(key)+24)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return dims, fmt.Errorf("cache %s: header: %w (%w)", path, ErrStale, err)
	}
	for i := range dims {
		dims[i] = int(binary.LittleEndian.Uint64(hdr[len(hdr)-24+8*i:]))
	}
	if !bytes.Equal(hdr, header(kind, key, dims)) {
		return dims, fmt.Errorf("cache %s: %w: other format, kind or digest", path, ErrStale)
	}
	n := dims[0] * dims[1] * dims[2]
	if dims[0] < 0 || dims[1] < 0 || dims[2] < 0 || int64(len(hdr))+4*int64(n)+4 != info.Size() {
		return dims, fmt.Errorf("cache %s: %w: %d bytes do not hold %v values", path, ErrStale, info.Size(), dims)
	}
	alloc(n)
	crc := crc32.NewIEEE()
	buf := make([]byte, 1<<16)
	for i := 0; i < n; {
		chunk := buf[:4*min(n-i, len(buf)/4)]
		if _, err := io.ReadFull(br, chunk); err != nil {
			return dims, fmt.Errorf("cache %s: value %d: %w", path, i, err)
		}
		crc.Write(chunk)
		for j := 0; j < len(chunk); j, i = j+4, i+1 {
			set(i, binary.LittleEndian.Uint32(chunk[j:]))
		}
	}
	var b [4]byte
	if _, err := io.ReadFull(br, b[:]); err != nil || binary.LittleEndian.Uint32(b[:]) != crc.Sum32() {
		return dims, fmt.Errorf("cache %s: %w: checksum", path, ErrStale)
	}
	return dims, nil
}

// missing reports whether err is a missing cache file (rather than a stale or unreadable one).
func missing(err error) bool { return errors.Is(err, fs.ErrNotExist) }
