package datacmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/objectives/dse"
)

// setupCheck is data check FILE...: it reads dialogue files of one's own as an experiment's data.files
// would, streaming, and prints the table data stats prints, a row per file.
func setupCheck(fs *flag.FlagSet, files *[]string) action {
	var cols datasets.Columns
	def := datasets.DefaultColumns
	fs.StringVar(&cols.Dialogue, "dialogue-column", "", fmt.Sprintf("the dialogue id column of CSV, TSV and Parquet files (data.columns.dialogue; default %q)", def.Dialogue))
	fs.StringVar(&cols.Turn, "turn-column", "", fmt.Sprintf("the turn order column (data.columns.turn; default %q, and file order where a file has none)", def.Turn))
	fs.StringVar(&cols.Speaker, "speaker-column", "", fmt.Sprintf("the speaker column (data.columns.speaker; default %q)", def.Speaker))
	fs.StringVar(&cols.Text, "text-column", "", fmt.Sprintf("the text column (data.columns.text; default %q)", def.Text))
	fs.StringVar(&cols.Domain, "domain-column", "", fmt.Sprintf("the domain column (data.columns.domain; default %q where a file has it)", def.Domain))
	user := fs.String("user", "", fmt.Sprintf("comma-separated speaker labels read as the user (data.speakers.user; default %s)", strings.Join(datasets.DefaultSpeakers.User, ",")))
	system := fs.String("system", "", fmt.Sprintf("comma-separated speaker labels read as the system (data.speakers.system; default %s)", strings.Join(datasets.DefaultSpeakers.System, ",")))
	merge := fs.Bool("merge-speakers", false, "join consecutive turns of one speaker with a space (data.merge_same_speaker)")
	skipBad := fs.Bool("skip-bad", false, "skip malformed rows with their dialogue, counted in the log per file (data.skip_bad), instead of failing")
	var popt dse.PairOptions
	fs.StringVar(&popt.Variant, "pairs", "", "also count the training pairs of this variant: dse, dse2-1, dse3-1, dse123-1, dropout")
	fs.IntVar(&popt.MinWords, "min-words", dse.PaperMinWords, "with --pairs: drop pairs with a side of this many words or fewer")
	fs.BoolVar(&popt.BothDirections, "both-directions", false, "with --pairs: also pair consecutive utterances backwards")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: data check [flags] FILE...\n\n"+
			"Reads dialogue files of one's own as an experiment's data.files reads them, and prints one row per\n"+
			"file and a total: dialogues, turns, words and turns/dialogue, and with --pairs the training pairs.\n"+
			"A FILE is unified JSONL (what data convert writes), CSV or TSV with a header row, one row per turn\n"+
			"(each optionally .gz), a Parquet file, or a folder of Parquet shards. The first malformed row stops\n"+
			"it with the file, the line or row index, and the problem (--skip-bad counts and skips them).\n"+
			"It streams: memory holds one dialogue at a time and 16 bytes per dialogue id.\n\nflags:\n")
		fs.PrintDefaults()
	}
	return func(_ context.Context, stdout io.Writer, log *zap.Logger) error {
		if len(*files) == 0 {
			return errors.New("name at least one FILE (see --help)")
		}
		set := datasets.FileSet{Paths: *files, Columns: cols,
			Speakers: datasets.Speakers{User: list(*user), System: list(*system)}}
		var counter *datasets.PairCounter
		if popt.Variant != "" {
			b, err := dse.NewPairBuilder(popt)
			if err != nil {
				return err
			}
			counter = datasets.NewPairCounter(b)
		}
		per := make([]datasets.Stats, len(*files))
		pairs := make([]int, len(*files))
		at := map[string]int{}
		for i, f := range *files {
			at[f] = i
		}
		opt := datasets.ReadOptions{SkipBad: *skipBad, MergeSameSpeaker: *merge, Logger: log}
		err := set.EachDialogue(opt, func(file string, d datasets.Dialogue) error {
			i := at[file]
			per[i] = per[i].Add(datasets.CountOne(d))
			if counter != nil {
				pairs[i] += counter.Add(d)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if counter == nil {
			pairs = nil
		}
		return writeStats(stdout, "file", *files, per, pairs)
	}
}

// list splits a comma-separated flag value, dropping empty items.
func list(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}
