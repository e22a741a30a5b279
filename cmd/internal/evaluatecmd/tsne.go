package evaluatecmd

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"convrep/evaluate"
	"convrep/evaluate/tsne"
	"convrep/internal/progress"
	"convrep/modelref"
)

func runTSNE(ctx context.Context, args []string, log *zap.Logger) error {
	var c common
	fs := newFlags("tsne", "--model M --output FIG.png [flags]",
		"A t-SNE of the model's embeddings of CLINC150's test queries, coloured by intent, out-of-scope queries in black\n"+
			"(the papers' Figure 1). Barnes-Hut t-SNE after PCA to 50 dimensions; the same seed gives the same picture.")
	c.register(fs, 0)
	seed := fs.Uint64("seed", 0, "t-SNE seed")
	perplexity := fs.Float64("perplexity", tsne.DefaultPerplexity, "t-SNE perplexity")
	iterations := fs.Int("iterations", tsne.DefaultIterations, "t-SNE iterations")
	if _, err := parse(ctx, fs, args); err != nil {
		return err
	}
	if c.output == "" {
		return fmt.Errorf("--output FIG.png is required")
	}
	if err := modelref.Check(c.model.ref, c.model.checkpoint); err != nil {
		return err
	}
	if c.data.dataset == "" && c.data.train == "" {
		c.data.dataset = "clinc150"
	}
	name, _, _, test, oos, err := c.data.intentData()
	if err != nil {
		return err
	}
	p := &prepared{c: &c}
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
	bar := progress.New(s.Progress, "t-SNE", "iterations", int64(*iterations), 0)
	last := 0
	pts, err := tsne.Embed(vecs, tsne.Options{Perplexity: *perplexity, Iterations: *iterations, Seed: *seed,
		Progress: func(done, _ int) { bar.Add(done - last); last = done }})
	bar.Finish()
	if err != nil {
		return err
	}
	title := fmt.Sprintf("%s: %s test", s.Model, name)
	if err := tsne.PlotPNG(c.output, pts, labels, c.data.oosLabel, title); err != nil {
		return err
	}
	log.Info("wrote t-SNE", zap.String("png", c.output), zap.Int("points", len(pts)))
	return nil
}
