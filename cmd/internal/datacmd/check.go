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

// fileMapping is the flags that say how files of one's own are read: data.columns and data.speakers.
type fileMapping struct {
	cols               datasets.Columns
	user, system, drop string
}

func (m *fileMapping) add(fs *flag.FlagSet) {
	def := datasets.DefaultColumns
	cols := &m.cols
	fs.StringVar(&cols.Dialogue, "dialogue-column", "", fmt.Sprintf("the dialogue id column of CSV, TSV and Parquet files of turns (data.columns.dialogue; default %q), or a dialogue record's id field (default \"id\", else \"dialogue_id\", else the file's name and the record's place)", def.Dialogue))
	fs.StringVar(&cols.Turn, "turn-column", "", fmt.Sprintf("the turn order column (data.columns.turn; default %q, and file order where a file has none)", def.Turn))
	fs.StringVar(&cols.Speaker, "speaker-column", "", fmt.Sprintf("the speaker column, or a message's speaker field (data.columns.speaker; default %q; role in messages, from in conversations)", def.Speaker))
	fs.StringVar(&cols.Text, "text-column", "", fmt.Sprintf("the text column, or a message's text field (data.columns.text; default %q; content in messages, value in conversations)", def.Text))
	fs.StringVar(&cols.Domain, "domain-column", "", fmt.Sprintf("the domain column (data.columns.domain; default %q where a file has it)", def.Domain))
	fs.StringVar(&cols.Messages, "messages-column", "", "a dialogue record's list of messages (data.columns.messages; default: \"messages\" or \"conversations\", found by its key)")
	fs.StringVar(&cols.FirstSpeaker, "first-speaker", "", "user or system: the side of the first string of a list of strings, whose speakers alternate (data.columns.first_speaker)")
	fs.StringVar(&m.user, "user", "", fmt.Sprintf("comma-separated speaker labels read as the user (data.speakers.user; default %s, and %s in dialogue records)", strings.Join(datasets.DefaultSpeakers.User, ","), strings.Join(datasets.ChatSpeakers.User, ",")))
	fs.StringVar(&m.system, "system", "", fmt.Sprintf("comma-separated speaker labels read as the system (data.speakers.system; default %s, and %s in dialogue records)", strings.Join(datasets.DefaultSpeakers.System, ","), strings.Join(datasets.ChatSpeakers.System, ",")))
	fs.StringVar(&m.drop, "drop", "", fmt.Sprintf("comma-separated speaker labels whose messages are dropped and counted (data.speakers.drop; default none, and %s in dialogue records)", strings.Join(datasets.ChatSpeakers.Drop, ",")))
}

// set is the file set of paths read with the mapping.
func (m *fileMapping) set(paths []string) datasets.FileSet {
	return datasets.FileSet{Paths: paths, Columns: m.cols,
		Speakers: datasets.Speakers{User: list(m.user), System: list(m.system), Drop: list(m.drop)}}
}

// setupCheck is data check FILE...: it reads dialogue files of one's own as an experiment's data.files
// would, streaming, and prints the table data stats prints, a row per file, and the layout read in each.
func setupCheck(fs *flag.FlagSet, files *[]string) action {
	var m fileMapping
	m.add(fs)
	merge := fs.Bool("merge-speakers", false, "join consecutive turns of one speaker with a space (data.merge_same_speaker)")
	skipBad := fs.Bool("skip-bad", false, "skip malformed rows with their dialogue, counted in the log per file (data.skip_bad), instead of failing")
	var popt dse.PairOptions
	fs.StringVar(&popt.Variant, "pairs", "", "also count the training pairs of this variant: dse, dse2-1, dse3-1, dse123-1, dropout")
	fs.IntVar(&popt.MinWords, "min-words", dse.PaperMinWords, "with --pairs: drop pairs with a side of this many words or fewer")
	fs.BoolVar(&popt.BothDirections, "both-directions", false, "with --pairs: also pair consecutive utterances backwards")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: data check [flags] FILE...\n\n"+
			"Reads dialogue files of one's own as an experiment's data.files reads them, and prints one row per\n"+
			"file and a total: dialogues, turns, words and turns/dialogue, and with --pairs the training pairs;\n"+
			"then, per file, the layout it read and what it dropped (a chat's system prompts, tool messages).\n"+
			"A FILE is unified JSONL (what data convert writes) or chat JSONL (a dialogue a line, its messages\n"+
			"in a list), a JSON array of such records, CSV or TSV with a header row, one row per turn (each\n"+
			"optionally .gz), a Parquet file (a row per turn, or a dialogue per row), or a folder of Parquet\n"+
			"shards. The first malformed record stops it with the file, the line or row index, and the problem\n"+
			"(--skip-bad counts and skips them). It streams: memory holds one dialogue at a time (a batch of chat\n"+
			"JSON lines, up to 16 MiB) and 16 bytes per dialogue id.\n\nflags:\n")
		fs.PrintDefaults()
	}
	return func(_ context.Context, stdout io.Writer, log *zap.Logger) error {
		if len(*files) == 0 {
			return errors.New("name at least one FILE (see --help)")
		}
		set := m.set(*files)
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
		reports := make([]datasets.FileReport, len(*files))
		at := map[string]int{}
		for i, f := range *files {
			at[f] = i
		}
		opt := datasets.ReadOptions{SkipBad: *skipBad, MergeSameSpeaker: *merge, Logger: log,
			FileRead: func(r datasets.FileReport) { reports[at[r.Given]] = reports[at[r.Given]].Merge(r) }}
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
		if err := writeStats(stdout, "file", *files, per, pairs); err != nil {
			return err
		}
		for i, f := range *files {
			if _, err := fmt.Fprintf(stdout, "%s: %s\n", f, reports[i].Summary()); err != nil {
				return err
			}
		}
		return nil
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
