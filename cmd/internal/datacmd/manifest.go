package datacmd

import (
	"context"
	"flag"
	"io"

	"go.uber.org/zap"

	"convrep/datasets/fetch"
	"convrep/internal/shared"
)

// setupManifest is data manifest: it writes the manifest of a data folder to stdout (package datasets/fetch).
func setupManifest(fs *flag.FlagSet) action {
	def, _ := shared.Path("data")
	from := fs.String("from", def, "the data folder to describe (default ../shared/data)")
	return func(_ context.Context, w io.Writer, log *zap.Logger) error {
		es, skipped, err := fetch.Build(*from)
		if err != nil {
			return err
		}
		for _, s := range skipped {
			log.Warn("no source for this file; left out of the manifest", zap.String("path", s))
		}
		return fetch.Write(w, es)
	}
}
