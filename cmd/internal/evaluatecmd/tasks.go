package evaluatecmd

import (
	"context"
	"fmt"
	"os"

	"go.uber.org/zap"

	"convrep/evaluate"
	"convrep/modelref"
)

// prepared is a task whose data, splits and flags have been checked; only the model is left to load.
type prepared struct {
	c     *common
	seeds []uint64
	shots []int
}

func prepare(c *common, withShots bool, shots string) (*prepared, error) {
	if err := modelref.Check(c.model.ref, c.model.checkpoint); err != nil {
		return nil, err
	}
	if c.model.head != "" && c.model.checkpoint == "" {
		return nil, fmt.Errorf("--head %s reads the head from --checkpoint, and none is given", c.model.head)
	}
	p := &prepared{c: c}
	var err error
	if p.seeds, err = parseSeeds(c.seeds); err != nil {
		return nil, err
	}
	if withShots {
		if p.shots, err = parseShots(shots); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// session loads the model; progress goes to stderr unless --quiet.
func (p *prepared) session(ctx context.Context, log *zap.Logger) (*evaluate.Session, error) {
	s, err := openModel(ctx, p.c.model, log)
	if err != nil {
		return nil, err
	}
	if !p.c.quiet {
		s.Progress = os.Stderr
	}
	return s, nil
}

func runIntent(ctx context.Context, args []string, log *zap.Logger) error {
	var c common
	fs := newFlags("intent", "--model M (--dataset clinc150|snips | --train F --test F) [flags]",
		"Few-shot intent classification with prototypical networks (DSE §4.2): per label, a k-shot support set is drawn\n"+
			"from the training split (min(2k, n) rows drawn with the seed, the first half kept); a query goes to the\n"+
			"prototype (mean of normalised support embeddings) with the largest dot product. Accuracy, mean and std over seeds.")
	c.register(fs, 64) // DSE App. B.1: 64 for intent classification
	c.registerHead(fs)
	shots := fs.String("shots", "1,5", "shots per label, a list")
	if _, err := parse(ctx, fs, args); err != nil {
		return err
	}
	p, err := prepare(&c, true, *shots)
	if err != nil {
		return err
	}
	name, source, train, test, _, err := c.data.intentData()
	if err != nil {
		return err
	}
	if err := evaluate.CheckQueryLabels(train, test); err != nil {
		return fmt.Errorf("%s: test %w", name, err)
	}
	s, err := p.session(ctx, log)
	if err != nil {
		return err
	}
	res, err := s.Intent(ctx, evaluate.IntentTask{Dataset: name, Source: source, Train: train, Test: test, Shots: p.shots, Seeds: p.seeds, Splits: c.splitIO()})
	if err != nil {
		return err
	}
	return writeResult(res, c.output)
}

func runOOS(ctx context.Context, args []string, log *zap.Logger) error {
	var c common
	fs := newFlags("oos", "--model M [--dataset clinc150 | --train F --test F] [--oos-protocol authors|paper] [flags]",
		"Out-of-scope detection (DSE §4.2, Tables 3 and 8). --oos-protocol authors (the default: the authors' code,\n"+
			"amazon-research/dse evaluate/run_similarity.py eval_out_of_scope_detection, which made the published numbers):\n"+
			"k out-of-scope training examples form a 151st prototype; each query's similarities to the prototypes are\n"+
			"L2-normalised before the maximum; thresholds mean−std, mean, mean+std of those maxima over the test queries;\n"+
			"a query whose maximum is not above the threshold is out-of-scope. --oos-protocol paper (the paper's text):\n"+
			"in-scope prototypes as for intent; thresholds mean and mean−std of the raw best similarities; a query below\n"+
			"the threshold is out-of-scope. Accuracy, In-Accuracy, OOS-Accuracy, OOS-Recall.")
	c.register(fs, 64) // DSE App. B.1: 64 for out-of-scope detection
	c.registerHead(fs)
	shots := fs.String("shots", "1,5", "shots per label, a list")
	protocol := fs.String("oos-protocol", evaluate.OOSAuthors, "authors (the DSE authors' code) or paper (the paper's text); see --help")
	if _, err := parse(ctx, fs, args); err != nil {
		return err
	}
	if c.data.dataset == "" && c.data.train == "" {
		c.data.dataset = "clinc150"
	}
	p, err := prepare(&c, true, *shots)
	if err != nil {
		return err
	}
	task, err := c.data.oosTask(*protocol)
	if err != nil {
		return err
	}
	if err := evaluate.CheckQueryLabels(task.Train, task.Test); err != nil {
		return fmt.Errorf("%s: in-scope test %w", task.Dataset, err)
	}
	task.Shots, task.Seeds, task.Splits = p.shots, p.seeds, c.splitIO()
	s, err := p.session(ctx, log)
	if err != nil {
		return err
	}
	res, err := s.OOS(ctx, task)
	if err != nil {
		return err
	}
	return writeResult(res, c.output)
}

func runResponse(ctx context.Context, args []string, log *zap.Logger) error {
	var c common
	fs := newFlags("response", "--model M (--dataset amazonqa|ubuntu|multiwoz | --test F) [flags]",
		"Response selection without training (DSE §4.2): each query (a question, or a dialogue history joined with the\n"+
			"separator token and truncated from the head) ranks its true response among --candidates by cosine similarity.\n"+
			"Top-1, Top-3, Top-10, MRR; ties rank the truth last among equals. An ensemble (MGT §3.2, Eq. 7): --model a,b,c\n"+
			"(with --checkpoint x,y,z paired, or none), or --model exp.toml --checkpoint x,y,z (checkpoints of one run); each\n"+
			"member's softmax over a query's candidates of its scores, averaged over the members, ranks the candidates. An MGT\n"+
			"dual encoder (a run folder of objective mgt, or its experiment with --checkpoint) embeds candidates with its\n"+
			"response encoder and scores them by the dot product cᵀr (MGT Eq. 4) instead of the cosine.")
	c.register(fs, 128) // DSE App. B.1: 128 for response selection
	c.registerHead(fs)
	size := fs.Int("candidates", 100, "candidates per query, the true response included")
	name := fs.String("name", "", "the model's name in the result rows and tables (default: --model, or the ensemble's members)")
	fs.Uint64Var(&c.data.splitSeed, "split-seed", 1, "seed choosing each Ubuntu IRC conversation's split point (the test set itself)")
	fs.StringVar(&c.data.split, "split", "test", "the dataset's split: test, or val (MultiWOZ 2.1's validation dialogues, for choosing checkpoints: see evaluate select); recorded in the rows")
	if _, err := parse(ctx, fs, args); err != nil {
		return err
	}
	if err := c.data.checkSplit(); err != nil {
		return err
	}
	if c.data.test != "" && c.data.split != "test" {
		return fmt.Errorf("--split %s goes with --dataset multiwoz; a --test file is read as it is", c.data.split)
	}
	c.model.dual = true // an MGT dual encoder scores by cᵀr with both its encoders (Eq. 4)
	members, err := ensembleMembers(c.model)
	if err != nil {
		return err
	}
	first := c
	first.model = members[0] // prepare checks one member; ensembleMembers checked them all
	p, err := prepare(&first, false, "")
	if err != nil {
		return err
	}
	set, err := c.data.responseData()
	if err != nil {
		return err
	}
	if len(set.Responses) < *size {
		return fmt.Errorf("%s: %d responses, fewer than --candidates %d", set.Dataset, len(set.Responses), *size)
	}
	task := evaluate.ResponseTask{Set: set, Size: *size, Seeds: p.seeds, Splits: c.splitIO()}
	if len(members) > 1 {
		return runEnsemble(ctx, members, c.quiet, task, *name, c.output, log)
	}
	s, err := p.session(ctx, log)
	if err != nil {
		return err
	}
	res, err := s.Response(ctx, task)
	if err != nil {
		return err
	}
	return writeResult(renamed(res, *name), c.output)
}
