package datacmd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/objectives/dse"
)

func setupStats(fs *flag.FlagSet) action {
	var rf readFlags
	rf.add(fs)
	var popt dse.PairOptions
	fs.StringVar(&popt.Variant, "pairs", "", "also count the training pairs of this variant: dse, dse2-1, dse3-1, dse123-1, dropout")
	fs.IntVar(&popt.MinWords, "min-words", dse.PaperMinWords, "with --pairs: drop pairs with a side of this many words or fewer")
	fs.BoolVar(&popt.BothDirections, "both-directions", false, "with --pairs: also pair consecutive utterances backwards (the DSE paper's pairs are forward only, App. A.1)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: data stats [--data DIR] [--corpora LIST] [--merge-speakers] [--metalwoz-multiwoz] [--skip-bad] [--pairs VARIANT]\n\n"+
			"Prints one row per corpus and a total: dialogues, turns, words (white-space separated) and\n"+
			"turns/dialogue, counted after empty utterances are dropped (and turns merged with --merge-speakers),\n"+
			"and with --pairs the number of training pairs the variant makes; then how many MultiWOZ dialogues of\n"+
			"MetaLWOZ were dropped.\n\nflags:\n")
		fs.PrintDefaults()
	}
	return func(_ context.Context, stdout io.Writer, log *zap.Logger) error {
		names, per, err := rf.read(log)
		if err != nil {
			return err
		}
		var pairs []int
		if popt.Variant != "" {
			for _, ds := range per {
				ps, err := dse.DSEPairs(ds, popt)
				if err != nil {
					return err
				}
				pairs = append(pairs, len(ps))
			}
		}
		counts := make([]datasets.Stats, len(per))
		for i, ds := range per {
			counts[i] = datasets.Count(ds)
		}
		if err := writeStats(stdout, "corpus", names, counts, pairs); err != nil {
			return err
		}
		if rf.droppedMultiWOZ >= 0 {
			_, err = fmt.Fprintf(stdout, "metalwoz: %d MultiWOZ 2.0 dialogues dropped (--metalwoz-multiwoz, data.metalwoz_multiwoz, keeps them)\n", rf.droppedMultiWOZ)
		}
		return err
	}
}

// writeStats prints one row per corpus (or file: first names the column) and a total row; pairs, when
// given, adds a column.
func writeStats(w io.Writer, first string, names []string, per []datasets.Stats, pairs []int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := first + "\tdialogues\tturns\twords\tturns/dialogue\t"
	if pairs != nil {
		header += "pairs\t"
	}
	fmt.Fprintln(tw, header)
	var total datasets.Stats
	totalPairs := 0
	row := func(name string, s datasets.Stats, p int) {
		avg := 0.0
		if s.Dialogues > 0 {
			avg = float64(s.Turns) / float64(s.Dialogues)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f\t", name, s.Dialogues, s.Turns, s.Words, avg)
		if pairs != nil {
			fmt.Fprintf(tw, "%d\t", p)
		}
		fmt.Fprintln(tw)
	}
	for i, name := range names {
		s := per[i]
		total = total.Add(s)
		p := 0
		if pairs != nil {
			p = pairs[i]
			totalPairs += p
		}
		row(name, s, p)
	}
	row("total", total, totalPairs)
	return tw.Flush()
}
