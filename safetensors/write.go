package safetensors

import (
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Encode writes a safetensors file holding tensors, with __metadata__ first
// when meta is not nil. Tensors may come in any order: the header lists them
// by name and the data follows in the same order.
func Encode(w io.Writer, meta map[string]string, tensors []Tensor) error {
	if err := encode(w, meta, tensors, false); err != nil {
		return fmt.Errorf("safetensors: encode: %w", err)
	}
	return nil
}

// Encode writes f, keeping its metadata where the file it was read from had
// it, so that reading then encoding a file our writer made gives the same
// bytes.
func (f *File) Encode(w io.Writer) error {
	if err := encode(w, f.Metadata, f.Tensors, f.MetadataLast); err != nil {
		return fmt.Errorf("safetensors: encode: %w", err)
	}
	return nil
}

func encode(w io.Writer, meta map[string]string, tensors []Tensor, metaLast bool) error {
	order, err := sortedChecked(tensors)
	if err != nil {
		return err
	}
	hdr, err := encodeHeader(meta, order, metaLast)
	if err != nil {
		return err
	}
	var prefix [8]byte
	binary.LittleEndian.PutUint64(prefix[:], uint64(len(hdr)))
	if _, err := w.Write(prefix[:]); err != nil {
		return err
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	for _, t := range order {
		if _, err := w.Write(t.Data); err != nil {
			return fmt.Errorf("tensor %q: %w", t.Name, err)
		}
	}
	return nil
}

// sortedChecked returns the tensors in name order after checking that each
// is well formed and that no name repeats.
func sortedChecked(tensors []Tensor) ([]Tensor, error) {
	order := slices.Clone(tensors)
	slices.SortStableFunc(order, func(a, b Tensor) int { return strings.Compare(a.Name, b.Name) })
	for i, t := range order {
		if i > 0 && order[i-1].Name == t.Name {
			return nil, fmt.Errorf("%w: tensor %q given twice", ErrDuplicate, t.Name)
		}
		if t.Name == metadataKey {
			return nil, fmt.Errorf("%w: a tensor may not be called %s", ErrHeader, metadataKey)
		}
		if !utf8.ValidString(t.Name) {
			return nil, fmt.Errorf("%w: tensor name %q is not valid UTF-8", ErrHeader, t.Name)
		}
		n, err := byteSize(t.DType, t.Shape)
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		if n != int64(len(t.Data)) {
			return nil, fmt.Errorf("tensor %q: %w: %d bytes, but shape %v of %s needs %d",
				t.Name, ErrData, len(t.Data), t.Shape, t.DType, n)
		}
	}
	return order, nil
}

// encodeHeader builds the compact JSON header padded with spaces to a
// multiple of 8, so that the data section starts 8-byte aligned.
func encodeHeader(meta map[string]string, order []Tensor, metaLast bool) ([]byte, error) {
	b := []byte{'{'}
	writeMeta := func() error {
		b = appendJSONString(b, metadataKey)
		b = append(b, ':', '{')
		for i, k := range slices.Sorted(maps.Keys(meta)) {
			v := meta[k]
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				return fmt.Errorf("%w: %s entry %q: %q is not valid UTF-8", ErrHeader, metadataKey, k, v)
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSONString(b, v)
		}
		b = append(b, '}')
		return nil
	}
	if meta != nil && !metaLast {
		if err := writeMeta(); err != nil {
			return nil, err
		}
	}
	var offset int64
	for _, t := range order {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = appendJSONString(b, t.Name)
		b = append(b, `:{"dtype":`...)
		b = appendJSONString(b, string(t.DType))
		b = append(b, `,"shape":[`...)
		for i, d := range t.Shape {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, d, 10)
		}
		b = append(b, `],"data_offsets":[`...)
		b = strconv.AppendInt(b, offset, 10)
		offset += int64(len(t.Data))
		b = append(b, ',')
		b = strconv.AppendInt(b, offset, 10)
		b = append(b, ']', '}')
	}
	if meta != nil && metaLast {
		if len(b) > 1 {
			b = append(b, ',')
		}
		if err := writeMeta(); err != nil {
			return nil, err
		}
	}
	b = append(b, '}')
	for len(b)%8 != 0 {
		b = append(b, ' ')
	}
	if len(b) > MaxHeaderSize {
		return nil, fmt.Errorf("%w: %d bytes, over the %d-byte limit readers enforce", ErrHeaderTooLarge, len(b), MaxHeaderSize)
	}
	return b, nil
}

// appendJSONString quotes s the way Python's json.dumps does by default
// (ensure_ascii): printable ASCII as is, everything else as \uXXXX, so that
// headers are pure ASCII and match the fixture files byte for byte.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	u := func(b []byte, r rune) []byte {
		return append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
	}
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '\r':
			b = append(b, '\\', 'r')
		case r == '\t':
			b = append(b, '\\', 't')
		case r == '\b':
			b = append(b, '\\', 'b')
		case r == '\f':
			b = append(b, '\\', 'f')
		case r >= 0x20 && r < 0x7f:
			b = append(b, byte(r))
		case r > 0xffff:
			r -= 0x10000
			b = u(b, 0xd800+(r>>10))
			b = u(b, 0xdc00+(r&0x3ff))
		default:
			b = u(b, r)
		}
	}
	return append(b, '"')
}
