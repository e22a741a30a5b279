package hub

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockPoll is how often a waiting downloader tries the lock again.
const lockPoll = 20 * time.Millisecond

// lockPath is where the lock for one blob lives: <cache>/.locks/<repo
// folder>/<etag>.lock, the place huggingface_hub's filelock uses, so Python
// and Go downloaders sharing a cache also exclude each other.
func (c cacheRepo) lockPath(etag string) string {
	return filepath.Join(filepath.Dir(c.dir), ".locks", filepath.Base(c.dir), etag+".lock")
}

// blobLock is an exclusive flock(2) on a lock file. The kernel drops it when
// the holder exits, so a crashed downloader never blocks the next one.
type blobLock struct{ f *os.File }

// lockBlob takes the lock at path, waiting while another goroutine or
// process holds it. It polls with LOCK_NB rather than blocking in the
// kernel so that cancelling ctx stops the wait.
func lockBlob(ctx context.Context, path string) (*blobLock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create lock folder for %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return &blobLock{f: f}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for lock %s: %w", path, ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}

// unlock releases the lock. The file stays: removing it would let a waiter
// lock a file that a newcomer no longer sees.
func (l *blobLock) unlock() error {
	return l.f.Close() // closing the last descriptor releases the flock
}
