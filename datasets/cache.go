package datasets

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"convrep/internal/atomicfile"
)

// CachedPairs returns the tokenised pairs for key from cacheDir, or
// builds them with build and stores them there, so a second run with the
// same data, tokenizer and settings starts at once. hit says which.
//
// A cache file that is unreadable, corrupt, truncated, of another format
// version or of another key is never used: a warning goes to zap's global
// logger (zap.L(); commands install theirs with zap.ReplaceGlobals) and the
// pairs are rebuilt. See CachedPairsLog to pass a logger.
func CachedPairs(cacheDir string, key CacheKey, build func() (*TokenizedPairs, error)) (*TokenizedPairs, bool, error) {
	return CachedPairsLog(cacheDir, key, build, zap.L())
}

// CachedPairsLog is CachedPairs with the logger that hears about unusable
// cache files and failed cache writes.
func CachedPairsLog(cacheDir string, key CacheKey, build func() (*TokenizedPairs, error), log *zap.Logger) (*TokenizedPairs, bool, error) {
	if log == nil {
		log = zap.NewNop()
	}
	c, tp, err := lookupCache(cacheDir, key, log)
	if tp != nil || err != nil {
		return tp, tp != nil, err
	}
	path, digest, desc := c.path, c.digest, c.desc
	tp, err = build()
	if err != nil {
		return nil, false, fmt.Errorf("pair cache %s: build: %w", path, err)
	}
	if err := tp.validate(); err != nil {
		return nil, false, fmt.Errorf("pair cache %s: build: %w", path, err)
	}
	// The pairs are good even when they cannot be stored: warn and go on.
	if err := storeCache(path, digest, desc, tp); err != nil {
		log.Warn("pair cache not written; the next run builds again", zap.String("file", path), zap.Error(err))
	}
	return tp, false, nil
}

// cacheEntry is where the pairs of a key are kept: the file, and the digest and description its header holds.
type cacheEntry struct {
	path   string
	digest [32]byte
	desc   []byte
}

// lookupCache finds the cache file of key in cacheDir: its pairs on a hit; on a miss (an unusable file is
// logged and counts as one) nil pairs and the entry a build writes.
func lookupCache(cacheDir string, key CacheKey, log *zap.Logger) (cacheEntry, *TokenizedPairs, error) {
	digest, desc, err := key.digest()
	if err != nil {
		return cacheEntry{}, nil, fmt.Errorf("pair cache in %s: %w", cacheDir, err)
	}
	c := cacheEntry{path: cachePath(cacheDir, digest), digest: digest, desc: desc}
	tp, err := loadCache(c.path, digest)
	switch {
	case err == nil:
		return c, tp, nil
	case !errors.Is(err, fs.ErrNotExist):
		log.Warn("pair cache unusable; rebuilding", zap.String("file", c.path), zap.Error(err))
	}
	return c, nil, nil
}

// cachePath is the file that holds the pairs of a key digest.
func cachePath(cacheDir string, digest [32]byte) string {
	return filepath.Join(cacheDir, "pairs-"+hex.EncodeToString(digest[:12])+".bin")
}

// loadCache reads and checks a cache file; a missing file gives an error
// wrapping fs.ErrNotExist.
func loadCache(path string, digest [32]byte) (*TokenizedPairs, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	tp, _, err := decodeCache(f, info.Size(), &digest)
	return tp, err
}

func storeCache(path string, digest [32]byte, desc []byte, tp *TokenizedPairs) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		return encodeCache(w, digest, desc, tp)
	})
}
