package suite

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"convrep/evaluate"
)

func init() {
	Register(Task{Name: "intent", Section: Similarity,
		Summary:  "few-shot intent classification with prototypes (CLINC150, SNIPS, or --train/--test files)",
		Synopsis: "--model M (--dataset clinc150|snips | --train F --test F) [flags]",
		About: "Few-shot intent classification with prototypical networks (DSE §4.2): per label, a k-shot support set is drawn\n" +
			"from the training split (min(2k, n) rows drawn with the seed, a train and a validation half as DSE draws them, the\n" +
			"first k kept); a query goes to the prototype (mean of normalised support embeddings) with the largest dot product.\n" +
			"Accuracy, mean and std over seeds. A label with fewer than k rows keeps all it has: the run warns, naming such\n" +
			"labels, and each row's settings record shots_used; a k that no label can fill is refused.",
		Data: intentData,
		New:  func() Options { return new(IntentOptions) }})
}

// intentData is what the intent tasks read.
const intentData = "CLINC150 (clinc150/data/data_full.json) or SNIPS (snips/) under --data-root, or --train/--test files"

// IntentOptions are evaluate intent's settings.
type IntentOptions struct {
	Common
	Shots []int // support rows per label, one result row each
}

// Flags declares evaluate intent's flags.
func (o *IntentOptions) Flags(f *Flags) {
	o.flags(f, 64) // DSE App. B.1: 64 for intent classification
	o.headFlag(f)
	shotsFlag(f, &o.Shots, "1,5", "shots per label, a list", false)
}

// Run runs few-shot intent classification and writes the result.
func (o *IntentOptions) Run(ctx context.Context, log *zap.Logger) error {
	c := &o.Common
	p, err := prepare(c)
	if err != nil {
		return err
	}
	name, source, train, test, _, err := c.Data.intentData()
	if err != nil {
		return err
	}
	if err := evaluate.CheckQueryLabels(train, test); err != nil {
		return fmt.Errorf("%s: test %w", name, err)
	}
	if err := checkShots(log, source, train, o.Shots); err != nil {
		return err
	}
	s, err := p.session(ctx, log)
	if err != nil {
		return err
	}
	res, err := s.Intent(ctx, evaluate.IntentTask{Dataset: name, Source: source, Train: train, Test: test, Shots: o.Shots, Seeds: p.seeds, Splits: c.splitIO()})
	if err != nil {
		return err
	}
	return writeResult(res, c.Output)
}
