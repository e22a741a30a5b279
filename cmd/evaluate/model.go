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
	"convrep/experiment"
	"convrep/internal/torch"
	"convrep/models"
	"convrep/models/hub"
	"convrep/models/sbert"
	"convrep/tokenizers"
)

// modelRef says which model to evaluate and how to embed with it.
type modelRef struct {
	ref, device, pooling string
	checkpoint           string // with an experiment file: the weights of this checkpoint
	maxLength, batch     int
	threads              int
}

// checkModelRef fails at once on a model path that does not exist, before any data are read.
func checkModelRef(ref, checkpoint string) error {
	if strings.Contains(ref, ",") || strings.Contains(checkpoint, ",") {
		return fmt.Errorf("--model %q --checkpoint %q: a list is an ensemble, which only evaluate response takes", ref, checkpoint)
	}
	if checkpoint != "" && !strings.HasSuffix(ref, ".toml") {
		return fmt.Errorf("--checkpoint goes with an experiment file as --model (the checkpoint's own experiment)")
	}
	if checkpoint != "" {
		if _, err := os.Stat(checkpoint); err != nil {
			return fmt.Errorf("--checkpoint: %w", err)
		}
	}
	if ref == "" {
		return fmt.Errorf("--model is required (a convrep run folder, a model folder, a hub name, or an experiment .toml for its untrained backbone)")
	}
	looksLikePath := strings.HasPrefix(ref, ".") || filepath.IsAbs(ref) || strings.HasSuffix(ref, ".toml") || strings.Count(ref, "/") > 1
	if _, err := os.Stat(ref); err != nil && looksLikePath {
		return fmt.Errorf("--model %s: %w", ref, err)
	}
	return nil
}

// loadModel loads the model named by ref:
//   - an experiment file (.toml): its backbone before training (the untrained baseline, same seed and files);
//   - a convrep run folder (holding model/config.json): the trained model in it;
//   - a model folder or a hub name: as cmd/embed loads it.
func loadModel(ctx context.Context, m modelRef, log *zap.Logger) (*models.Model, *tokenizers.Tokenizer, string, error) {
	dev, err := torch.ParseDevice(m.device)
	if err != nil {
		return nil, nil, "", err
	}
	if m.threads > 0 {
		if err := torch.SetNumThreads(m.threads); err != nil {
			return nil, nil, "", err
		}
	}
	if strings.HasSuffix(m.ref, ".toml") {
		e, err := experiment.Load(m.ref, nil)
		if err != nil {
			return nil, nil, "", err
		}
		if m.checkpoint != "" {
			b, err := experiment.AtCheckpoint(ctx, e, m.checkpoint, dev, log)
			if err != nil {
				return nil, nil, "", err
			}
			return b.Model, b.Tok, e.Name + " @ " + strings.TrimSuffix(filepath.Base(m.checkpoint), ".safetensors"), nil
		}
		b, err := experiment.Untrained(ctx, e, dev, log)
		if err != nil {
			return nil, nil, "", err
		}
		return b.Model, b.Tok, e.Name + " (untrained)", nil
	}
	dir := m.ref
	if _, err := os.Stat(filepath.Join(dir, "model", "config.json")); err == nil {
		dir = filepath.Join(dir, "model") // a convrep run folder
	}
	model, dir, err := models.LoadPretrained(ctx, dir, hub.OptionsFromEnv(), models.LoadOptions{Heads: &models.Heads{}, Device: dev, Logger: log})
	if err != nil {
		return nil, nil, "", err
	}
	tok, err := tokenizers.Load(dir)
	return model, tok, strings.TrimSuffix(m.ref, "/"), err
}

// openModel loads the model and returns a Session whose encoders embed as DSE evaluates (masked mean of the
// last layer; contexts truncated from the head).
func openModel(ctx context.Context, m modelRef, log *zap.Logger) (*evaluate.Session, error) {
	choice := m.pooling
	if choice == "" {
		choice = string(declaredPooling(m.ref))
		log.Info("pooling", zap.String("pooling", choice), zap.String("from", "the model folder (or mean when it declares none); --pooling picks another"))
	}
	pooling, err := models.ParsePooling(choice)
	if err != nil {
		return nil, err
	}
	model, tok, name, err := loadModel(ctx, m, log)
	if err != nil {
		return nil, err
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

// declaredPooling is the pooling a model folder (or a run folder's model/) declares for sentence-transformers,
// and mean, as DSE evaluates, for anything else (an experiment's untrained backbone, a hub name, a plain
// HuggingFace folder).
func declaredPooling(ref string) models.Pooling {
	for _, dir := range []string{filepath.Join(ref, "model"), ref} {
		if l, err := sbert.Read(dir); err == nil {
			return l.Pooling
		}
	}
	return models.Mean
}
