package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
)

// retryDelay is the pause before the first retry; it doubles after each.
var retryDelay = 500 * time.Millisecond

// fetchBlob makes blobs/<etag> hold the file m describes. Bytes go to
// blobs/<etag>.incomplete first, so an interrupted download (broken
// connection, cancelled context) is resumed by the next attempt or the next
// run with a Range request. An LFS file is checked against its sha256 before
// it is renamed into place.
func (h *hubClient) fetchBlob(ctx context.Context, c cacheRepo, m fileMeta) error {
	blob := c.blobPath(m.etag)
	if fi, err := os.Stat(blob); err == nil && (m.size < 0 || fi.Size() == m.size) {
		h.opt.Logger.Debug("blob already cached", zap.String("file", m.file), zap.String("blob", blob))
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
		return fmt.Errorf("hub: create blobs folder for %s: %w", m.file, err)
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

// fetchOnce GETs what tmp still lacks and appends it. A server that ignores
// the Range request and sends the whole file (200) restarts tmp from zero.
func (h *hubClient) fetchOnce(ctx context.Context, m fileMeta, tmp string) (err error) {
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", tmp, err)
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

	req, err := h.newRequest(ctx, http.MethodGet, m.url)
	if err != nil {
		return err
	}
	if offset > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", offset))
	}
	resp, err := h.opt.Client.Do(req)
	if err != nil {
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
	n, err := io.Copy(io.MultiWriter(f, bar), resp.Body)
	bar.done(err == nil)
	if err != nil {
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

// verify checks the content of an LFS file, whose ETag is its sha256; other
// files carry a git hash of a different form and only their size is checked.
func verify(m fileMeta, tmp string) error {
	if !sha256Pattern.MatchString(m.etag) {
		return nil
	}
	f, err := os.Open(tmp)
	if err != nil {
		return fmt.Errorf("hub: verify %s: %w", m.file, err)
	}
	defer f.Close()
	sum := sha256.New()
	if _, err := io.Copy(sum, f); err != nil {
		return fmt.Errorf("hub: verify %s: read %s: %w", m.file, tmp, err)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != m.etag {
		return &ChecksumError{File: m.file, Expected: m.etag, Got: got}
	}
	return nil
}
