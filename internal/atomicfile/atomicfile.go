// Package atomicfile writes files so that a reader, or a machine that crashed, sees the old file or the
// complete new one, never a torn one: checkpoints, configs and caches all go through it.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// pending are the temporary files of the writes under way, which RemovePending removes.
var pending sync.Map

// RemovePending removes the temporary files of the writes under way, for a process that must exit in the middle
// of one (a signal while a run builds its data): no partial file is left behind, and the targets keep their
// old contents, or stay absent.
func RemovePending() {
	pending.Range(func(k, _ any) bool {
		os.Remove(k.(string))
		return true
	})
}

// WriteFile writes data at path atomically.
func WriteFile(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write writes through a temporary file in the target's directory (so
// the rename stays on one file system), fsyncs it, renames it over path and
// fsyncs the directory so the rename itself is durable.
func Write(path string, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	pending.Store(tmp, struct{}{})
	defer pending.Delete(tmp)
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	// CreateTemp makes the file 0600; a checkpoint is an ordinary file.
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	// Some file systems cannot fsync a directory; the rename has happened
	// and nothing better can be done there.
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}
