// Package datacmd is the data command (cmd/data, convrep data): it reads the pretraining corpora in their
// upstream layouts and writes them as one JSON-lines file of dialogues, or prints how much text each holds;
// and it builds an experiment's dataset ahead of its run, through the run's caches. Its subcommands parse their
// flags here and call the libraries: datasets for reading, datasets/fetch for downloading and the manifest.
//
//	go run ./cmd/data convert --data ../shared/data/pretrain --corpora sgd,woz2 --out dialogues.jsonl [--merge-speakers] [--skip-bad]
//	go run ./cmd/data stats [--data DIR] [--corpora LIST]
//	go run ./cmd/data fetch --to DIR [--corpora LIST] [--eval LIST]   (where ../shared/data is absent)
//	go run ./cmd/data prepare experiments/mgt_small_cpu.toml [--set section.key=value ...]
package datacmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/internal/cli"
	"convrep/internal/shared"
)

// command is one subcommand: its flags are added to fs, and the action setup returns does the work once they
// are parsed. A command with setupArgs instead of setup takes positional arguments, which it finds in *args
// once they are parsed, exactly nargs of them when nargs is above 0. An interruptible command's action
// watches ctx, which SIGINT and SIGTERM cancel.
type command struct {
	setup         func(fs *flag.FlagSet) action
	setupArgs     func(fs *flag.FlagSet, args *[]string) action
	nargs         int
	interruptible bool
}

// action is a parsed command's work, writing its output to stdout.
type action func(ctx context.Context, stdout io.Writer, log *zap.Logger) error

// commands is data's table of subcommands.
func commands() cli.Table[command] {
	return cli.Table[command]{
		Name:     "data",
		Synopsis: "data <command> [flags]",
		About: "Reads the pretraining corpora in their upstream layouts, archives and .json.gz in place:\n  " +
			strings.Join(datasets.Corpora(), ", ") + "\n" +
			"and dialogue files of one's own (check); builds an experiment's dataset as its run would (prepare).",
		Footer: "Run 'data <command> --help' for its flags.",
		Entries: []cli.Entry[command]{
			{Name: "convert", Summary: "write the corpora as one JSON-lines file of dialogues", Sub: command{setup: setupConvert}},
			{Name: "stats", Summary: "print dialogues, turns and words per corpus", Sub: command{setup: setupStats}},
			{Name: "check", Summary: "validate dialogue files of one's own (data.files) and print their stats", Sub: command{setupArgs: setupCheck}},
			{Name: "fetch", Summary: "download the corpora and evaluation sets from their public sources, checked against the manifest", Sub: command{setup: setupFetch}},
			{Name: "manifest", Summary: "write the manifest (path, size, SHA-256, source) of a data folder such as ../shared/data", Sub: command{setup: setupManifest}},
			{Name: "prepare", Summary: "build an experiment's dataset ahead of its run, through the run's caches, and print its report",
				Sub: command{setupArgs: setupPrepare, nargs: 1, interruptible: true}},
		},
	}
}

// Main runs data on args, the command line after the command's name, and returns the exit status: 0, 1 for a
// failure, 2 for a usage error.
func Main(args []string) int { return commandLine(args, os.Stdout).Main(args) }

// Check parses args as Main does, the command and its flags, and returns what it would reject, without reading
// or writing any data.
func Check(args []string) error { return commandLine(args, os.Stdout).Check(args) }

// run is Main with its streams and logger given.
func run(args []string, stdout, stderr io.Writer, log *zap.Logger) int {
	return commandLine(args, stdout).Exec(args, stderr, log)
}

// commandLine is data's command line: the subcommand args[0], which writes to stdout.
func commandLine(args []string, stdout io.Writer) cli.Command[action] {
	name, interruptible := "data", false
	if len(args) > 0 {
		name += " " + args[0]
		if c, err := commands().Find(args[0]); err == nil {
			interruptible = c.Sub.interruptible
		}
	}
	return cli.Command[action]{Name: name, Parse: parse, Interruptible: interruptible,
		Run: func(ctx context.Context, do action, log *zap.Logger) error {
			return do(ctx, stdout, log)
		}}
}

// parse finds the command args[0] and parses its flags; the usage, asked for or not, and flag errors are
// printed to stderr. It returns what runs the command, or flag.ErrHelp for -h / --help.
func parse(args []string, stderr io.Writer) (action, error) {
	e, rest, err := commands().Lookup(args, stderr, stderr)
	if err != nil {
		return nil, err
	}
	c := e.Sub
	fs := flag.NewFlagSet("data "+e.Name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var positional []string
	var do action
	if c.setupArgs != nil {
		do = c.setupArgs(fs, &positional)
	} else {
		do = c.setup(fs)
	}
	rest, err = cli.Parse(fs, rest)
	if err != nil {
		return nil, err
	}
	if c.setupArgs != nil {
		if c.nargs > 0 && len(rest) != c.nargs {
			fmt.Fprintf(stderr, "data %s: got %d arguments %q, want %d (see --help)\n", e.Name, len(rest), rest, c.nargs)
			return nil, fmt.Errorf("data %s: got %d arguments %q, want %d", e.Name, len(rest), rest, c.nargs)
		}
		positional = rest
		return do, nil
	}
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "data %s: unexpected arguments %q (see --help)\n", e.Name, rest)
		return nil, fmt.Errorf("data %s: unexpected arguments %q", e.Name, rest)
	}
	return do, nil
}

// readFlags are the flags both commands share: what to read and how.
type readFlags struct {
	data, corpora  string
	merge, skipBad bool
	multiWOZ       bool // keep MetaLWOZ's MultiWOZ 2.0 dialogues
	// droppedMultiWOZ is how many MultiWOZ dialogues of MetaLWOZ the last read dropped; -1 when metalwoz
	// was not read or they were kept.
	droppedMultiWOZ int
}

func (f *readFlags) add(fs *flag.FlagSet) {
	def, err := shared.Path("data", "pretrain")
	if err != nil {
		def = "" // no shared folder beside the repository: --data must be given
	}
	fs.StringVar(&f.data, "data", def, "the pretraining data root, one folder per corpus (default: ../shared/data/pretrain beside the repository, or under $CONVREP_SHARED)")
	fs.StringVar(&f.corpora, "corpora", strings.Join(datasets.Corpora(), ","), "comma-separated corpora to read, in output order")
	fs.BoolVar(&f.merge, "merge-speakers", false, "join consecutive turns of one speaker with a space")
	fs.BoolVar(&f.skipBad, "skip-bad", false, "skip malformed records (counted in the log per file) instead of failing")
	fs.BoolVar(&f.multiWOZ, "metalwoz-multiwoz", false, "keep the MultiWOZ 2.0 dialogues of MetaLWOZ's archive (dropped by default: 430 of them are in MultiWOZ 2.1's val/test sets)")
}

// read reads the corpora the flags name, each separately so that per-corpus numbers can be kept.
func (f *readFlags) read(log *zap.Logger) ([]string, [][]datasets.Dialogue, error) {
	if f.data == "" {
		return nil, nil, errors.New("--data is required: no ../shared/data/pretrain beside the repository")
	}
	if st, err := os.Stat(f.data); err != nil || !st.IsDir() {
		return nil, nil, fmt.Errorf("--data %s is not a directory", f.data)
	}
	var names []string
	for _, n := range strings.Split(f.corpora, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil, nil, errors.New("--corpora names no corpus")
	}
	// MetaLWOZ's MultiWOZ dialogues are read and then dropped here, as the reader would, so that the
	// number dropped can be reported.
	opt := datasets.ReadOptions{SkipBad: f.skipBad, MergeSameSpeaker: f.merge, MetaLWOZMultiWOZ: true, Logger: log}
	var per [][]datasets.Dialogue
	f.droppedMultiWOZ = -1
	for i, name := range names {
		if slices.Contains(names[:i], name) {
			return nil, nil, fmt.Errorf("--corpora lists %s twice", name)
		}
		ds, err := datasets.ReadAll(f.data, []string{name}, opt)
		if err != nil {
			return nil, nil, err
		}
		if name == "metalwoz" && !f.multiWOZ {
			ds, f.droppedMultiWOZ = datasets.DropMetaLWOZMultiWOZ(ds)
		}
		per = append(per, ds)
	}
	return names, per, nil
}
