package suite

import (
	"context"
	"strings"

	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/evaluate"
	"convrep/internal/torch"
	"convrep/modelref"
	"convrep/models"
	"convrep/objectives"
	"convrep/rundir"
	"convrep/tokenizers"
)

// Model says which model to evaluate and how to embed with it.
type Model struct {
	Ref, Device, Pooling string // --model (package modelref), cpu or cuda[:N], mean or cls ("": declared, else mean)
	Checkpoint           string // with an experiment file or a run folder: the weights of this checkpoint
	Head                 string // with a checkpoint: embed through the contrastive head it holds under this name
	MaxLength, Batch     int
	Threads              int
	// Dual: load an MGT model's response encoder too and score by cᵀr (response Selection only: the other
	// tasks compare embeddings of one kind, which the context encoder gives).
	Dual bool
}

// loadModel loads the model named by m (modelref.Load) on m's device.
func loadModel(ctx context.Context, m Model, log *zap.Logger) (*models.Model, *tokenizers.Tokenizer, string, error) {
	dev, err := torch.ParseDevice(m.Device)
	if err != nil {
		return nil, nil, "", err
	}
	if m.Threads > 0 {
		if err := torch.SetNumThreads(m.Threads); err != nil {
			return nil, nil, "", err
		}
	}
	model, tok, name, _, err := modelref.Load(ctx, m.Ref, m.Checkpoint, dev, log)
	return model, tok, name, err
}

// Open loads the model and returns a Session whose encoders embed as DSE evaluates (masked mean of the
// last layer; contexts truncated from the head).
func Open(ctx context.Context, m Model, log *zap.Logger) (*evaluate.Session, error) {
	l, declared := modelref.Layout(m.Ref)
	choice := m.Pooling
	if choice == "" {
		choice = string(models.Mean)
		if declared {
			choice = string(l.Pooling)
		}
		log.Info("pooling", zap.String("pooling", choice), zap.String("from", "the model folder (or mean when it declares none); --pooling picks another"))
	}
	pooling, err := models.ParsePooling(choice)
	if err != nil {
		return nil, err
	}
	// Where a task names no length, inputs are cut where sentence-transformers cuts them: at the folder's
	// declared max_seq_length, else at the model's limit.
	if m.MaxLength == 0 && l.MaxSeqLength > 0 {
		m.MaxLength = l.MaxSeqLength
		log.Info("max_length", zap.Int("tokens", m.MaxLength), zap.String("from", "the folder's max_seq_length (sentence_bert_config.json); --max-length picks another"))
	}
	model, tok, name, err := loadModel(ctx, m, log)
	if err != nil {
		return nil, err
	}
	sep, _ := tok.SpecialToken("sep_token")
	s := &evaluate.Session{
		Model:   name,
		Enc:     &models.Embedder{Model: model, Tokenizer: tok, Pooling: pooling, MaxLength: m.MaxLength, Truncation: tokenizers.TruncateRight},
		Context: &models.Embedder{Model: model, Tokenizer: tok, Pooling: pooling, MaxLength: m.MaxLength, Truncation: tokenizers.TruncateLeft},
		Sep:     datasets.SepFor(sep),
		Batch:   m.Batch,
	}
	if m.Head != "" {
		// DSE evaluates the pooled encoder (§4.2); the head's output is the space its loss compares (§3.1).
		h, err := objectives.HeadAt(m.Checkpoint, m.Head)
		if err != nil {
			return nil, err
		}
		s.Enc, s.Context = h.Over(s.Enc), h.Over(s.Context)
		s.Model += " through " + m.Head
		log.Info("embedding through the checkpoint's head", zap.String("head", m.Head), zap.String("checkpoint", m.Checkpoint))
	}
	if !m.Dual {
		return s, nil
	}
	resp, from, err := loadResponseEncoder(m, model)
	if err != nil || resp == nil {
		return s, err
	}
	// MGT §3.1: candidates go through the response encoder, contexts through the context encoder, and a
	// candidate scores α = cᵀr (Eq. 4), the unnormalised dot product it was trained with.
	s.ResponseEnc = &models.Embedder{Model: resp, Tokenizer: tok, Pooling: pooling, MaxLength: m.MaxLength, Truncation: tokenizers.TruncateRight}
	s.Raw = true
	log.Info("MGT dual encoder: candidates through the response encoder, scored by the dot product (Eq. 4)",
		zap.String("response_encoder", from), zap.String("pooling", string(pooling)))
	return s, nil
}

// loadResponseEncoder loads the response encoder of an MGT model, nil when m is not one: a run folder whose
// newest checkpoint holds one, or a --checkpoint that holds one (objectives.ResponseEncoderAt asks the
// objectives: MGT's are its param/mgt_response.* tensors).
// context is the context encoder already loaded (its configuration is the response encoder's).
func loadResponseEncoder(m Model, context *models.Model) (*models.Model, string, error) {
	dev := context.VS.Device()
	if strings.HasSuffix(m.Ref, ".toml") || m.Checkpoint != "" {
		if m.Checkpoint == "" {
			return nil, "", nil // an untrained backbone: one encoder
		}
		r, err := objectives.ResponseEncoderAt(context.Config, m.Checkpoint, dev)
		return r, m.Checkpoint, err
	}
	paths, err := rundir.At(m.Ref).Checkpoints()
	if err != nil || len(paths) == 0 {
		return nil, "", nil // a model folder or a hub name: no checkpoints
	}
	r, err := objectives.ResponseEncoderAt(context.Config, paths[len(paths)-1], dev)
	return r, paths[len(paths)-1], err
}
