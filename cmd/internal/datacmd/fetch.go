package datacmd

import (
	"context"
	"errors"
	"flag"
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

// defaultBaseURL serves a GitHub repository's file at BASE/OWNER/REPO/COMMIT/PATH.
const defaultBaseURL = "https://raw.githubusercontent.com"

// fetchFlags are data fetch's choices.
type fetchFlags struct {
	to, corpora, eval, baseURL string
	vocab                      bool
	timeout                    time.Duration
}

func setupFetch(fs *flag.FlagSet) action {
	f := &fetchFlags{}
	fs.StringVar(&f.to, "to", "", "the folder to download into (required); it gets pretrain/, eval/ and vocab/")
	fs.StringVar(&f.corpora, "corpora", strings.Join(datasets.Corpora(), ","), "comma-separated pretraining corpora to fetch ('' for none)")
	fs.StringVar(&f.eval, "eval", "amazonqa,clinc150,dstc2,gsim_m2m,multiwoz21,snips,ubuntu_irc", "comma-separated evaluation sets to fetch ('' for none)")
	fs.BoolVar(&f.vocab, "vocab", true, "fetch the bert-base-uncased and roberta-base vocabularies")
	base := os.Getenv("CONVREP_DATA_BASE_URL")
	if base == "" {
		base = defaultBaseURL
	}
	fs.StringVar(&f.baseURL, "base-url", base, "where repositories' files are served, as BASE/OWNER/REPO/COMMIT/PATH (or $CONVREP_DATA_BASE_URL)")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "give up on a connection that sends nothing for this long")
	return f.run
}

func (f *fetchFlags) run(ctx context.Context, w io.Writer, log *zap.Logger) error {
	if f.to == "" {
		return errors.New("--to is required: the folder to download into")
	}
	all, err := parseManifest(manifestTSV)
	if err != nil {
		return err
	}
	want, err := f.select_(all)
	if err != nil {
		return err
	}
	var total int64
	for _, e := range want {
		total += e.Size
	}
	client := &http.Client{Transport: &http.Transport{
		DialContext:           (&net.Dialer{Timeout: f.timeout}).DialContext,
		ResponseHeaderTimeout: f.timeout,
		Proxy:                 http.ProxyFromEnvironment,
	}}
	bar := progress.New(os.Stderr, "fetching", "bytes", total, 0)
	defer bar.Finish()
	var failed []string
	for _, e := range want {
		err := fetchOne(ctx, client, strings.TrimRight(f.baseURL, "/"), f.to, e, f.timeout, bar)
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
		return fmt.Errorf("%d of %d files could not be fetched; run the same command again to resume, or download them by hand "+
			"(each from github.com/OWNER/REPO at the commit the manifest cmd/internal/datacmd/manifest.tsv names) into %s:\n  %s",
			len(failed), len(want), f.to, strings.Join(failed, "\n  "))
	}
	fmt.Fprintf(w, "fetched %d files (%d bytes) into %s\ntrain with:    --set data.root=%s\nevaluate with: --data-root %s\n",
		len(want), total, f.to, filepath.Join(f.to, "pretrain"), filepath.Join(f.to, "eval"))
	return nil
}

// select_ keeps the manifest's files of the chosen corpora, evaluation sets and vocabularies.
func (f *fetchFlags) select_(all []entry) ([]entry, error) {
	var folders []string
	for _, name := range splitList(f.corpora) {
		c, err := datasets.LookupCorpus(name)
		if err != nil {
			return nil, fmt.Errorf("--corpora: %w", err)
		}
		folders = append(folders, "pretrain/"+c.Folder+"/")
	}
	for _, name := range splitList(f.eval) {
		folders = append(folders, "eval/"+name+"/")
	}
	if f.vocab {
		folders = append(folders, "vocab/")
	}
	var out []entry
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

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// fetchOne makes root/e.Path hold e's verified bytes. A file already there with the right hash is kept; a
// partial download (e.Path + ".part") is resumed with an HTTP range request; the finished file is checked
// against the manifest's size and SHA-256 before it is renamed into place.
func fetchOne(ctx context.Context, client *http.Client, base, root string, e entry, idle time.Duration, bar *progress.Bar) error {
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
