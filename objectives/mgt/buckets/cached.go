package buckets

import (
	"encoding/hex"
	"fmt"
	"path/filepath"

	"go.uber.org/zap"
)

// CachedEmbeddings returns the pool embeddings stored under key in dir, or computes them with embed (which
// returns rows×dim values and dim) and stores them. hit says which. A stale or damaged file is reported to
// log and replaced; a failed write is reported and the embeddings are still returned.
func CachedEmbeddings(dir string, key Key, embed func() ([]float32, int, error), log *zap.Logger) ([]float32, int, bool, error) {
	path := filepath.Join(dir, "mgt-embeddings-"+hex.EncodeToString(key[:12])+".bin")
	dims, vals, err := LoadFloat32s(path, key)
	if err == nil {
		return vals, dims[1], true, nil
	}
	warnStale(log, path, err)
	vals, dim, err := embed()
	if err != nil {
		return nil, 0, false, err
	}
	if dim <= 0 || len(vals)%dim != 0 {
		return nil, 0, false, fmt.Errorf("buckets: embeddings of %d values are not rows of %d", len(vals), dim)
	}
	if err := SaveFloat32s(path, key, [3]int{len(vals) / dim, dim, 1}, vals); err != nil {
		log.Warn("embedding cache not written; the next run embeds again", zap.Error(err))
	}
	return vals, dim, false, nil
}

// CachedNegatives is CachedEmbeddings for the negatives Build or Uniform draws.
func CachedNegatives(dir string, key Key, build func() (*Negatives, error), log *zap.Logger) (*Negatives, bool, error) {
	path := filepath.Join(dir, "mgt-negatives-"+hex.EncodeToString(key[:12])+".bin")
	dims, idx, err := LoadInt32s(path, key)
	if err == nil {
		return &Negatives{Examples: dims[0], Segments: dims[1], PerSegment: dims[2], Idx: idx}, true, nil
	}
	warnStale(log, path, err)
	n, err := build()
	if err != nil {
		return nil, false, err
	}
	if err := SaveInt32s(path, key, [3]int{n.Examples, n.Segments, n.PerSegment}, n.Idx); err != nil {
		log.Warn("negatives cache not written; the next run draws again", zap.Error(err))
	}
	return n, false, nil
}

func warnStale(log *zap.Logger, path string, err error) {
	if !missing(err) {
		log.Warn("cache file unusable; computing afresh", zap.String("file", path), zap.Error(err))
	}
}
