package trainer

import (
	"context"

	"github.com/sugarme/gotch"
	"go.uber.org/zap"

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
