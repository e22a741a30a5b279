package trainer

import (
	"context"
	"fmt"

	"github.com/sugarme/gotch"
	"go.uber.org/zap"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/tokenizers"
)

// Untrained builds the experiment's backbone exactly as training starts from it (the same files, or the same
// seeded random initialisation), with no objective head: the baseline a trained model is compared with.
func Untrained(ctx context.Context, e *Experiment, dev gotch.Device, log *zap.Logger) (*models.Model, *tokenizers.Tokenizer, error) {
	modelDir, tokDir, err := resolveBackbone(ctx, e.Model, log)
	if err != nil {
		return nil, nil, err
	}
	b, err := buildBackbone(e, modelDir, tokDir, dev, log)
	if err != nil {
		return nil, nil, err
	}
	return b.model, b.tok, nil
}

// FromCheckpoint builds the experiment's backbone and loads its weights from one of the run's checkpoints,
// so that a model can be evaluated at any step of training. Objective heads in the checkpoint are left out;
// a checkpoint of another experiment is refused.
func FromCheckpoint(ctx context.Context, e *Experiment, path string, dev gotch.Device, log *zap.Logger) (*models.Model, *tokenizers.Tokenizer, error) {
	c, err := readCheckpoint(path)
	if err != nil {
		return nil, nil, err
	}
	if c.meta.Experiment != e.digest() {
		return nil, nil, fmt.Errorf("checkpoint %s was written by another experiment (or other settings) than %s", path, e.Name)
	}
	m, tok, err := Untrained(ctx, e, dev, log)
	if err != nil {
		return nil, nil, err
	}
	for name, p := range m.Params() {
		st, ok := c.params[name]
		if !ok {
			return nil, nil, fmt.Errorf("checkpoint %s: no tensor for parameter %s", path, name)
		}
		if err := torch.CopyFromSafetensor(p, st); err != nil {
			return nil, nil, fmt.Errorf("checkpoint %s: %w", path, err)
		}
	}
	log.Info("loaded checkpoint", zap.String("path", path), zap.Int64("step", c.meta.Position.Step))
	return m, tok, nil
}
