package datacmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/internal/atomicfile"
)

func setupConvert(fs *flag.FlagSet) action {
	var rf readFlags
	rf.add(fs)
	out := fs.String("out", "", "the JSON-lines file to write, one dialogue per line (required); written atomically")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: data convert --out FILE [--data DIR] [--corpora LIST] [--merge-speakers] [--skip-bad]\n\n"+
			"Writes every dialogue of the corpora, all splits, as JSON lines:\n"+
			"  {\"id\", \"corpus\", \"domain\", \"turns\": [{\"speaker\": \"user\"|\"system\", \"text\"}]}\n"+
			"in corpus order, then file and record order. Empty utterances are dropped.\n\nflags:\n")
		fs.PrintDefaults()
	}
	return func(_ context.Context, stdout io.Writer, log *zap.Logger) error {
		if *out == "" {
			return errors.New("--out is required (see --help)")
		}
		names, per, err := rf.read(log)
		if err != nil {
			return err
		}
		var all []datasets.Dialogue
		for _, ds := range per {
			all = append(all, ds...)
		}
		if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
			return fmt.Errorf("write %s: %w", *out, err)
		}
		if err := atomicfile.Write(*out, func(w io.Writer) error { return datasets.WriteJSONL(w, all) }); err != nil {
			return fmt.Errorf("write %s: %w", *out, err)
		}
		st := datasets.Count(all)
		log.Info("wrote dialogues", zap.String("out", *out), zap.Strings("corpora", names),
			zap.Int("dialogues", st.Dialogues), zap.Int("turns", st.Turns))
		return nil
	}
}
