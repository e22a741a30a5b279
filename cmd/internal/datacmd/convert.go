package datacmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"encoding/json"

	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/internal/atomicfile"
)

func setupConvert(fs *flag.FlagSet) action {
	var rf readFlags
	rf.add(fs)
	out := fs.String("out", "", "the JSON-lines file to write, one dialogue per line (required); written atomically")
	files := fs.String("files", "", "comma-separated dialogue files of one's own (data.files; any format data check reads) to write instead of the corpora, streamed, read with the mapping flags")
	var m fileMapping
	m.add(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: data convert --out FILE [--data DIR] [--corpora LIST] [--merge-speakers] [--skip-bad]\n"+
			"       data convert --out FILE --files FILE,... [mapping flags] [--merge-speakers] [--skip-bad]\n\n"+
			"Writes every dialogue of the corpora, all splits, or of the files, as JSON lines:\n"+
			"  {\"id\", \"corpus\", \"domain\", \"turns\": [{\"speaker\": \"user\"|\"system\", \"text\"}]}\n"+
			"in corpus order, then file and record order. Empty utterances are dropped; so are a chat's system\n"+
			"prompts and tool messages (see --drop).\n\nflags:\n")
		fs.PrintDefaults()
	}
	return func(_ context.Context, stdout io.Writer, log *zap.Logger) error {
		if *out == "" {
			return errors.New("--out is required (see --help)")
		}
		if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
			return fmt.Errorf("write %s: %w", *out, err)
		}
		if paths := list(*files); len(paths) > 0 {
			return convertFiles(m.set(paths), *out, datasets.ReadOptions{SkipBad: rf.skipBad, MergeSameSpeaker: rf.merge, Logger: log}, log)
		}
		names, per, err := rf.read(log)
		if err != nil {
			return err
		}
		var all []datasets.Dialogue
		for _, ds := range per {
			all = append(all, ds...)
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

// convertFiles writes the dialogues of a file set to out as unified JSON lines, a dialogue at a time.
func convertFiles(set datasets.FileSet, out string, opt datasets.ReadOptions, log *zap.Logger) error {
	var st datasets.Stats
	err := atomicfile.Write(out, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false) // as WriteJSONL writes
		return set.EachDialogue(opt, func(_ string, d datasets.Dialogue) error {
			st = st.Add(datasets.CountOne(d))
			if err := enc.Encode(&d); err != nil {
				return fmt.Errorf("write dialogue %s: %w", d.ID, err)
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	log.Info("wrote dialogues", zap.String("out", out), zap.Strings("files", set.Paths),
		zap.Int("dialogues", st.Dialogues), zap.Int("turns", st.Turns))
	return nil
}
