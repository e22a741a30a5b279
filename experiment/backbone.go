package experiment

import (
	"context"
	"fmt"

	"github.com/sugarme/gotch"
	"go.uber.org/zap"

	"convrep/checkpoint"
	"convrep/internal/torch"
	"convrep/models"
	"convrep/models/hub"
	"convrep/tokenizers"
)

// Backbone is the encoder an experiment trains and its tokenizer.
type Backbone struct {
	Model *models.Model
	Tok   *tokenizers.Tokenizer
	// ModelDir is the pretrained backbone's folder ("" for a random one); TokDir the tokenizer's.
	ModelDir, TokDir string
}

// Resolve finds the backbone's files (a folder, the HuggingFace cache, or a download) and the tokenizer's
// folder, without building anything: a missing backbone fails before any work.
func Resolve(ctx context.Context, m ModelConfig, log *zap.Logger) (modelDir, tokDir string, err error) {
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

// Build loads the pretrained backbone from modelDir, or builds a random one from the experiment's sizes and
// the tokenizer's vocabulary. libtorch is seeded with seed first, so a random initialisation repeats. What
// the objective needs comes first: its special tokens join the tokenizer (the embeddings grow to fit) and
// the model gets its heads.
func (e *Experiment) Build(modelDir, tokDir string, seed int64, dev gotch.Device, log *zap.Logger) (*Backbone, error) {
	tok, err := tokenizers.Load(tokDir)
	if err != nil {
		return nil, fmt.Errorf("model.tokenizer: %w", err)
	}
	need := e.objective.Needs()
	if n := tok.AddSpecialTokens(need.SpecialTokens...); n > 0 {
		log.Info("added the objective's special tokens", zap.Strings("tokens", need.SpecialTokens), zap.Int("new_ids", n))
	}
	if err := torch.ManualSeed(uint64(seed)); err != nil {
		return nil, err
	}
	b := &Backbone{Tok: tok, ModelDir: modelDir, TokDir: tokDir}
	if e.Model.Random == nil {
		b.Model, err = models.Load(modelDir, models.LoadOptions{Heads: &need.Heads, VocabSize: int64(tok.VocabSize()),
			Dropout: e.Model.Dropout, Device: dev, Logger: log})
		return b, err
	}
	r := e.Model.Random
	cfg, err := r.ModelConfig(tok)
	if err != nil {
		return nil, err
	}
	b.Model, err = models.New(cfg, need.Heads, dev)
	if err != nil {
		return nil, fmt.Errorf("model.random: %w", err)
	}
	log.Info("built a randomly initialised backbone", zap.String("arch", r.Arch), zap.Int64("layers", r.Layers),
		zap.Int64("hidden", r.Hidden), zap.Int("vocab", tok.VocabSize()))
	return b, nil
}

// Untrained builds the experiment's backbone exactly as training starts from it (the same files, or the same
// seeded random initialisation), with the heads and tokens its objective needs but without the parameters
// the objective adds: the baseline a trained model is compared with.
func Untrained(ctx context.Context, e *Experiment, dev gotch.Device, log *zap.Logger) (*Backbone, error) {
	modelDir, tokDir, err := Resolve(ctx, e.Model, log)
	if err != nil {
		return nil, err
	}
	return e.Build(modelDir, tokDir, e.Seed, dev, log)
}

// AtCheckpoint builds the experiment's backbone and loads its weights from one of the run's checkpoints,
// so that a model can be evaluated at any step of training. Objective heads in the checkpoint are left out;
// a checkpoint of another experiment is refused.
func AtCheckpoint(ctx context.Context, e *Experiment, path string, dev gotch.Device, log *zap.Logger) (*Backbone, error) {
	c, err := checkpoint.Read(path)
	if err != nil {
		return nil, err
	}
	if c.Meta.Experiment != e.Digest() {
		return nil, fmt.Errorf("checkpoint %s was written by another experiment (or other settings) than %s", path, e.Name)
	}
	b, err := Untrained(ctx, e, dev, log)
	if err != nil {
		return nil, err
	}
	for name, p := range b.Model.Params() {
		st, ok := c.Params[name]
		if !ok {
			return nil, fmt.Errorf("checkpoint %s: no tensor for parameter %s", path, name)
		}
		if err := torch.CopyFromSafetensor(p, st); err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", path, err)
		}
	}
	log.Info("loaded checkpoint", zap.String("path", path), zap.Int64("step", c.Meta.Position.Step))
	return b, nil
}

// ModelConfig is the configuration of the model r builds over tok's vocabulary (its pad id the tokenizer's).
func (r *RandomConfig) ModelConfig(tok *tokenizers.Tokenizer) (*models.Config, error) {
	cfg, err := models.NewConfig(models.Arch(r.Arch), models.Sizes{VocabSize: int64(tok.VocabSize()), HiddenSize: r.Hidden,
		NumLayers: r.Layers, NumHeads: r.Heads, IntermediateSize: r.Intermediate, MaxSequence: r.MaxPositions,
		PadTokenID: tok.PadID(), Dropout: r.Dropout, InitializerRange: r.InitializerRange})
	if err != nil {
		return nil, fmt.Errorf("model.random: %w", err)
	}
	return cfg, nil
}
