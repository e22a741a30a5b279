package suite

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"convrep/evaluate"
)

func init() {
	Register(Task{Name: "oos", Section: Similarity,
		Summary:  "out-of-scope detection on CLINC150 (or --train/--test files with an oos label)",
		Synopsis: "--model M [--dataset clinc150 | --train F --test F] [--oos-protocol authors|paper] [flags]",
		About: "Out-of-scope detection (DSE §4.2, Tables 3 and 8). --oos-protocol authors (the default: the authors' code,\n" +
			"amazon-research/dse evaluate/run_similarity.py eval_out_of_scope_detection, which made the published numbers):\n" +
			"k out-of-scope training examples form a 151st prototype; each query's similarities to the prototypes are\n" +
			"L2-normalised before the maximum; thresholds mean−std, mean, mean+std of those maxima over the test queries;\n" +
			"a query whose maximum is not above the threshold is out-of-scope. --oos-protocol paper (the paper's text):\n" +
			"in-scope prototypes as for intent; thresholds mean and mean−std of the raw best similarities; a query below\n" +
			"the threshold is out-of-scope. Accuracy, In-Accuracy, OOS-Accuracy, OOS-Recall.",
		Data: "CLINC150 (clinc150/data/data_full.json, and data_oos_plus.json) under --data-root, or --train/--test files with --oos-label rows",
		New:  func() Options { return new(OOSOptions) }})
}

// OOSOptions are evaluate oos's settings.
type OOSOptions struct {
	Common
	Shots    []int  // support rows per label, one result row each
	Protocol string // evaluate.OOSAuthors or evaluate.OOSPaper
}

// Flags declares evaluate oos's flags.
func (o *OOSOptions) Flags(f *Flags) {
	o.flags(f, 64) // DSE App. B.1: 64 for out-of-scope detection
	o.headFlag(f)
	shotsFlag(f, &o.Shots, "1,5", "shots per label, a list", false)
	f.StringVar(&o.Protocol, "oos-protocol", evaluate.OOSAuthors, "authors (the DSE authors' code) or paper (the paper's text); see --help")
}

// Run runs out-of-scope detection and writes the result.
func (o *OOSOptions) Run(ctx context.Context, log *zap.Logger) error {
	c := &o.Common
	if c.Data.Dataset == "" && c.Data.Train == "" {
		c.Data.Dataset = "clinc150"
	}
	p, err := prepare(c)
	if err != nil {
		return err
	}
	task, err := c.Data.oosTask(o.Protocol)
	if err != nil {
		return err
	}
	if err := evaluate.CheckQueryLabels(task.Train, task.Test); err != nil {
		return fmt.Errorf("%s: in-scope test %w", task.Dataset, err)
	}
	task.Shots, task.Seeds, task.Splits = o.Shots, p.seeds, c.splitIO()
	if err := checkShots(log, task.Source, task.SupportRows(), o.Shots); err != nil {
		return err
	}
	s, err := p.session(ctx, log)
	if err != nil {
		return err
	}
	res, err := s.OOS(ctx, task)
	if err != nil {
		return err
	}
	return writeResult(res, c.Output)
}
