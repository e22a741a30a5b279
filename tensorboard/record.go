package tensorboard

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// castagnoli is CRC-32C's table (RFC 3720 §B.4), the checksum of TFRecord framing.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskDelta is what TensorFlow adds to a rotated CRC (crc32c.h's kMaskDelta).
const maskDelta = 0xa282ead8

// mask is TensorFlow's masked CRC: a CRC stored beside data that itself holds CRCs is rotated and offset,
// so that the CRC of a string of CRCs is not degenerate (crc32c.h, Mask).
func mask(crc uint32) uint32 { return (crc>>15 | crc<<17) + maskDelta }

// unmask inverts mask (crc32c.h, Unmask).
func unmask(m uint32) uint32 {
	r := m - maskDelta
	return r>>17 | r<<15
}

// maskedCRC is the masked CRC-32C of b, as a TFRecord stores it.
func maskedCRC(b []byte) uint32 { return mask(crc32.Checksum(b, castagnoli)) }

// headerLen and footerLen are the framing around a record's data: its length and the length's CRC before,
// the data's CRC after.
const (
	headerLen = 8 + 4
	footerLen = 4
)

// MaxRecordLen bounds the data of one record the reader accepts (an event of scalars is some hundreds of
// bytes): a damaged or hostile length field is reported, never allocated.
const MaxRecordLen = 64 << 20

// appendRecord appends data framed as a TFRecord to dst.
func appendRecord(dst, data []byte) []byte {
	var h [headerLen]byte
	binary.LittleEndian.PutUint64(h[:8], uint64(len(data)))
	binary.LittleEndian.PutUint32(h[8:], maskedCRC(h[:8]))
	dst = append(dst, h[:]...)
	dst = append(dst, data...)
	return binary.LittleEndian.AppendUint32(dst, maskedCRC(data))
}

// DamageError says where an event file stops being readable and why.
type DamageError struct {
	File    string // the file's name, as the reader was given it
	Offset  int64  // the byte offset of the record where the damage is
	Problem string
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("%s: record at byte %d: %s", e.File, e.Offset, e.Problem)
}

// recordReader reads TFRecord records one at a time into a buffer it reuses.
type recordReader struct {
	r    io.Reader
	name string
	off  int64 // the offset of the next record
	size int64 // the stream's length in bytes, -1 when unknown
	buf  []byte
}

// next returns the next record's data, valid until the following call; io.EOF at the end of the stream
// on a record boundary, a *DamageError for a torn or corrupted record.
func (r *recordReader) next() ([]byte, error) {
	damage := func(format string, a ...any) error {
		return &DamageError{File: r.name, Offset: r.off, Problem: fmt.Sprintf(format, a...)}
	}
	var h [headerLen]byte
	n, err := io.ReadFull(r.r, h[:])
	switch {
	case err == io.EOF:
		return nil, io.EOF
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, damage("truncated: %d of the header's %d bytes", n, headerLen)
	case err != nil:
		return nil, damage("%v", err)
	}
	if got, want := binary.LittleEndian.Uint32(h[8:]), maskedCRC(h[:8]); got != want {
		return nil, damage("length CRC %#08x, want %#08x", got, want)
	}
	length := binary.LittleEndian.Uint64(h[:8])
	if length > MaxRecordLen {
		return nil, damage("length %d over the %d bytes a record may hold", length, MaxRecordLen)
	}
	if r.size >= 0 && r.off+headerLen+int64(length)+footerLen > r.size {
		return nil, damage("truncated: length %d runs past the end of the file (%d bytes)", length, r.size)
	}
	need := int(length) + footerLen
	if cap(r.buf) < need {
		r.buf = make([]byte, need)
	}
	b := r.buf[:need]
	if n, err := io.ReadFull(r.r, b); err != nil {
		if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, damage("truncated: %d of the record's %d bytes after its header", n, need)
		}
		return nil, damage("%v", err)
	}
	data := b[:length]
	if got, want := binary.LittleEndian.Uint32(b[length:]), maskedCRC(data); got != want {
		return nil, damage("data CRC %#08x, want %#08x", got, want)
	}
	r.off += headerLen + int64(need)
	return data, nil
}
