package main

import (
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"go.uber.org/zap"

	"convrep/datasets"
)

func setupStats(fs *flag.FlagSet) func(io.Writer, *zap.Logger) error {
	var rf readFlags
	rf.add(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: data stats [--data DIR] [--corpora LIST] [--merge-speakers] [--skip-bad]\n\n"+
			"Prints one row per corpus and a total: dialogues, turns, words (white-space separated) and\n"+
			"turns/dialogue, counted after empty utterances are dropped (and turns merged with --merge-speakers).\n\nflags:\n")
		fs.PrintDefaults()
	}
	return func(stdout io.Writer, log *zap.Logger) error {
		names, per, err := rf.read(log)
		if err != nil {
			return err
		}
		return writeStats(stdout, names, per)
	}
}

// writeStats prints one row per corpus and a total row.
func writeStats(w io.Writer, names []string, per [][]datasets.Dialogue) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "corpus\tdialogues\tturns\twords\tturns/dialogue\t\n")
	var total datasets.Stats
	row := func(name string, s datasets.Stats) {
		avg := 0.0
		if s.Dialogues > 0 {
			avg = float64(s.Turns) / float64(s.Dialogues)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f\t\n", name, s.Dialogues, s.Turns, s.Words, avg)
	}
	for i, name := range names {
		s := datasets.Count(per[i])
		total = total.Add(s)
		row(name, s)
	}
	row("total", total)
	return tw.Flush()
}
