package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// WriteDir makes the folder dir hold what write puts in the folder it is given, in one step: write fills a
// fresh temporary folder beside dir, every file in it is fsynced, and it then takes dir's place, so that a
// reader or a crash sees the old folder or the complete new one, never a mix. The old folder is removed.
// When write fails, dir is left as it was.
func WriteDir(dir string, write func(tmp string) error) (err error) {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if rmErr := os.RemoveAll(tmp); err == nil && rmErr != nil {
			err = fmt.Errorf("remove the replaced folder %s: %w", tmp, rmErr)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp makes it private; the folder is not
		return err
	}
	if err := write(tmp); err != nil {
		return err
	}
	if err := syncTree(tmp); err != nil {
		return err
	}
	if err := exchange(tmp, dir); err != nil {
		return fmt.Errorf("put %s in place of %s: %w", tmp, dir, err)
	}
	return syncDir(parent) // tmp now holds the old folder, which the deferred call removes
}

// exchange swaps the names of the folder tmp and dir in one step (renameat2's RENAME_EXCHANGE), or renames
// tmp to dir when there is no dir. A file system that cannot exchange gets two renames, dir missing between.
func exchange(tmp, dir string) error {
	err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dir, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOENT):
		return os.Rename(tmp, dir)
	case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS):
		old := tmp + ".old"
		if err := os.Rename(dir, old); err != nil {
			return err
		}
		if err := os.Rename(tmp, dir); err != nil {
			return err
		}
		return os.Rename(old, tmp)
	}
	return err
}

// syncTree fsyncs every file and folder under root.
func syncTree(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return syncDir(p)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := f.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", p, err)
		}
		return nil
	})
}
