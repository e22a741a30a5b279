package datacmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/datasets/fetch"
)

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
		base = fetch.DefaultBaseURL
	}
	fs.StringVar(&f.baseURL, "base-url", base, "where repositories' files are served, as BASE/OWNER/REPO/COMMIT/PATH (or $CONVREP_DATA_BASE_URL)")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "give up on a connection that sends nothing for this long")
	return f.run
}

// run downloads what the flags choose (package datasets/fetch) and says how to use it.
func (f *fetchFlags) run(ctx context.Context, w io.Writer, log *zap.Logger) error {
	if f.to == "" {
		return errors.New("--to is required: the folder to download into")
	}
	all, err := fetch.Manifest()
	if err != nil {
		return err
	}
	want, err := fetch.Select(all, splitList(f.corpora), splitList(f.eval), f.vocab)
	if err != nil {
		return err
	}
	total, err := fetch.Fetch(ctx, f.to, want, fetch.Options{BaseURL: f.baseURL, Timeout: f.timeout, Progress: os.Stderr, Log: log})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "fetched %d files (%d bytes) into %s\ntrain with:    --set data.root=%s\nevaluate with: --data-root %s\n",
		len(want), total, f.to, filepath.Join(f.to, "pretrain"), filepath.Join(f.to, "eval"))
	return nil
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
