package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// retryDelay is the pause before the first retry; it doubles after each.
var retryDelay = 500 * time.Millisecond

// fetchBlob makes blobs/<etag> hold the file m describes. One downloader
// per blob: the others (goroutines or processes sharing the cache) wait for
// its lock and then verify what it left. Bytes go to blobs/<etag>.incomplete
// first, so an interrupted download (broken connection, cancelled context)
// is resumed by the next attempt or the next run with a Range request. Every
// blob is checked against its hash before it is renamed into place.
func (h *hubClient) fetchBlob(ctx context.Context, c cacheRepo, m fileMeta) error {
	blob := c.blobPath(m.etag)
	if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
		return fmt.Errorf("hub: create blobs folder for %s: %w", m.file, err)
	}
	lock, err := lockBlob(ctx, c.lockPath(m.etag))
	if err != nil {
		return fmt.Errorf("hub: download %s: %w", m.file, err)
	}
	defer lock.unlock()

	if ok, err := h.cachedBlobGood(m, blob); err != nil || ok {
		return err
	}
	tmp := blob + ".incomplete"
	delay := retryDelay
	for attempt := 1; ; attempt++ {
		err := h.fetchOnce(ctx, m, tmp)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("hub: download %s interrupted (partial file %s kept for resume): %w", m.file, tmp, ctx.Err())
		}
		if !isTransient(err) || attempt >= h.opt.MaxAttempts {
			return fmt.Errorf("hub: download %s (attempt %d): %w", m.file, attempt, err)
		}
		h.opt.Logger.Warn("download failed, retrying", zap.String("file", m.file),
			zap.Int("attempt", attempt), zap.Duration("in", delay), zap.Error(err))
		select {
		case <-ctx.Done():
			return fmt.Errorf("hub: download %s interrupted (partial file %s kept for resume): %w", m.file, tmp, ctx.Err())
		case <-time.After(delay):
		}
		delay *= 2
	}
	if err := verify(m, tmp); err != nil {
		if rmErr := os.Remove(tmp); rmErr != nil {
			return errors.Join(err, fmt.Errorf("hub: delete bad download %s: %w", tmp, rmErr))
		}
		return err
	}
	if err := os.Rename(tmp, blob); err != nil {
		return fmt.Errorf("hub: move %s into place: %w", m.file, err)
	}
	return nil
}

// cachedBlobGood reports whether blob already holds m's content, checked by
// hash. A blob that fails the check is deleted so it is fetched again; a
// symlink or other non-file is left for the rename to replace.
func (h *hubClient) cachedBlobGood(m fileMeta, blob string) (bool, error) {
	fi, err := os.Lstat(blob)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("hub: stat cached %s: %w", blob, err)
	}
	if !fi.Mode().IsRegular() {
		h.opt.Logger.Warn("cached blob is not a regular file; fetching it again", zap.String("blob", blob))
		return false, nil
	}
	err = verify(m, blob)
	var ce *ChecksumError
	if errors.As(err, &ce) {
		h.opt.Logger.Warn("cached blob fails its hash; fetching it again", zap.String("blob", blob), zap.Error(err))
		if err := os.Remove(blob); err != nil {
			return false, fmt.Errorf("hub: delete bad cached blob %s: %w", blob, err)
		}
		return false, nil
	}
	if err != nil {
		return false, err
	}
	h.opt.Logger.Debug("blob already cached", zap.String("file", m.file), zap.String("blob", blob))
	return true, nil
}

// openPartial opens the partial download for appending. It never follows a
// symlink: one planted at tmp could otherwise make the download overwrite
// any file the user can write.
func openPartial(tmp string) (*os.File, error) {
	if fi, err := os.Lstat(tmp); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("hub: %s is a %v, not a regular file: refusing to write through it (delete it to download again)",
			tmp, fi.Mode().Type())
	}
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|syscall.O_NOFOLLOW, 0o644)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("hub: %s is a symlink: refusing to write through it (delete it to download again)", tmp)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", tmp, err)
	}
	return f, nil
}

// fetchOnce GETs what tmp still lacks and appends it. A server that ignores
// the Range request and sends the whole file (200) restarts tmp from zero.
func (h *hubClient) fetchOnce(ctx context.Context, m fileMeta, tmp string) (err error) {
	f, err := openPartial(tmp)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("write %s: %w", tmp, cerr)
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", tmp, err)
	}
	offset := fi.Size()
	if m.size >= 0 && offset == m.size {
		return nil // complete from an earlier run; verify decides if it is good
	}
	if m.size >= 0 && offset > m.size {
		offset = 0 // longer than the file: not a prefix of it
	}

	ctx, wd, stop := startWatchdog(ctx, http.MethodGet, m.url, h.opt.IdleTimeout)
	defer stop()
	req, err := h.newRequest(ctx, http.MethodGet, m.url)
	if err != nil {
		return err
	}
	if offset > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", offset))
	}
	resp, err := h.opt.Client.Do(req)
	if err != nil {
		if te := timeoutCause(ctx, err, http.MethodGet, m.url, h.opt.ConnectTimeout); te != nil {
			return &transientError{te}
		}
		return &transientError{err} // a *url.Error, naming method and URL
	}
	defer resp.Body.Close()

	switch {
	case resp.StatusCode == http.StatusPartialContent && offset > 0:
		start, err := contentRangeStart(resp.Header.Get("Content-Range"))
		if err != nil || start != offset {
			return &transientError{fmt.Errorf("GET %s: asked for bytes from %d, got Content-Range %q",
				m.url, offset, resp.Header.Get("Content-Range"))}
		}
	case resp.StatusCode == http.StatusOK:
		if offset > 0 {
			h.opt.Logger.Info("server ignored the Range request; restarting download",
				zap.String("file", m.file), zap.Int64("had", offset))
		}
		offset = 0
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		// The partial file does not fit the remote one: start over next try.
		if err := f.Truncate(0); err != nil {
			return fmt.Errorf("truncate %s: %w", tmp, err)
		}
		return &transientError{fmt.Errorf("GET %s: range from %d not satisfiable; restarting", m.url, offset)}
	default:
		return &StatusError{Method: http.MethodGet, URL: m.url, Code: resp.StatusCode,
			HubCode: resp.Header.Get("X-Error-Code")}
	}
	if err := f.Truncate(offset); err != nil {
		return fmt.Errorf("truncate %s: %w", tmp, err)
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return fmt.Errorf("seek %s: %w", tmp, err)
	}

	total := m.size
	if total < 0 && resp.ContentLength >= 0 {
		total = offset + resp.ContentLength
	}
	h.opt.Logger.Info("downloading", zap.String("file", m.file), zap.Int64("bytes", total),
		zap.Int64("resume_from", offset))
	bar := newProgress(h.opt.Progress, m.file, offset, total)
	n, err := io.Copy(io.MultiWriter(f, bar), wd.body(resp.Body))
	bar.done(err == nil)
	if err != nil {
		if te := timeoutCause(ctx, err, http.MethodGet, m.url, h.opt.ConnectTimeout); te != nil {
			return &transientError{fmt.Errorf("%w, after %d of %d bytes", te, offset+n, total)}
		}
		var pe *os.PathError
		if errors.As(err, &pe) {
			return fmt.Errorf("write %s: %w", tmp, err)
		}
		return &transientError{fmt.Errorf("GET %s: connection broke after %d of %d bytes: %w",
			m.url, offset+n, total, err)}
	}
	if m.size >= 0 && offset+n != m.size {
		return &transientError{fmt.Errorf("GET %s: got %d bytes, expected %d", m.url, offset+n, m.size)}
	}
	return nil
}

// contentRangeStart parses the first byte position of "bytes START-END/SIZE".
func contentRangeStart(v string) (int64, error) {
	rest, ok := strings.CutPrefix(v, "bytes ")
	if !ok {
		return 0, fmt.Errorf("bad Content-Range %q", v)
	}
	start, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, fmt.Errorf("bad Content-Range %q", v)
	}
	return strconv.ParseInt(start, 10, 64)
}

// verify checks a downloaded file against its ETag: the sha256 of the
// content for an LFS file, the git blob SHA-1 (of "blob <size>\x00" and the
// content) for a file stored in git. An ETag of neither form cannot vouch
// for the bytes, so the file is refused.
func verify(m fileMeta, path string) error {
	var sum hash.Hash
	algo := "sha256"
	switch {
	case sha256Pattern.MatchString(m.etag):
		sum = sha256.New()
	case sha1Pattern.MatchString(m.etag):
		sum, algo = sha1.New(), "git blob sha1"
	default:
		return fmt.Errorf("hub: verify %s: ETag %q is neither a sha256 nor a git blob sha1; the download cannot be checked",
			m.file, m.etag)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("hub: verify %s: %w", m.file, err)
	}
	defer f.Close()
	if algo != "sha256" {
		fi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("hub: verify %s: stat %s: %w", m.file, path, err)
		}
		fmt.Fprintf(sum, "blob %d\x00", fi.Size())
	}
	if _, err := io.Copy(sum, f); err != nil {
		return fmt.Errorf("hub: verify %s: read %s: %w", m.file, path, err)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != m.etag {
		return &ChecksumError{File: m.file, Algo: algo, Expected: m.etag, Got: got}
	}
	return nil
}
