package suite

import (
	"context"
	"fmt"
	"path/filepath"

	"go.uber.org/zap"

	"convrep/evaluate"
	"convrep/internal/shared"
)

// SR runs evaluate sr with c and the task's own settings (cmd/internal/evaluatecmd parses them).
func SR(ctx context.Context, c *Common, queries int, log *zap.Logger) error {
	if c.Data.Train != "" || c.Data.Test != "" || c.Splits != "" || c.WriteSplits != "" {
		return fmt.Errorf("sr reads MSR-E2E and draws its queries with the seeds; it takes no --train, --test, --splits or --write-splits")
	}
	if c.Data.Dataset != "" && c.Data.Dataset != "msr_e2e" {
		return fmt.Errorf("--dataset %q has no semantic-retrieval data (known: msr_e2e)", c.Data.Dataset)
	}
	if queries < 1 {
		return fmt.Errorf("--queries %d: want at least 1", queries)
	}
	p, err := prepare(c, false, "")
	if err != nil {
		return err
	}
	root := c.Data.Root
	if root == "" {
		if root, err = shared.Path("data", "pretrain"); err != nil {
			return err
		}
	}
	pool, err := evaluate.ReadMSRPool(filepath.Join(root, "msr_e2e"))
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
