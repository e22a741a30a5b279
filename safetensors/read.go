package safetensors

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// File is a whole safetensors file held in memory.
type File struct {
	// Metadata is the __metadata__ map, nil when the file has none.
	Metadata map[string]string
	// Tensors are sorted by name.
	Tensors []Tensor
	// MetadataLast records that __metadata__ came after the tensor entries in
	// the header (some writers put it there); Encode keeps it there so that
	// a read file re-encodes byte for byte.
	MetadataLast bool
}

// Lookup returns the tensor called name.
func (f *File) Lookup(name string) (Tensor, bool) {
	i, ok := slices.BinarySearchFunc(f.Tensors, name, func(t Tensor, n string) int { return strings.Compare(t.Name, n) })
	if !ok {
		return Tensor{}, false
	}
	return f.Tensors[i], true
}

// ReadFile reads and validates the safetensors file at path.
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	f, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	return f, nil
}

// Parse validates a whole file held in b. The tensors' Data slices share b's
// memory rather than copying it.
func Parse(b []byte) (*File, error) {
	f, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	return f, nil
}

func parse(b []byte) (*File, error) {
	n, err := headerLen(b, int64(len(b)))
	if err != nil {
		return nil, err
	}
	data := b[8+n:]
	h, err := parseHeader(b[8:8+n], int64(len(data)))
	if err != nil {
		return nil, err
	}
	f := &File{Metadata: h.meta, MetadataLast: h.metaLast, Tensors: make([]Tensor, len(h.infos))}
	for i, info := range h.infos {
		f.Tensors[i] = Tensor{Name: info.Name, DType: info.DType, Shape: info.Shape,
			Data: data[info.Begin:info.End:info.End]}
	}
	return f, nil
}

// headerLen decodes and checks the length prefix at the start of prefix, in a
// file of fileSize bytes.
func headerLen(prefix []byte, fileSize int64) (int64, error) {
	if len(prefix) < 8 {
		return 0, fmt.Errorf("%w: %d bytes, shorter than the 8-byte header length", ErrTruncated, len(prefix))
	}
	n := binary.LittleEndian.Uint64(prefix)
	if n > MaxHeaderSize {
		return 0, fmt.Errorf("%w: header length %d exceeds the limit of %d bytes", ErrHeaderTooLarge, n, MaxHeaderSize)
	}
	if int64(n) > fileSize-8 {
		return 0, fmt.Errorf("%w: header length %d runs past the end of the file (%d bytes after the length)",
			ErrTruncated, n, fileSize-8)
	}
	return int64(n), nil
}

// ReadHeader reads and validates only the header of the file at path, for
// listing a checkpoint without loading its data.
func ReadHeader(path string) (meta map[string]string, infos []TensorInfo, err error) {
	h, err := readHeader(path)
	if err != nil {
		return nil, nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	return h.meta, h.infos, nil
}

func readHeader(path string) (*header, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var prefix [8]byte
	k, err := io.ReadFull(f, prefix[:])
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, err
	}
	n, err := headerLen(prefix[:k], st.Size())
	if err != nil {
		return nil, err
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return nil, fmt.Errorf("%w: reading the %d-byte header: %v", ErrTruncated, n, err)
	}
	return parseHeader(hdr, st.Size()-8-n)
}
