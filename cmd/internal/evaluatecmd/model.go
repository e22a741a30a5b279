package evaluatecmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sugarme/gotch"
	"go.uber.org/zap"

	"convrep/checkpoint"
	"convrep/datasets"
	"convrep/evaluate"
	"convrep/experiment"
	"convrep/internal/torch"
	"convrep/models"
	"convrep/models/hub"
	"convrep/models/sbert"
	"convrep/objectives/mgt"
	"convrep/rundir"
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

// checkModelRef fails at once on a model path that does not exist, before any data are read.
func checkModelRef(ref, ckpt string) error {
	if strings.Contains(ref, ",") || strings.Contains(ckpt, ",") {
		return fmt.Errorf("--model %q --checkpoint %q: a list is an ensemble, which only evaluate response takes", ref, ckpt)
	}
	if ckpt != "" {
		if _, err := os.Stat(ckpt); err != nil {
			return fmt.Errorf("--checkpoint: %w", err)
		}
		if !strings.HasSuffix(ref, ".toml") {
			if err := checkRunCheckpoint(ref, ckpt); err != nil {
				return err
			}
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

// checkRunCheckpoint checks that checkpoint, given with a run folder as --model, is one of that run's own
// checkpoints (run/checkpoints/step-N.safetensors): the run folder then vouches for its architecture, as the
// experiment's digest does for an experiment file (experiment.AtCheckpoint).
func checkRunCheckpoint(run, ckpt string) error {
	r, err := rundir.Open(run)
	if err != nil {
		return fmt.Errorf("--checkpoint goes with an experiment file or a finished run folder as --model (the checkpoint's own): %s is neither (%w)", run, err)
	}
	own, err := r.IsCheckpointOf(ckpt)
	if err != nil {
		return fmt.Errorf("--checkpoint %s: %v", ckpt, err)
	}
	if !own {
		return fmt.Errorf("--checkpoint %s is not a checkpoint of the run %s (want a file in %s)", ckpt, run, r.CheckpointDir())
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
	if m.checkpoint != "" {
		return runAtCheckpoint(m.ref, m.checkpoint, dev)
	}
	dir := m.ref
	if r, err := rundir.Open(dir); err == nil {
		dir = r.ModelDir() // a convrep run folder
	}
	model, dir, err := models.LoadPretrained(ctx, dir, hub.OptionsFromEnv(), models.LoadOptions{Heads: &models.Heads{}, Device: dev, Logger: log})
	if err != nil {
		return nil, nil, "", err
	}
	tok, err := tokenizers.Load(dir)
	return model, tok, strings.TrimSuffix(m.ref, "/"), err
}

// runAtCheckpoint loads a run folder's model as it was at one of its checkpoints: the architecture and
// tokenizer of run/model, the weights of the checkpoint's param/ tensors (as the trainer wrote them). This is
// how a run whose experiment file was changed by --set (MGT's granularities, the seed members) is evaluated at
// a checkpoint other than its last.
func runAtCheckpoint(run, ckpt string, dev gotch.Device) (*models.Model, *tokenizers.Tokenizer, string, error) {
	dir := rundir.At(run).ModelDir()
	cfg, err := models.ReadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, nil, "", err
	}
	sd, err := rundir.Weights(ckpt)
	if err != nil {
		return nil, nil, "", fmt.Errorf("--checkpoint: %w", err)
	}
	model, err := models.New(cfg, models.Heads{}, dev)
	if err != nil {
		return nil, nil, "", err
	}
	if err := model.LoadTensors(sd, checkpoint.ParamPrefix); err != nil {
		return nil, nil, "", fmt.Errorf("%s: %w", ckpt, err)
	}
	tok, err := tokenizers.Load(dir)
	if err != nil {
		return nil, nil, "", err
	}
	return model, tok, strings.TrimSuffix(run, "/") + " @ " + strings.TrimSuffix(filepath.Base(ckpt), ".safetensors"), nil
}

// openModel loads the model and returns a Session whose encoders embed as DSE evaluates (masked mean of the
// last layer; contexts truncated from the head).
func openModel(ctx context.Context, m modelRef, log *zap.Logger) (*evaluate.Session, error) {
	l, declared := declaredLayout(m.ref)
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

// declaredPooling is the pooling a model folder (or a run folder's model/) declares for sentence-transformers,
// and mean, as DSE evaluates, for anything else (an experiment's untrained backbone, a hub name, a plain
// HuggingFace folder).
func declaredPooling(ref string) models.Pooling {
	if l, ok := declaredLayout(ref); ok {
		return l.Pooling
	}
	return models.Mean
}

// declaredLayout is the sentence-transformers layout a model folder (or a run folder's model/) declares.
func declaredLayout(ref string) (sbert.Layout, bool) {
	for _, dir := range []string{rundir.At(ref).ModelDir(), ref} {
		if l, err := sbert.Read(dir); err == nil {
			return l, true
		}
	}
	return sbert.Layout{}, false
}
