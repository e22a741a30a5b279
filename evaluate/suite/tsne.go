package suite

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"convrep/evaluate"
	"convrep/evaluate/tsne"
	"convrep/internal/cli/progress"
	"convrep/modelref"
)

// TSNE runs evaluate tsne with c and the task's own settings (cmd/internal/evaluatecmd parses them).
func TSNE(ctx context.Context, c *Common, seed uint64, perplexity float64, iterations int, log *zap.Logger) error {
	if c.Output == "" {
		return fmt.Errorf("--output FIG.png is required")
	}
	if err := modelref.Check(c.Model.Ref, c.Model.Checkpoint); err != nil {
		return err
	}
	if c.Data.Dataset == "" && c.Data.Train == "" {
		c.Data.Dataset = "clinc150"
	}
	name, _, _, test, oos, err := c.Data.intentData()
	if err != nil {
		return err
	}
	p := &prepared{c: c}
	s, err := p.session(ctx, log)
	if err != nil {
		return err
	}
	all := append(append(evaluate.Split{}, test...), oos...)
	texts, labels := make([]string, len(all)), make([]string, len(all))
	for i, e := range all {
		texts[i], labels[i] = e.Text, e.Label
	}
	vecs, err := s.Embed(ctx, texts)
	if err != nil {
		return err
	}
	bar := progress.New(s.Progress, "t-SNE", "iterations", int64(iterations), 0)
	last := 0
	pts, err := tsne.Embed(vecs, tsne.Options{Perplexity: perplexity, Iterations: iterations, Seed: seed,
		Progress: func(done, _ int) { bar.Add(done - last); last = done }})
	bar.Finish()
	if err != nil {
		return err
	}
	title := fmt.Sprintf("%s: %s test", s.Model, name)
	if err := tsne.PlotPNG(c.Output, pts, labels, c.Data.OOSLabel, title); err != nil {
		return err
	}
	log.Info("wrote t-SNE", zap.String("png", c.Output), zap.Int("points", len(pts)))
	return nil
}
