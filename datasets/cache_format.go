package datasets

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
)

// The cache file, all integers little-endian:
//
//	magic    [8]byte  "CVRPAIRS"
//	version  uint32   cacheFormatVersion
//	digest   [32]byte SHA-256 of the key record
//	descLen  uint32, desc [descLen]byte   the key record as JSON, for people
//	n        uint64   number of pairs
//	width    uint32   bytes per id: 2 when every id fits in uint16, else 4
//	qTotal, rTotal    uint64   ids on each side
//	qLens, rLens      [n]uint32
//	qIDs, rIDs        [qTotal], [rTotal] ids of width bytes
//	crc      uint32   CRC-32C of every byte before it
//
// Ids are stored flat and streamed into one array per side that the rows
// slice, so a hit costs a read, a checksum and a widening copy, with no
// copy of the whole file in memory.

var cacheMagic = [8]byte{'C', 'V', 'R', 'P', 'A', 'I', 'R', 'S'}

const (
	cacheHeadLen = 8 + 4 + 32 + 4 // up to the description
	maxDescLen   = 1 << 20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// errCacheVersion marks a file written by another format version.
var errCacheVersion = errors.New("cache file has another format version")

// cacheHeader is what decodeCache learns besides the ids.
type cacheHeader struct {
	Version uint32
	Digest  [32]byte
	Desc    []byte
}

// encodeCache writes tp in the cache format.
func encodeCache(w io.Writer, digest [32]byte, desc []byte, tp *TokenizedPairs) error {
	if err := tp.validate(); err != nil {
		return err
	}
	crc := crc32.New(crcTable)
	cw := &cacheWriter{w: io.MultiWriter(w, crc)}
	width := idWidth(tp)
	if err := cw.head(digest, desc, tp.Len(), width, totalLen(tp.Query), totalLen(tp.Response)); err != nil {
		return err
	}
	for _, side := range [][][]int32{tp.Query, tp.Response} {
		for _, row := range side {
			if uint64(len(row)) > math.MaxUint32 {
				return fmt.Errorf("cache: a row of %d ids is too long", len(row))
			}
			cw.u32(uint32(len(row)))
		}
	}
	for _, side := range [][][]int32{tp.Query, tp.Response} {
		for _, row := range side {
			for _, id := range row {
				if width == 2 {
					cw.u16(uint16(id))
				} else {
					cw.u32(uint32(id))
				}
			}
		}
	}
	cw.flush()
	if cw.err != nil {
		return cw.err
	}
	_, err := w.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32()))
	return err
}

// head writes the file's header, up to the lengths: n pairs of ids width bytes wide, qTotal and rTotal
// ids on each side.
func (c *cacheWriter) head(digest [32]byte, desc []byte, n, width, qTotal, rTotal int) error {
	if len(desc) > maxDescLen {
		return fmt.Errorf("cache key description of %d bytes exceeds %d", len(desc), maxDescLen)
	}
	c.bytes(cacheMagic[:])
	c.u32(cacheFormatVersion)
	c.bytes(digest[:])
	c.u32(uint32(len(desc)))
	c.bytes(desc)
	c.u64(uint64(n))
	c.u32(uint32(width))
	c.u64(uint64(qTotal))
	c.u64(uint64(rTotal))
	return nil
}

// cacheWriter buffers small writes and keeps the first error.
type cacheWriter struct {
	w   io.Writer
	buf []byte
	err error
}

func (c *cacheWriter) bytes(b []byte) { c.buf = append(c.buf, b...); c.maybeFlush() }
func (c *cacheWriter) u16(v uint16) {
	c.buf = binary.LittleEndian.AppendUint16(c.buf, v)
	c.maybeFlush()
}
func (c *cacheWriter) u32(v uint32) {
	c.buf = binary.LittleEndian.AppendUint32(c.buf, v)
	c.maybeFlush()
}
func (c *cacheWriter) u64(v uint64) {
	c.buf = binary.LittleEndian.AppendUint64(c.buf, v)
	c.maybeFlush()
}

func (c *cacheWriter) maybeFlush() {
	if len(c.buf) >= 1<<16 {
		c.flush()
	}
}

func (c *cacheWriter) flush() {
	if c.err == nil && len(c.buf) > 0 {
		_, c.err = c.w.Write(c.buf)
	}
	c.buf = c.buf[:0]
}

// idWidth is 2 when every id fits in a uint16 (BERT's and RoBERTa's
// vocabularies do), else 4.
func idWidth(tp *TokenizedPairs) int {
	for _, side := range [][][]int32{tp.Query, tp.Response} {
		for _, row := range side {
			for _, id := range row {
				if id < 0 || id > math.MaxUint16 {
					return 4
				}
			}
		}
	}
	return 2
}

func totalLen(rows [][]int32) int {
	n := 0
	for _, r := range rows {
		n += len(r)
	}
	return n
}

// decodeCache reads a cache file of size bytes from r. Every count is
// checked against size before anything is allocated, so a corrupt or
// hostile file gives an error, never a panic or a huge allocation; the
// checksum is checked at the end, before anything is returned. With want
// set, a file of another key stops at its header.
func decodeCache(r io.Reader, size int64, want *[32]byte) (*TokenizedPairs, cacheHeader, error) {
	var h cacheHeader
	if size < cacheHeadLen+4 {
		return nil, h, fmt.Errorf("cache file of %d bytes is truncated", size)
	}
	br := bufio.NewReaderSize(r, int(min(size, 1<<20)))
	cr := &crcReader{r: br, crc: crc32.New(crcTable)}
	head := make([]byte, cacheHeadLen)
	if _, err := io.ReadFull(cr, head); err != nil {
		return nil, h, fmt.Errorf("cache file header: %w", err)
	}
	if !bytes.Equal(head[:8], cacheMagic[:]) {
		return nil, h, fmt.Errorf("cache file does not start with %q", cacheMagic[:])
	}
	if h.Version = binary.LittleEndian.Uint32(head[8:]); h.Version != cacheFormatVersion {
		return nil, h, fmt.Errorf("%w: %d, want %d", errCacheVersion, h.Version, cacheFormatVersion)
	}
	copy(h.Digest[:], head[12:44])
	if want != nil && h.Digest != *want {
		return nil, h, fmt.Errorf("cache file was built for key %x, want %x", h.Digest[:12], want[:12])
	}
	left := uint64(size) - cacheHeadLen - 4 // body bytes still to read
	descLen := uint64(binary.LittleEndian.Uint32(head[44:]))
	if descLen+28 > left {
		return nil, h, fmt.Errorf("cache file truncated: a %d-byte description and counts in %d bytes", descLen, left)
	}
	h.Desc = make([]byte, descLen)
	counts := make([]byte, 28)
	if _, err := io.ReadFull(cr, h.Desc); err != nil {
		return nil, h, fmt.Errorf("cache file description: %w", err)
	}
	if _, err := io.ReadFull(cr, counts); err != nil {
		return nil, h, fmt.Errorf("cache file counts: %w", err)
	}
	left -= descLen + 28
	n := binary.LittleEndian.Uint64(counts)
	width := uint64(binary.LittleEndian.Uint32(counts[8:]))
	qTotal, rTotal := binary.LittleEndian.Uint64(counts[12:]), binary.LittleEndian.Uint64(counts[20:])
	if width != 2 && width != 4 {
		return nil, h, fmt.Errorf("cache file: id width %d, want 2 or 4", width)
	}
	// n*8 + (qTotal+rTotal)*width must be exactly what is left; each term
	// is bounded first so that nothing overflows.
	if n > left/8 || qTotal > left/width || rTotal > left/width || n*8+(qTotal+rTotal)*width != left {
		return nil, h, fmt.Errorf("cache file: %d pairs of %d+%d ids of %d bytes do not fill its %d bytes", n, qTotal, rTotal, width, left)
	}
	buf := make([]byte, 1<<16)
	qLens, rLens := make([]int32, n), make([]int32, n)
	if err := readInt32s(cr, qLens, 4, buf); err != nil {
		return nil, h, fmt.Errorf("cache file query lengths: %w", err)
	}
	if err := readInt32s(cr, rLens, 4, buf); err != nil {
		return nil, h, fmt.Errorf("cache file response lengths: %w", err)
	}
	tp := &TokenizedPairs{}
	var err error
	if tp.Query, err = readRows(cr, qLens, qTotal, int(width), buf); err != nil {
		return nil, h, fmt.Errorf("cache file queries: %w", err)
	}
	if tp.Response, err = readRows(cr, rLens, rTotal, int(width), buf); err != nil {
		return nil, h, fmt.Errorf("cache file responses: %w", err)
	}
	trailer := make([]byte, 4)
	if _, err := io.ReadFull(br, trailer); err != nil {
		return nil, h, fmt.Errorf("cache file checksum: %w", err)
	}
	if got, want := cr.crc.Sum32(), binary.LittleEndian.Uint32(trailer); got != want {
		return nil, h, fmt.Errorf("cache file checksum %08x, want %08x: corrupt", got, want)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return nil, h, fmt.Errorf("cache file is longer than its %d bytes", size)
	}
	return tp, h, nil
}

// readRows reads total ids into one array and slices it by lens, each row
// capped so that appending to it cannot clobber the next.
func readRows(r io.Reader, lens []int32, total uint64, width int, buf []byte) ([][]int32, error) {
	sum := uint64(0)
	for i, l := range lens {
		if l < 0 {
			return nil, fmt.Errorf("row %d has length %d", i, l)
		}
		sum += uint64(l)
	}
	if sum != total {
		return nil, fmt.Errorf("rows hold %d ids but %d are stored", sum, total)
	}
	flat := make([]int32, total)
	if err := readInt32s(r, flat, width, buf); err != nil {
		return nil, err
	}
	rows := make([][]int32, len(lens))
	off := 0
	for i, l := range lens {
		rows[i] = flat[off : off+int(l) : off+int(l)]
		off += int(l)
	}
	return rows, nil
}

// readInt32s fills dst with little-endian values of width 2 (unsigned)
// or 4 bytes, reading through buf.
func readInt32s(r io.Reader, dst []int32, width int, buf []byte) error {
	for len(dst) > 0 {
		k := min(len(dst), len(buf)/width)
		b := buf[:k*width]
		if _, err := io.ReadFull(r, b); err != nil {
			return err
		}
		if width == 2 {
			for i := range k {
				dst[i] = int32(binary.LittleEndian.Uint16(b[2*i:]))
			}
		} else {
			for i := range k {
				dst[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
			}
		}
		dst = dst[k:]
	}
	return nil
}

// crcReader checksums what is read through it.
type crcReader struct {
	r   io.Reader
	crc hash.Hash32
}

func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.crc.Write(p[:n])
	return n, err
}
