package torchbin

import (
	"bytes"
	"fmt"
	"io"

	"github.com/sugarme/gotch/pickle"
)

// maxPickle bounds a pickle read into memory. A state dict's pickle holds
// names and shapes only (about 100 bytes per tensor: 30,000 tensors need 3 MiB),
// so this is far above any real one and keeps a damaged length from exhausting memory.
const maxPickle = 16 << 20

// readPickle reads the pickle at the start of r, which has limit bytes left,
// checking its lengths on the way (see guard.go), and returns its bytes.
// r is left just after the pickle's STOP opcode.
func readPickle(r io.ReadSeeker, limit int64) ([]byte, error) {
	start, err := r.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, err
	}
	n, err := pickleLen(r, min(limit, maxPickle))
	if err != nil {
		return nil, err
	}
	if _, err := r.Seek(start, io.SeekStart); err != nil {
		return nil, err
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("re-reading the %d-byte pickle: %w", n, err)
	}
	return b, nil
}

// unpickle decodes one pickle with gotch's unpickler, resolving globals only
// through the allow-list and persistent ids through persistentLoad (nil for
// pickles that must not contain any). b must have passed pickleLen.
func unpickle(b []byte, persistentLoad func(any) (any, error)) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("unpickler panicked: %v", r)
		}
	}()
	u := pickle.NewUnpickler(bytes.NewReader(b))
	u.FindClass = findClass
	u.PersistentLoad = persistentLoad
	if persistentLoad == nil {
		u.PersistentLoad = func(id any) (any, error) {
			return nil, fmt.Errorf("unexpected persistent id %s", describe(id))
		}
	}
	return u.Load()
}
