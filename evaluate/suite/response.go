package suite

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"convrep/evaluate"
)

func init() {
	Register(Task{Name: "response", Section: Similarity,
		Summary:  "k-to-100 response selection (AmazonQA, Ubuntu IRC, MultiWOZ, or a --test file)",
		Synopsis: "--model M (--dataset amazonqa|ubuntu|multiwoz | --test F) [flags]",
		About: "Response selection without training (DSE §4.2): each query (a question, or a dialogue history joined with the\n" +
			"separator token and truncated from the head) ranks its true response among --candidates by cosine similarity.\n" +
			"Top-1, Top-3, Top-10, MRR; ties rank the truth last among equals. An ensemble (MGT §3.2, Eq. 7): --model a,b,c\n" +
			"(with --checkpoint x,y,z paired, or none), or --model exp.toml --checkpoint x,y,z (checkpoints of one run); each\n" +
			"member's softmax over a query's candidates of its scores, averaged over the members, ranks the candidates. An MGT\n" +
			"dual encoder (a run folder of objective mgt, or its experiment with --checkpoint) embeds candidates with its\n" +
			"response encoder and scores them by the dot product cᵀr (MGT Eq. 4) instead of the cosine.",
		Data: "AmazonQA (amazonqa/), Ubuntu IRC (ubuntu_irc/) or MultiWOZ 2.1 (multiwoz21/) under --data-root, or a --test file of queries and responses",
		New:  func() Options { return new(ResponseOptions) }})
}

// ResponseOptions are evaluate response's settings.
type ResponseOptions struct {
	Common
	Candidates int    // candidates per query, the true response included
	Name       string // the model's name in the rows ("": --model, or the ensemble's members)
}

// Flags declares evaluate response's flags.
func (o *ResponseOptions) Flags(f *Flags) {
	o.flags(f, 128) // DSE App. B.1: 128 for response selection
	o.headFlag(f)
	f.IntVar(&o.Candidates, "candidates", 100, "candidates per query, the true response included")
	f.StringVar(&o.Name, "name", "", "the model's name in the result rows and tables (default: --model, or the ensemble's members)")
	f.Uint64Var(&o.Data.SplitSeed, "split-seed", 1, "seed choosing each Ubuntu IRC conversation's split point (the test set itself)")
	f.StringVar(&o.Data.Split, "split", "test", "the dataset's split: test, or val (MultiWOZ 2.1's validation dialogues, for choosing checkpoints: see evaluate select); recorded in the rows")
}

// Run runs response selection, by one model or an ensemble, and writes the result.
func (o *ResponseOptions) Run(ctx context.Context, log *zap.Logger) error {
	c, size, name := &o.Common, o.Candidates, o.Name
	if err := c.Data.checkSplit(); err != nil {
		return err
	}
	if c.Data.Test != "" && c.Data.Split != "test" {
		return fmt.Errorf("--split %s goes with --dataset multiwoz; a --test file is read as it is", c.Data.Split)
	}
	c.Model.Dual = true // an MGT dual encoder scores by cᵀr with both its encoders (Eq. 4)
	members, err := EnsembleMembers(c.Model)
	if err != nil {
		return err
	}
	first := *c
	first.Model = members[0] // prepare checks one member; EnsembleMembers checked them all
	p, err := prepare(&first)
	if err != nil {
		return err
	}
	set, err := c.Data.responseData()
	if err != nil {
		return err
	}
	if len(set.Responses) < size {
		return fmt.Errorf("%s: %d responses, fewer than --candidates %d", set.Dataset, len(set.Responses), size)
	}
	task := evaluate.ResponseTask{Set: set, Size: size, Seeds: p.seeds, Splits: c.splitIO()}
	if len(members) > 1 {
		return runEnsemble(ctx, members, c.Quiet, task, name, c.Output, log)
	}
	s, err := p.session(ctx, log)
	if err != nil {
		return err
	}
	res, err := s.Response(ctx, task)
	if err != nil {
		return err
	}
	return writeResult(renamed(res, name), c.Output)
}
