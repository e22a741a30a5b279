package suite

import (
	"context"
	"fmt"
	"path/filepath"

	"go.uber.org/zap"

	"convrep/evaluate"
	"convrep/evaluate/sets"
	"convrep/internal/shared"
)

func init() {
	Register(Task{Name: "sr", Section: Similarity,
		Summary:  "semantic retrieval on MSR-E2E: 100 BM25 candidates re-ranked by cosine, MAP and MRR (DialogueCSE §5.1.2)",
		Synopsis: "--model M [--dataset msr_e2e] [--data-root DIR] [--queries 2000] [--seeds 0-2] [flags]",
		About: "Semantic retrieval (DialogueCSE §5.1.2, Table 2's MAP and MRR) on MSR-E2E (the paper's MDC). The candidates are the\n" +
			"distinct user messages of at least 3 words; a message's intent label is its dialogue acts' names with their slot\n" +
			"names, values dropped (request(date;moviename)+greeting(greeting)); texts whose copies disagree on the label are\n" +
			"dropped. Per seed, --queries of them are drawn; BM25 (k1 = 1.2, b = 0.75) retrieves each query's 100 candidates from\n" +
			"the others, positive when their label is the query's, at most 30 positive (later positives passed over); queries\n" +
			"with no positive are dropped and counted. The model re-ranks each list by the cosine of its sentence embeddings\n" +
			"(as the other similarity tasks: --pooling, L2-normalised). MAP and MRR over the queries, mean and std over seeds.\n" +
			"The paper also discards candidates annotators judged inconsistent with their label; no such judgement exists here.",
		Data: "MSR-E2E (msr_e2e/data/*_all.tsv) under --data-root, the pretraining corpora's folder",
		New:  func() Options { return new(SROptions) }})
}

// SROptions are evaluate sr's settings.
type SROptions struct {
	Common
	Queries int // queries drawn per seed
}

// Flags declares evaluate sr's flags.
func (o *SROptions) Flags(f *Flags) {
	o.flags(f, 64) // single utterances, as intent (DSE App. B.1); 64 tokens hold over 99% of MSR-E2E's user messages
	o.headFlag(f)
	f.SetDefault("seeds", "0-2")
	f.Lookup("data-root").Usage = "folder of the pretraining corpora, holding msr_e2e/ (default: data/pretrain in the shared folder, $CONVREP_SHARED or else ../shared from the working directory)"
	f.IntVar(&o.Queries, "queries", evaluate.DefaultSRSampling.Queries, "queries drawn per seed (all of the pool when it holds fewer)")
}

// Run runs semantic retrieval on MSR-E2E and writes the result.
func (o *SROptions) Run(ctx context.Context, log *zap.Logger) error {
	c, queries := &o.Common, o.Queries
	if c.Data.Train != "" || c.Data.Test != "" || c.Splits != "" || c.WriteSplits != "" {
		return fmt.Errorf("sr reads MSR-E2E and draws its queries with the seeds; it takes no --train, --test, --splits or --write-splits")
	}
	if c.Data.Dataset != "" && c.Data.Dataset != "msr_e2e" {
		return fmt.Errorf("--dataset %q has no semantic-retrieval data (known: msr_e2e)", c.Data.Dataset)
	}
	if queries < 1 {
		return fmt.Errorf("--queries %d: want at least 1", queries)
	}
	p, err := prepare(c)
	if err != nil {
		return err
	}
	root := c.Data.Root
	if root == "" {
		if root, err = shared.Path("data", "pretrain"); err != nil {
			return err
		}
	}
	pool, err := sets.ReadMSRPool(filepath.Join(root, "msr_e2e"))
	if err != nil {
		return err
	}
	st := pool.LabelStats()
	log.Info("semantic retrieval pool", zap.Int("texts", len(pool.Texts)), zap.Int("labels", st.Labels),
		zap.Int("single_member_labels", st.Singletons), zap.String("largest", st.Largest), zap.Float64("largest_share", st.Share))
	s, err := p.session(ctx, log)
	if err != nil {
		return err
	}
	sampling := evaluate.DefaultSRSampling
	sampling.Queries = queries
	res, err := s.SR(ctx, evaluate.SRTask{Pool: pool, Sampling: sampling, Seeds: p.seeds})
	if err != nil {
		return err
	}
	return writeResult(res, c.Output)
}
