package nvrtc

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"convrep/internal/atomicfile"
)

// cacheFormat heads every cached file and enters every key: a change of the file's layout or of what the
// key covers changes it, and old files are then never read.
const cacheFormat = "convrep-ptx-v1"

// DefaultCacheDir is where convrep keeps its compiled kernels: convrep/kernels in the user's cache folder
// ($XDG_CACHE_HOME, else ~/.cache).
func DefaultCacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("nvrtc: no cache folder for the kernels: %w", err)
	}
	return filepath.Join(dir, "convrep", "kernels"), nil
}

// Cached is Compile through a folder of PTX files: the PTX of src for compute_<arch> is read from dir when a
// file there was made from the same source, name, architecture, NVRTC release and options, and otherwise
// compiled and written (atomically, so that concurrent runs and crashes leave whole files). Each file carries
// a header with its key, the PTX's length and its SHA-256: a file that is truncated, corrupt or another's is
// compiled again and replaced, never used. dir is created when missing; a failure to write it is an error.
func Cached(dir, src, name string, arch int) ([]byte, error) {
	if arch <= 0 {
		return nil, fmt.Errorf("nvrtc: compile %s: architecture %d: want a compute capability such as 80 or 90", name, arch)
	}
	l, err := lib()
	if err != nil {
		return nil, err
	}
	key := cacheKey(src, name, arch, l.major, l.minor)
	path := filepath.Join(dir, fmt.Sprintf("%s-sm%d-%s.ptx", sanitize(name), arch, key[:32]))
	if b, err := os.ReadFile(path); err == nil {
		if ptx, ok := parseCached(b, key); ok {
			return ptx, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("nvrtc: read cached PTX: %w", err)
	}
	ptx, err := Compile(src, name, arch)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("nvrtc: kernel cache: %w", err)
	}
	if err := atomicfile.WriteFile(path, formatCached(ptx, key)); err != nil {
		return nil, fmt.Errorf("nvrtc: write cached PTX %s: %w", path, err)
	}
	return ptx, nil
}

// cacheKey is the hex SHA-256 of everything the PTX depends on. Each part is written with its length, so that
// no two different inputs run together into the same bytes.
func cacheKey(src, name string, arch, major, minor int) string {
	h := sha256.New()
	parts := append([]string{cacheFormat, src, name, strconv.Itoa(arch), fmt.Sprintf("%d.%d", major, minor)}, options("compute", arch)...)
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s\n", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// formatCached is a cache file: one header line "convrep-ptx-v1 <key> <length> <sha256 of the PTX>", then
// the PTX.
func formatCached(ptx []byte, key string) []byte {
	sum := sha256.Sum256(ptx)
	head := fmt.Sprintf("%s %s %d %x\n", cacheFormat, key, len(ptx), sum)
	return append([]byte(head), ptx...)
}

// parseCached returns the PTX of a cache file when its header names key and the PTX that follows has the
// header's length and hash.
func parseCached(b []byte, key string) ([]byte, bool) {
	head, ptx, ok := bytes.Cut(b, []byte("\n"))
	if !ok {
		return nil, false
	}
	var format, gotKey, sum string
	var n int
	if k, err := fmt.Sscanf(string(head), "%s %s %d %s", &format, &gotKey, &n, &sum); err != nil || k != 4 {
		return nil, false
	}
	if format != cacheFormat || gotKey != key || n != len(ptx) || n == 0 {
		return nil, false
	}
	if got := sha256.Sum256(ptx); hex.EncodeToString(got[:]) != sum {
		return nil, false
	}
	return ptx, true
}

// sanitize keeps a program name's letters, digits, dots, dashes and underscores, for a readable file name.
func sanitize(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || len(b) > 64 {
		return "kernels"
	}
	return string(b)
}
