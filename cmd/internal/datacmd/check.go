package datacmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/experiment"
	"convrep/internal/cli"
	"convrep/objectives"
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

// mappingFlags are the flags of fileMapping and --merge-speakers: what an experiment file's [data] says instead.
var mappingFlags = []string{"dialogue-column", "turn-column", "speaker-column", "text-column", "domain-column",
	"messages-column", "first-speaker", "user", "system", "drop", "merge-speakers"}

// checkInput is what data check reads and how: files named on the command line with the flags' mapping, or
// an experiment's data.files with its [data] mapping.
type checkInput struct {
	files   []string
	set     datasets.FileSet
	merge   bool
	skipBad bool
	// pairs counts the training pairs a dialogue makes; nil counts none.
	pairs func(datasets.Dialogue) int
	// skipHint is the setting that skips malformed records: --skip-bad, or the experiment's data.skip_bad.
	skipHint string
}

// setupCheck is data check FILE... and data check EXPERIMENT.toml: it reads dialogue files of one's own as an
// experiment's data.files would, streaming, and prints the table data stats prints, a row per file, the
// layout read in each, every malformed record (the first 100) and a notice of a turn column left unread.
func setupCheck(fs *flag.FlagSet, args *[]string) action {
	var m fileMapping
	m.add(fs)
	merge := fs.Bool("merge-speakers", false, "join consecutive turns of one speaker with a space (data.merge_same_speaker)")
	skipBad := fs.Bool("skip-bad", false, "skip malformed rows with their dialogue (data.skip_bad), and succeed; they are listed either way")
	var sets cli.Repeated
	fs.Var(&sets, "set", "with EXPERIMENT.toml: override a key of it, section.key=value in TOML syntax (repeatable)")
	var popt dse.PairOptions
	fs.StringVar(&popt.Variant, "pairs", "", "also count the training pairs of this variant: dse, dse2-1, dse3-1, dse123-1, dropout (with EXPERIMENT.toml of a dse objective: its data.pairs)")
	fs.IntVar(&popt.MinWords, "min-words", dse.PaperMinWords, "with --pairs: drop pairs with a side of this many words or fewer")
	fs.BoolVar(&popt.BothDirections, "both-directions", false, "with --pairs: also pair consecutive utterances backwards")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: data check [flags] FILE...\n       data check [--skip-bad] [--set section.key=value ...] EXPERIMENT.toml\n\n"+
			"Reads dialogue files of one's own as an experiment's data.files reads them, and prints one row per\n"+
			"file and a total: dialogues, turns, words and turns/dialogue, and with --pairs the training pairs;\n"+
			"then, per file, the layout it read and what it dropped (a chat's system prompts, tool messages).\n"+
			"Given an experiment file (.toml), it reads its data.files with its [data.columns], [data.speakers],\n"+
			"merge_same_speaker and skip_bad, and counts its pairs when its objective is dse; the mapping flags\n"+
			"do not apply then.\n"+
			"A FILE is unified JSONL (what data convert writes) or chat JSONL (a dialogue a line, its messages\n"+
			"in a list), a JSON array of such records, CSV or TSV with a header row, one row per turn (each\n"+
			"optionally .gz), a Parquet file (a row per turn, or a dialogue per row), or a folder of Parquet\n"+
			"shards. Every malformed record is listed (the first 100, then their number) with the file, the line\n"+
			"or row index and the problem, and fails the check unless --skip-bad (data.skip_bad) skips each with\n"+
			"its dialogue, as a run would. A dialogue whose rows come back after another one's is malformed,\n"+
			"every part of it; finding those reads the files twice. A column that looks like a turn order (turn_no,\n"+
			"position, ...) while the turn column is left to its default gets a notice. It streams: memory holds\n"+
			"one dialogue at a time (a batch of chat JSON lines, up to 16 MiB) and 16 to 40 bytes per dialogue id.\n\nflags:\n")
		fs.PrintDefaults()
	}
	return func(_ context.Context, stdout io.Writer, log *zap.Logger) error {
		in, err := checkArgs(fs, *args, m, *merge, *skipBad, sets, popt)
		if err != nil {
			return err
		}
		return check(in, stdout, log)
	}
}

// checkArgs makes the input of data check of its arguments: files and the flags' mapping, or one experiment
// file.
func checkArgs(fs *flag.FlagSet, args []string, m fileMapping, merge, skipBad bool, sets []string, popt dse.PairOptions) (checkInput, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if len(args) == 0 {
		return checkInput{}, errors.New("name at least one FILE, or an EXPERIMENT.toml (see --help)")
	}
	isExperiment := func(a string) bool { return strings.EqualFold(filepath.Ext(a), ".toml") }
	if !slices.ContainsFunc(args, isExperiment) {
		if len(sets) > 0 {
			return checkInput{}, errors.New("--set applies to an EXPERIMENT.toml, and none is named")
		}
		in := checkInput{files: args, set: m.set(args), merge: merge, skipBad: skipBad, skipHint: "pass --skip-bad"}
		if popt.Variant != "" {
			var err error
			if in.pairs, err = dse.PairCounter(popt); err != nil {
				return checkInput{}, err
			}
		}
		return in, nil
	}
	if len(args) > 1 {
		return checkInput{}, fmt.Errorf("name one EXPERIMENT.toml alone, or files: got %q", args)
	}
	for _, name := range mappingFlags {
		if set[name] {
			return checkInput{}, fmt.Errorf("--%s: %s says how its files are read ([data], [data.columns], [data.speakers]); change it there or with --set", name, args[0])
		}
	}
	e, err := experiment.Load(args[0], sets)
	if err != nil {
		return checkInput{}, err
	}
	fset := e.Data.FileSet()
	if fset == nil {
		return checkInput{}, fmt.Errorf("%s has no data.files: data check reads files of one's own (data stats counts the corpora)", args[0])
	}
	in := checkInput{files: fset.Paths, set: *fset, merge: e.Data.MergeSameSpeaker, skipBad: skipBad || e.Data.SkipBad,
		skipHint: "set data.skip_bad = true in " + args[0]}
	if set["pairs"] {
		in.pairs, err = dse.PairCounter(popt)
		return in, err
	}
	// The experiment's own objective counts its examples when it makes them of the dialogues alone (DSE's
	// pairs), as the dry run counts them.
	if cfg, perr := objectives.Parse(e.Objective); perr == nil {
		if c, ok := cfg.(objectives.DialogueExamples); ok {
			in.pairs, err = c.ExampleCounter(objectives.DataEnv{Pairs: e.Data.Pairs, MinWords: e.Data.MinWords, BothDirections: e.Data.BothDirections})
		}
	}
	return in, err
}

// check reads in's files and prints the table, each file's layout, the malformed records and the notices. It
// fails when a record is malformed and in does not skip them.
func check(in checkInput, stdout io.Writer, log *zap.Logger) error {
	files := in.files
	per := make([]datasets.Stats, len(files))
	pairs := make([]int, len(files))
	reports := make([]datasets.FileReport, len(files))
	at := map[string]int{}
	for i, f := range files {
		at[f] = i
	}
	var bad datasets.BadRecords
	// Every malformed record is read past and listed; without skipping them the check fails after the list.
	opt := datasets.ReadOptions{SkipBad: true, MergeSameSpeaker: in.merge, Logger: log, Bad: bad.Add,
		FileRead: func(r datasets.FileReport) { reports[at[r.Given]] = reports[at[r.Given]].Merge(r) }}
	err := in.set.EachDialogue(opt, func(file string, d datasets.Dialogue) error {
		i := at[file]
		per[i] = per[i].Add(datasets.CountOne(d))
		if in.pairs != nil {
			pairs[i] += in.pairs(d)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if in.pairs == nil {
		pairs = nil
	}
	w := &errWriter{w: stdout}
	if in.skipBad || bad.Count == 0 {
		if err := writeStats(w, "file", files, per, pairs); err != nil {
			return err
		}
		for i, f := range files {
			w.printf("%s: %s\n", f, reports[i].Summary())
		}
	}
	if bad.Count > 0 {
		w.printf("%d malformed records%s:\n", bad.Count, map[bool]string{true: ", each skipped with its dialogue"}[in.skipBad])
		if w.err == nil {
			w.err = bad.Write(w, "  ")
		}
	}
	for _, n := range in.set.Notices() {
		w.printf("notice: %s\n", n)
	}
	if w.err != nil {
		return w.err
	}
	if bad.Count > 0 && !in.skipBad {
		return fmt.Errorf("%d malformed records (listed above); a run stops at the first: fix them, or %s to skip each with its dialogue", bad.Count, in.skipHint)
	}
	return nil
}

// errWriter keeps the first error of its writes.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, a ...any) { fmt.Fprintf(e, format, a...) }

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
