package torchbin

import (
	"archive/zip"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/sugarme/gotch/pickle"
)

// maxDeflateRatio is the most DEFLATE can expand its input (a bit over
// 1032:1); a record claiming more is lying about its size.
const maxDeflateRatio = 1033

// maxRecords bounds the records of an archive: torch.save writes one per storage and three more, so this is
// far above a model of 60,000 tensors, and keeps a crafted directory of millions of entries from costing
// time and memory out of proportion to the weights.
const maxRecords = 1 << 16

// maxInflation bounds what compressed tensor records may inflate to, all together, as a multiple of the
// archive's size: float weights deflate by a few percent, so an honest archive is far below it.
const maxInflation = 8

// readZip reads a torch >= 1.6 checkpoint: a zip archive whose records all
// sit in one folder <stem>/, holding data.pkl and data/<key> per storage.
// It returns the unpickled root object and the storages the pickle named.
func readZip(ra io.ReaderAt, size int64) (any, map[pickle.Storage]storageRef, error) {
	zr, err := zip.NewReader(ra, size)
	if err != nil {
		return nil, nil, fmt.Errorf("zip archive is truncated or corrupt: %w", err)
	}
	if len(zr.File) == 0 {
		return nil, nil, errors.New("zip archive has no records")
	}
	if len(zr.File) > maxRecords {
		return nil, nil, fmt.Errorf("zip archive has %d records, more than the %d a checkpoint may have", len(zr.File), maxRecords)
	}
	if err := checkDisjoint(zr.File); err != nil {
		return nil, nil, err
	}
	records := make(map[string]*zip.File, len(zr.File))
	for _, f := range zr.File {
		if _, dup := records[f.Name]; dup {
			return nil, nil, fmt.Errorf("zip archive holds record %q twice", f.Name)
		}
		records[f.Name] = f
	}
	// Like torch, take the folder from the first record.
	stem, _, ok := strings.Cut(zr.File[0].Name, "/")
	if !ok {
		return nil, nil, fmt.Errorf("first zip record %q is not inside a folder, as torch.save writes", zr.File[0].Name)
	}
	prefix := stem + "/"
	if _, ok := records[prefix+"constants.pkl"]; ok {
		return nil, nil, errors.New("this is a TorchScript archive, not a state dict")
	}
	if err := checkByteOrder(records[prefix+"byteorder"], size); err != nil {
		return nil, nil, err
	}
	pklName := prefix + "data.pkl"
	pkl, ok := records[pklName]
	if !ok {
		return nil, nil, fmt.Errorf("zip archive has no record %s", pklName)
	}
	raw, err := readRecord(pkl, size, maxPickle)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", pklName, err)
	}
	b, err := readPickle(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", pklName, err)
	}

	type loaded struct {
		ref storageRef
		st  pickle.Storage
	}
	byKey := make(map[string]loaded)
	var inflated int64 // bytes the compressed storage records inflate to
	refs := make(map[pickle.Storage]storageRef)
	persistentLoad := func(id any) (any, error) {
		ref, _, err := parseStorageID(id, 5)
		if err != nil {
			return nil, err
		}
		if l, ok := byKey[ref.key]; ok {
			if !l.ref.sameAs(ref) {
				return nil, fmt.Errorf("storage %q is named as %d x %s and as %d x %s",
					ref.key, l.ref.numel, l.ref.dtype, ref.numel, ref.dtype)
			}
			return l.st, nil
		}
		st, err := loadZipStorage(records, prefix+"data/"+ref.key, ref, size, &inflated)
		if err != nil {
			return nil, err
		}
		byKey[ref.key] = loaded{ref, st}
		refs[st] = ref
		return st, nil
	}
	root, err := unpickle(b, persistentLoad)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", pklName, err)
	}
	return root, refs, nil
}

// loadZipStorage has gotch read one storage record after checking that the
// record holds exactly the bytes the pickle's element count needs.
func loadZipStorage(records map[string]*zip.File, name string, ref storageRef, archiveSize int64, inflated *int64) (pickle.Storage, error) {
	f, ok := records[name]
	if !ok {
		return nil, fmt.Errorf("storage %q: record %s is missing from the zip archive", ref.key, name)
	}
	want, err := ref.nbytes()
	if err != nil {
		return nil, err
	}
	if err := checkRecordSize(f, archiveSize); err != nil {
		return nil, fmt.Errorf("storage %q: %w", ref.key, err)
	}
	if f.Method != zip.Store {
		// torch.save stores tensor data uncompressed; a re-zipped checkpoint may deflate it, but the
		// tensors it inflates to must stay in proportion to the file (weights compress by little).
		*inflated += int64(f.UncompressedSize64)
		if *inflated > maxInflation*archiveSize {
			return nil, fmt.Errorf("storage %q: the compressed tensor records inflate to more than %d times the %d-byte archive",
				ref.key, maxInflation, archiveSize)
		}
	}
	if f.UncompressedSize64 != uint64(want) {
		return nil, fmt.Errorf("storage %q: record %s holds %d bytes, but %d elements of %s need %d",
			ref.key, name, f.UncompressedSize64, ref.numel, ref.dtype, want)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("storage %q: opening record %s: %w", ref.key, name, err)
	}
	defer rc.Close()
	st := ref.class.New(int(ref.numel), "cpu")
	if err := fill(st, rc, ref.numel); err != nil {
		return nil, fmt.Errorf("storage %q: reading record %s: %w", ref.key, name, err)
	}
	if err := checkEnd(rc); err != nil {
		return nil, fmt.Errorf("storage %q: record %s: %w", ref.key, name, err)
	}
	return st, nil
}

// readRecord reads a whole record of at most max bytes.
func readRecord(f *zip.File, archiveSize, max int64) ([]byte, error) {
	if err := checkRecordSize(f, archiveSize); err != nil {
		return nil, err
	}
	if f.UncompressedSize64 > uint64(max) {
		return nil, fmt.Errorf("record of %d bytes exceeds the limit of %d", f.UncompressedSize64, max)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b := make([]byte, f.UncompressedSize64)
	if _, err := io.ReadFull(rc, b); err != nil {
		return nil, fmt.Errorf("reading %d bytes: %w", len(b), err)
	}
	return b, checkEnd(rc)
}

// checkRecordSize refuses records whose declared size cannot be true, before
// anything is allocated for them.
func checkRecordSize(f *zip.File, archiveSize int64) error {
	if f.CompressedSize64 > uint64(archiveSize) {
		return fmt.Errorf("record %s claims %d compressed bytes in a %d-byte archive", f.Name, f.CompressedSize64, archiveSize)
	}
	switch f.Method {
	case zip.Store:
		if f.CompressedSize64 != f.UncompressedSize64 {
			return fmt.Errorf("stored record %s claims %d bytes but occupies %d", f.Name, f.UncompressedSize64, f.CompressedSize64)
		}
	case zip.Deflate:
		if f.UncompressedSize64/maxDeflateRatio > f.CompressedSize64 {
			return fmt.Errorf("record %s claims %d bytes from %d compressed, more than DEFLATE can expand",
				f.Name, f.UncompressedSize64, f.CompressedSize64)
		}
	default:
		return fmt.Errorf("record %s uses unsupported compression method %d", f.Name, f.Method)
	}
	return nil
}

// checkEnd reads to the end of a record, where archive/zip verifies its
// length and CRC-32.
func checkEnd(rc io.Reader) error {
	var one [1]byte
	for range 100 {
		n, err := rc.Read(one[:])
		switch {
		case n > 0:
			return errors.New("record is longer than its declared size")
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		}
	}
	return errors.New("record reader makes no progress at its end")
}

// checkByteOrder accepts a missing byteorder record (torch < 2.1 wrote only
// little-endian) or one saying "little".
func checkByteOrder(f *zip.File, archiveSize int64) error {
	if f == nil {
		return nil
	}
	b, err := readRecord(f, archiveSize, 16)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Name, err)
	}
	if string(b) != "little" {
		return fmt.Errorf("%s says %q: only little-endian checkpoints are supported", f.Name, b)
	}
	return nil
}

// checkDisjoint refuses an archive whose records share bytes: each record's data must lie in its own span of
// the file, as any writer leaves them. Otherwise one stored blob named by many directory entries passes every
// per-record check while the tensors it becomes add up to many times the file.
func checkDisjoint(files []*zip.File) error {
	type span struct {
		start, end int64
		name       string
	}
	spans := make([]span, 0, len(files))
	for _, f := range files {
		off, err := f.DataOffset()
		if err != nil {
			return fmt.Errorf("zip record %s: %w", f.Name, err)
		}
		spans = append(spans, span{off, off + int64(f.CompressedSize64), f.Name})
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	for i := 1; i < len(spans); i++ {
		if spans[i].start < spans[i-1].end {
			return fmt.Errorf("zip records %s and %s share bytes (%d-%d and %d-%d of the file)",
				spans[i-1].name, spans[i].name, spans[i-1].start, spans[i-1].end, spans[i].start, spans[i].end)
		}
	}
	return nil
}
