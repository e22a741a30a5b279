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

func init() {
	Register(Task{Name: "tsne", Section: Similarity,
		Summary:  "a t-SNE PNG of CLINC150 test coloured by intent, out-of-scope in black (Figure 1)",
		Synopsis: "--model M --output FIG.png [flags]",
		About: "A t-SNE of the model's embeddings of CLINC150's test queries, coloured by intent, out-of-scope queries in black\n" +
			"(the papers' Figure 1). Barnes-Hut t-SNE after PCA to 50 dimensions; the same seed gives the same picture.",
		Data: "CLINC150's test split (clinc150/data/data_full.json) under --data-root, or a --train/--test pair's test file",
		New:  func() Options { return new(TSNEOptions) }})
}

// TSNEOptions are evaluate tsne's settings.
type TSNEOptions struct {
	Common
	Seed       uint64
	Perplexity float64
	Iterations int
}

// Flags declares evaluate tsne's flags.
func (o *TSNEOptions) Flags(f *Flags) {
	o.flags(f, 0)
	f.Uint64Var(&o.Seed, "seed", 0, "t-SNE seed")
	f.Float64Var(&o.Perplexity, "perplexity", tsne.DefaultPerplexity, "t-SNE perplexity")
	f.IntVar(&o.Iterations, "iterations", tsne.DefaultIterations, "t-SNE iterations")
}

// Run draws the t-SNE picture.
func (o *TSNEOptions) Run(ctx context.Context, log *zap.Logger) error {
	c, seed, perplexity, iterations := &o.Common, o.Seed, o.Perplexity, o.Iterations
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
