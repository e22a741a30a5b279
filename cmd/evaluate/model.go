package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/evaluate"
	"convrep/internal/torch"
	"convrep/models"
	"convrep/models/hub"
	"convrep/tokenizers"
	"convrep/trainer"
)

// modelRef says which model to evaluate and how to embed with it.
type modelRef struct {
	ref, device, pooling string
	maxLength, batch     int
	threads              int
}

// checkModelRef fails at once on a model path that does not exist, before any data are read.
func checkModelRef(ref string) error {
	if ref == "" {
		return fmt.Errorf("--model is required (a convrep run folder, a model folder, a hub name, or an experiment .toml for its untrained backbone)")
	}
	looksLikePath := strings.HasPrefix(ref, ".") || filepath.IsAbs(ref) || strings.HasSuffix(ref, ".toml") || strings.Count(ref, "/") > 1
	if _, err := os.Stat(ref); err != nil && looksLikePath {
		return fmt.Errorf("--model %s: %w", ref, err)
	}
	return nil
}

// openModel loads the model named by ref:
//   - an experiment file (.toml): its backbone before training (the untrained baseline, same seed and files);
//   - a convrep run folder (holding model/config.json): the trained model in it;
//   - a model folder or a hub name: as cmd/embed loads it.
//
// It returns a Session whose encoders embed as DSE evaluates (masked mean of the last layer; contexts
// truncated from the head).
func openModel(ctx context.Context, m modelRef, log *zap.Logger) (*evaluate.Session, error) {
	dev, err := torch.ParseDevice(m.device)
	if err != nil {
		return nil, err
	}
	if m.threads > 0 {
		if err := torch.SetNumThreads(m.threads); err != nil {
			return nil, err
		}
	}
	pooling, err := models.ParsePooling(m.pooling)
	if err != nil {
		return nil, err
	}
	var (
		model *models.Model
		tok   *tokenizers.Tokenizer
		name  string
	)
	switch {
	case strings.HasSuffix(m.ref, ".toml"):
		e, err := trainer.LoadExperiment(m.ref, nil)
		if err != nil {
			return nil, err
		}
		if model, tok, err = trainer.Untrained(ctx, e, dev, log); err != nil {
			return nil, err
		}
		name = e.Name + " (untrained)"
	default:
		dir := m.ref
		if _, err := os.Stat(filepath.Join(dir, "model", "config.json")); err == nil {
			dir = filepath.Join(dir, "model") // a convrep run folder
		}
		model, dir, err = models.LoadPretrained(ctx, dir, hub.OptionsFromEnv(), models.LoadOptions{Heads: &models.Heads{}, Device: dev, Logger: log})
		if err != nil {
			return nil, err
		}
		if tok, err = tokenizers.Load(dir); err != nil {
			return nil, err
		}
		name = strings.TrimSuffix(m.ref, "/")
	}
	sep, _ := tok.SpecialToken("sep_token")
	return &evaluate.Session{
		Model:   name,
		Enc:     &models.Embedder{Model: model, Tokenizer: tok, Pooling: pooling, MaxLength: m.maxLength, Truncation: tokenizers.TruncateRight},
		Context: &models.Embedder{Model: model, Tokenizer: tok, Pooling: pooling, MaxLength: m.maxLength, Truncation: tokenizers.TruncateLeft},
		Sep:     datasets.SepFor(sep),
		Batch:   m.batch,
	}, nil
}
