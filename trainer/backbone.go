package trainer

import (
	"context"
	"fmt"

	"github.com/sugarme/gotch"
	"go.uber.org/zap"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/models/hub"
	"convrep/objectives"
	"convrep/tokenizers"
)

// backbone is the encoder to train and its tokenizer.
type backbone struct {
	model  *models.Model
	tok    *tokenizers.Tokenizer
	tokDir string
}

// resolveBackbone finds the backbone's files (a folder, the HuggingFace cache, or a download) and the
// tokenizer's folder, without building anything: a missing backbone fails before any work.
func resolveBackbone(ctx context.Context, m ModelConfig, log *zap.Logger) (modelDir, tokDir string, err error) {
	if m.Random == nil {
		opt := hub.OptionsFromEnv()
		opt.Logger = log
		if modelDir, err = hub.Resolve(ctx, m.Backbone, opt); err != nil {
			return "", "", fmt.Errorf("model.backbone: %w", err)
		}
	}
	tokDir = m.Tokenizer
	if tokDir == "" {
		tokDir = modelDir
	}
	return modelDir, tokDir, nil
}

// buildBackbone loads the pretrained backbone, or builds a random one from the experiment's sizes and the
// tokenizer's vocabulary. libtorch is seeded first, so a random initialisation repeats. What the objective
// requires comes first: its special tokens join the tokenizer (the embeddings grow to fit) and the model
// gets its heads.
func buildBackbone(e *Experiment, modelDir, tokDir string, dev gotch.Device, log *zap.Logger) (*backbone, error) {
	tok, err := tokenizers.Load(tokDir)
	if err != nil {
		return nil, fmt.Errorf("model.tokenizer: %w", err)
	}
	name, _ := e.Objective["name"].(string)
	req := objectives.RequirementsOf(name)
	if n := tok.AddSpecialTokens(req.SpecialTokens...); n > 0 {
		log.Info("added the objective's special tokens", zap.Strings("tokens", req.SpecialTokens), zap.Int("new_ids", n))
	}
	if err := torch.ManualSeed(uint64(e.Seed)); err != nil {
		return nil, err
	}
	b := &backbone{tok: tok, tokDir: tokDir}
	if e.Model.Random == nil {
		b.model, err = models.Load(modelDir, models.LoadOptions{Heads: &req.Heads, VocabSize: int64(tok.VocabSize()),
			Dropout: e.Model.Dropout, Device: dev, Logger: log})
		return b, err
	}
	r := e.Model.Random
	cfg := &models.Config{Arch: models.Arch(r.Arch), VocabSize: int64(tok.VocabSize()), HiddenSize: r.Hidden,
		NumLayers: r.Layers, NumHeads: r.Heads, IntermediateSize: r.Intermediate, HiddenAct: "gelu",
		HiddenDropout: r.Dropout, AttentionDropout: r.Dropout, MaxPositions: r.MaxPositions, TypeVocabSize: 2,
		LayerNormEps: 1e-12, PadTokenID: tok.PadID(), InitializerRange: r.InitializerRange, TieWordEmbeddings: true,
		Raw: map[string]any{}}
	switch cfg.Arch {
	case models.RoBERTa:
		cfg.TypeVocabSize, cfg.LayerNormEps = 1, 1e-5
		cfg.MaxPositions += cfg.PadTokenID + 1 // positions start after the pad id
	case models.DistilBERT:
		cfg.TypeVocabSize = 0
	}
	if cfg.InitializerRange == 0 {
		cfg.InitializerRange = 0.02
	}
	b.model, err = models.New(cfg, req.Heads, dev)
	if err != nil {
		return nil, fmt.Errorf("model.random: %w", err)
	}
	log.Info("built a randomly initialised backbone", zap.String("arch", r.Arch), zap.Int64("layers", r.Layers),
		zap.Int64("hidden", r.Hidden), zap.Int("vocab", tok.VocabSize()))
	return b, nil
}
