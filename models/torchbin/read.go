package torchbin

import (
	"fmt"
	"io"
	"os"

	"convrep/safetensors"
)

// ReadFile reads the state dict that torch.save wrote at path, in the zip or
// the legacy format, and returns its tensors sorted by name. Each tensor is a
// contiguous little-endian copy of its view; names that share a storage
// (tied weights) each come out whole. The file is never trusted: a global
// outside the state-dict allow-list, a damaged container or an
// inconsistent tensor is an error naming the file and the problem.
func ReadFile(path string) (ts []safetensors.Tensor, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("torchbin: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("torchbin: %w", err)
	}
	ts, err = read(f, info.Size())
	if err != nil {
		return nil, fmt.Errorf("torchbin: %s: %w", path, err)
	}
	return ts, nil
}

// read reads a checkpoint of size bytes from ra.
func read(ra io.ReaderAt, size int64) (ts []safetensors.Tensor, err error) {
	// gotch's pickle package is known to panic on malformed input; the
	// unpickler and storage reads recover themselves, this catches the rest.
	defer func() {
		if r := recover(); r != nil {
			ts, err = nil, fmt.Errorf("panic while decoding: %v", r)
		}
	}()
	readContainer := readLegacy
	if isZip(ra) {
		readContainer = readZip
	}
	root, refs, err := readContainer(ra, size)
	if err != nil {
		return nil, err
	}
	es, err := entries(root)
	if err != nil {
		return nil, err
	}
	return tensors(es, refs)
}

// isZip reports whether ra starts like a zip archive, which is how torch
// tells the two formats apart.
func isZip(ra io.ReaderAt) bool {
	var sig [4]byte
	if _, err := ra.ReadAt(sig[:], 0); err != nil {
		return false
	}
	s := string(sig[:])
	return s == "PK\x03\x04" || s == "PK\x05\x06"
}
