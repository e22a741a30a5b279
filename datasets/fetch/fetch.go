package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/internal/cli/progress"
)

// DefaultBaseURL serves a GitHub repository's file at BASE/OWNER/REPO/COMMIT/PATH.
const DefaultBaseURL = "https://raw.githubusercontent.com"

// Select keeps the entries of the chosen pretraining corpora (by name, as package datasets knows them),
// evaluation sets (by folder under eval/) and, with vocab, the vocabularies. A name with no files in the
// manifest is an error.
func Select(all []Entry, corpora, eval []string, vocab bool) ([]Entry, error) {
	var folders []string
	for _, name := range corpora {
		c, err := datasets.LookupCorpus(name)
		if err != nil {
			return nil, fmt.Errorf("corpora: %w", err)
		}
		folders = append(folders, "pretrain/"+c.Folder+"/")
	}
	for _, name := range eval {
		folders = append(folders, "eval/"+name+"/")
	}
	if vocab {
		folders = append(folders, "vocab/")
	}
	var out []Entry
	for _, folder := range folders {
		n := len(out)
		for _, e := range all {
			if strings.HasPrefix(e.Path, folder) {
				out = append(out, e)
			}
		}
		if len(out) == n {
			return nil, fmt.Errorf("the manifest has no files under %s", folder)
		}
	}
	return out, nil
}

// Options are how Fetch downloads.
type Options struct {
	BaseURL  string        // where repositories' files are served, as BASE/OWNER/REPO/COMMIT/PATH: DefaultBaseURL, a mirror
	Timeout  time.Duration // give up on a connection that sends nothing for this long
	Progress io.Writer     // where the progress bar is drawn (a terminal) or written (plain lines); nil for none
	Log      *zap.Logger   // each file that fails; nil for none
}

// Fetch makes root hold the bytes of every entry of want, each checked against its size and SHA-256. A file
// already there and right is kept; a download broken off resumes where it stopped, on the next call. A
// licence or read-me that cannot be had is only logged; any other file that cannot be had makes the error,
// which lists every such file and the manual step. It returns the bytes the entries hold.
func Fetch(ctx context.Context, root string, want []Entry, opt Options) (int64, error) {
	log := opt.Log
	if log == nil {
		log = zap.NewNop()
	}
	var total int64
	for _, e := range want {
		total += e.Size
	}
	client := &http.Client{Transport: &http.Transport{
		DialContext:           (&net.Dialer{Timeout: opt.Timeout}).DialContext,
		ResponseHeaderTimeout: opt.Timeout,
		Proxy:                 http.ProxyFromEnvironment,
	}}
	base := strings.TrimRight(opt.BaseURL, "/")
	if base == "" {
		return 0, errors.New("no base URL to fetch from")
	}
	bar := progress.New(opt.Progress, "fetching", "bytes", total, 0)
	defer bar.Finish()
	var failed []string
	for _, e := range want {
		err := fetchOne(ctx, client, base, root, e, opt.Timeout, bar)
		switch {
		case err != nil && optional(e.Path):
			log.Warn("a licence or read-me could not be fetched (the data does not need it)", zap.String("file", e.Path), zap.Error(err))
		case err != nil:
			log.Error("fetch failed", zap.String("file", e.Path), zap.Error(err))
			failed = append(failed, fmt.Sprintf("%s: %v", e.Path, err))
		}
	}
	bar.Finish()
	if len(failed) > 0 {
		return total, fmt.Errorf("%d of %d files could not be fetched; run the same command again to resume, or download them by hand "+
			"(each from github.com/OWNER/REPO at the commit the manifest datasets/fetch/manifest.tsv names) into %s:\n  %s",
			len(failed), len(want), root, strings.Join(failed, "\n  "))
	}
	return total, nil
}

// fetchOne makes root/e.Path hold e's verified bytes. A file already there with the right hash is kept; a
// partial download (e.Path + ".part") is resumed with an HTTP range request; the finished file is checked
// against the manifest's size and SHA-256 before it is renamed into place.
func fetchOne(ctx context.Context, client *http.Client, base, root string, e Entry, idle time.Duration, bar *progress.Bar) error {
	dest := filepath.Join(root, filepath.FromSlash(e.Path))
	if size, sum, err := hashFile(dest, false); err == nil && size == e.Size && sum == e.SHA256 {
		bar.Add(int(e.Size))
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	part := dest + ".part"
	if st, err := os.Lstat(part); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file; remove it", part)
	}
	out, err := os.OpenFile(part, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	have, err := out.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	if have > e.Size {
		if err := out.Truncate(0); err != nil {
			return err
		}
		have = 0
	}
	segs := strings.Split(e.Upstream, "/")
	for i, seg := range segs {
		segs[i] = url.PathEscape(seg)
	}
	src := fmt.Sprintf("%s/%s/%s/%s", base, e.Repo, e.Commit, strings.Join(segs, "/"))
	if have < e.Size {
		if err := download(ctx, client, src, out, have, idle, bar); err != nil {
			return err
		}
	}
	if err := out.Close(); err != nil {
		return err
	}
	size, sum, err := hashFile(part, false)
	if err != nil {
		return err
	}
	if size != e.Size || sum != e.SHA256 {
		os.Remove(part) // a wrong file cannot be resumed into a right one
		return fmt.Errorf("%s: got %d bytes with SHA-256 %s, the manifest says %d bytes with %s; the partial file was removed, run again to download it afresh",
			src, size, sum, e.Size, e.SHA256)
	}
	return os.Rename(part, dest)
}

// download appends url's bytes from offset have to out, stopping when the connection sends nothing for idle.
func download(ctx context.Context, client *http.Client, url string, out io.Writer, have int64, idle time.Duration, bar *progress.Bar) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%s unreachable: %w", url, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusPartialContent && have > 0:
	case resp.StatusCode == http.StatusOK:
		if have > 0 { // the server ignored the range: start over
			if t, ok := out.(interface{ Truncate(int64) error }); ok {
				if err := t.Truncate(0); err != nil {
					return err
				}
			}
		}
	default:
		return fmt.Errorf("%s: HTTP %s", url, resp.Status)
	}
	timer := time.AfterFunc(idle, cancel)
	defer timer.Stop()
	buf := make([]byte, 64<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			timer.Reset(idle)
			if _, werr := out.Write(buf[:n]); werr != nil {
				return werr
			}
			bar.Add(n)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%s: nothing received for %v", url, idle)
			}
			return fmt.Errorf("%s: %w (run again to resume)", url, err)
		}
	}
}
