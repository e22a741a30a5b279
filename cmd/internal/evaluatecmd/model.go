package evaluatecmd

import (
	"context"
	"strings"

	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/evaluate"
	"convrep/internal/torch"
	"convrep/modelref"
	"convrep/models"
	"convrep/objectives/mgt"
	"convrep/tokenizers"
)

// modelRef says which model to evaluate and how to embed with it.
type modelRef struct {
	ref, device, pooling string
	checkpoint           string // with an experiment file or a run folder: the weights of this checkpoint
	head                 string // with a checkpoint: embed through the contrastive head it holds under this name
	maxLength, batch     int
	threads              int
	// dual: load an MGT model's response encoder too and score by cᵀr (response selection only: the other
	// tasks compare embeddings of one kind, which the context encoder gives).
	dual bool
}

// loadModel loads the model named by m (modelref.Load) on m's device.
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
	model, tok, name, _, err := modelref.Load(ctx, m.ref, m.checkpoint, dev, log)
	return model, tok, name, err
}

// openModel loads the model and returns a Session whose encoders embed as DSE evaluates (masked mean of the
// last layer; contexts truncated from the head).
func openModel(ctx context.Context, m modelRef, log *zap.Logger) (*evaluate.Session, error) {
	l, declared := modelref.Layout(m.ref)
	choice := m.pooling
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
	if m.maxLength == 0 && l.MaxSeqLength > 0 {
		m.maxLength = l.MaxSeqLength
		log.Info("max_length", zap.Int("tokens", m.maxLength), zap.String("from", "the folder's max_seq_length (sentence_bert_config.json); --max-length picks another"))
	}
	model, tok, name, err := loadModel(ctx, m, log)
	if err != nil {
		return nil, err
	}
	sep, _ := tok.SpecialToken("sep_token")
	s := &evaluate.Session{
		Model:   name,
		Enc:     &models.Embedder{Model: model, Tokenizer: tok, Pooling: pooling, MaxLength: m.maxLength, Truncation: tokenizers.TruncateRight},
		Context: &models.Embedder{Model: model, Tokenizer: tok, Pooling: pooling, MaxLength: m.maxLength, Truncation: tokenizers.TruncateLeft},
		Sep:     datasets.SepFor(sep),
		Batch:   m.batch,
	}
	if m.head != "" {
		// DSE evaluates the pooled encoder (§4.2); the head's output is the space its loss compares (§3.1).
		h, err := evaluate.ReadHead(m.checkpoint, m.head, s.Enc)
		if err != nil {
			return nil, err
		}
		s.Enc, s.Context = h, h.Over(s.Context)
		s.Model += " through " + m.head
		log.Info("embedding through the checkpoint's head", zap.String("head", m.head), zap.String("checkpoint", m.checkpoint))
	}
	if !m.dual {
		return s, nil
	}
	resp, from, err := loadResponseEncoder(m, model)
	if err != nil || resp == nil {
		return s, err
	}
	// MGT §3.1: candidates go through the response encoder, contexts through the context encoder, and a
	// candidate scores α = cᵀr (Eq. 4), the unnormalised dot product it was trained with.
	s.ResponseEnc = &models.Embedder{Model: resp, Tokenizer: tok, Pooling: pooling, MaxLength: m.maxLength, Truncation: tokenizers.TruncateRight}
	s.Raw = true
	log.Info("MGT dual encoder: candidates through the response encoder, scored by the dot product (Eq. 4)",
		zap.String("response_encoder", from), zap.String("pooling", string(pooling)))
	return s, nil
}

// loadResponseEncoder loads the response encoder of an MGT model, nil when m is not one: a run folder whose
// newest checkpoint holds param/mgt_response.* tensors, or an experiment file with such a --checkpoint.
// context is the context encoder already loaded (its configuration is the response encoder's).
func loadResponseEncoder(m modelRef, context *models.Model) (*models.Model, string, error) {
	dev := context.VS.Device()
	if strings.HasSuffix(m.ref, ".toml") || m.checkpoint != "" {
		if m.checkpoint == "" {
			return nil, "", nil // an untrained backbone: one encoder
		}
		ok, err := mgt.HasResponseEncoder(m.checkpoint)
		if err != nil || !ok {
			return nil, "", err
		}
		r, err := mgt.ResponseEncoderAt(context.Config, m.checkpoint, dev)
		return r, m.checkpoint, err
	}
	if !mgt.IsDualEncoderRun(m.ref) {
		return nil, "", nil
	}
	r, path, err := mgt.LoadResponseEncoder(m.ref, dev)
	return r, path, err
}
