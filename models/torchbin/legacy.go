package torchbin

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/big"

	"github.com/sugarme/gotch/pickle"
)

// The legacy (torch < 1.6) stream is five pickles and then raw storages:
// magic number, protocol version, system info, the state dict (whose
// storages are persistent ids), the list of storage keys, and for each key
// an int64 element count followed by the elements.
const (
	legacyMagic    = "1950a86a20f9469cfc6c"
	legacyProtocol = 1001
)

// readLegacy reads a legacy checkpoint of size bytes from ra.
func readLegacy(ra io.ReaderAt, size int64) (any, map[pickle.Storage]storageRef, error) {
	if isTar(ra) {
		return nil, nil, errors.New("the tar-based format of the earliest torch releases is not supported")
	}
	r := io.NewSectionReader(ra, 0, size)
	next := func(what string, persistentLoad func(any) (any, error)) (any, error) {
		off, _ := r.Seek(0, io.SeekCurrent)
		b, err := readPickle(r, size-off)
		if err == nil {
			var v any
			if v, err = unpickle(b, persistentLoad); err == nil {
				return v, nil
			}
		}
		return nil, fmt.Errorf("legacy format: %s pickle at byte %d: %w", what, off, err)
	}

	magic, err := next("magic number", nil)
	if n, ok := magic.(*big.Int); err != nil || !ok || n.Text(16) != legacyMagic {
		if err == nil {
			err = fmt.Errorf("magic number is %s", describe(magic))
		}
		return nil, nil, fmt.Errorf("neither a zip archive nor a legacy torch.save file: %w", err)
	}
	proto, err := next("protocol version", nil)
	if err != nil {
		return nil, nil, err
	}
	if p, ok := proto.(int); !ok || p != legacyProtocol {
		return nil, nil, fmt.Errorf("legacy format: protocol version is %s, want %d", describe(proto), legacyProtocol)
	}
	sysInfo, err := next("system info", nil)
	if err != nil {
		return nil, nil, err
	}
	if err := checkSysInfo(sysInfo); err != nil {
		return nil, nil, err
	}

	type slot struct {
		ref storageRef
		st  pickle.Storage
	}
	slots := make(map[string]*slot)
	refs := make(map[pickle.Storage]storageRef)
	persistentLoad := func(id any) (any, error) {
		if t, ok := id.(*pickle.Tuple); ok && t.Len() > 0 && t.Get(0) == "module" {
			return nil, errors.New("the file pickles a whole nn.Module, not a state dict")
		}
		ref, view, err := parseStorageID(id, 6)
		if err != nil {
			return nil, err
		}
		if view != nil {
			return nil, fmt.Errorf("storage %q: views of storages are not supported", ref.key)
		}
		if s, ok := slots[ref.key]; ok {
			if !s.ref.sameAs(ref) {
				return nil, fmt.Errorf("storage %q is named as %d x %s and as %d x %s",
					ref.key, s.ref.numel, s.ref.dtype, ref.numel, ref.dtype)
			}
			return s.st, nil
		}
		if _, err := ref.nbytes(); err != nil {
			return nil, err
		}
		st := ref.class.New(int(ref.numel), "cpu")
		slots[ref.key] = &slot{ref, st}
		refs[st] = ref
		return st, nil
	}
	root, err := next("state dict", persistentLoad)
	if err != nil {
		return nil, nil, err
	}
	keysObj, err := next("storage keys", nil)
	if err != nil {
		return nil, nil, err
	}
	keys, ok := keysObj.(*pickle.List)
	if !ok {
		return nil, nil, fmt.Errorf("legacy format: storage keys are %s, not a list", describe(keysObj))
	}
	if keys.Len() != len(slots) {
		return nil, nil, fmt.Errorf("legacy format: %d storage keys listed, but the state dict names %d storages",
			keys.Len(), len(slots))
	}
	seen := make(map[string]bool, len(slots))
	for i, k := range *keys {
		key, ok := k.(string)
		if !ok {
			return nil, nil, fmt.Errorf("legacy format: storage key %d is %s, not a string", i, describe(k))
		}
		s, ok := slots[key]
		if !ok || seen[key] {
			return nil, nil, fmt.Errorf("legacy format: storage key %q is listed twice or not named by the state dict", key)
		}
		seen[key] = true
		if err := readLegacyStorage(r, size, s.ref, s.st); err != nil {
			return nil, nil, fmt.Errorf("legacy format: storage %q: %w", key, err)
		}
	}
	return root, refs, nil
}

// readLegacyStorage reads one storage's element count and elements.
func readLegacyStorage(r *io.SectionReader, size int64, ref storageRef, st pickle.Storage) error {
	off, _ := r.Seek(0, io.SeekCurrent)
	var count [8]byte
	if _, err := io.ReadFull(r, count[:]); err != nil {
		return fmt.Errorf("element count at byte %d: %w", off, io.ErrUnexpectedEOF)
	}
	if n := int64(binary.LittleEndian.Uint64(count[:])); n != ref.numel {
		return fmt.Errorf("file says %d elements at byte %d, the state dict says %d", n, off, ref.numel)
	}
	need, err := ref.nbytes()
	if err != nil {
		return err
	}
	if left := size - off - 8; need > left {
		return fmt.Errorf("%d elements of %s need %d bytes, only %d left in the file", ref.numel, ref.dtype, need, left)
	}
	return fill(st, r, ref.numel)
}

// checkSysInfo refuses big-endian files; the rest of the system info (C type
// sizes) does not matter for fixed-size storages.
func checkSysInfo(v any) error {
	d, ok := v.(*pickle.Dict)
	if !ok {
		return fmt.Errorf("legacy format: system info is %s, not a dict", describe(v))
	}
	if le, ok := d.Get("little_endian"); ok && le != true {
		return fmt.Errorf("legacy format: little_endian is %s: only little-endian checkpoints are supported", describe(le))
	}
	return nil
}

// isTar reports whether ra starts with a POSIX tar header.
func isTar(ra io.ReaderAt) bool {
	var magic [5]byte
	_, err := ra.ReadAt(magic[:], 257)
	return err == nil && string(magic[:]) == "ustar"
}
