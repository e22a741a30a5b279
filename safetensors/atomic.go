package safetensors

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// WriteFile writes a safetensors file at path atomically: readers see the old file or the complete new one,
// never a torn checkpoint, even after a crash. The file is written beside path under a temporary name, synced,
// renamed over path, and the folder synced so that the rename itself survives a crash. The package keeps this
// to itself so that it stays on the ground floor, importing nothing of convrep's.
func WriteFile(path string, meta map[string]string, tensors []Tensor) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("safetensors: write %s: %w", path, err)
		}
	}()
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	committed := false
	defer func() {
		if !committed {
			f.Close()
			os.Remove(tmp)
		}
	}()
	w := bufio.NewWriterSize(f, 1<<20)
	if err := encode(w, meta, tensors, false); err != nil {
		return err
	}
	for _, step := range []func() error{w.Flush, func() error { return f.Chmod(0o644) }, f.Sync, f.Close} {
		if err := step(); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	committed = true
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	if err := dir.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return err // a file system that cannot sync a folder has still renamed the file
	}
	return nil
}
