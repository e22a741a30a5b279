package finetune

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/safetensors"
	"convrep/tokenizers"
	"convrep/trainer/optim"
)

// Pair is a query (a question, or a dialogue history joined into one text) and its true response.
type Pair struct{ Query, Response string }

// DualConfig sets up response-selection fine-tuning: one shared encoder embeds queries and responses
// (pooled), and each query is trained to pick its response among the batch's (in-batch negatives, softmax
// cross-entropy over cosines / Temperature), as in the dual encoders of DSE Appendix B and MGT.
type DualConfig struct {
	Epochs      int     // default 1
	BatchSize   int     // default 32
	LR          float64 // default 5e-5
	Temperature float64 // default 0.05
	MaxLength   int     // default 64; queries keep their latest tokens
	Pooling     models.Pooling
	// Val are held-out pairs: every EvalEvery steps (0: after every epoch) their mean in-batch loss is
	// measured, the weights with the lowest are kept, and Patience validations in a row without a lower one
	// are tolerated before stopping (TOD-BERT's early stopping on the validation loss: utils/config.py
	// --earlystop "loss", main.py; 0 = 10, negative = never). Without Val the last weights are kept.
	Val       []Pair
	EvalEvery int
	Patience  int
	Seed      uint64
	Progress  io.Writer
}

// DualRun records a dual-encoder fine-tuning run.
type DualRun struct {
	EpochLosses []float64 // mean training loss of each epoch begun
	Steps       int
	BestStep    int       // the step whose weights were kept
	ValSteps    []int     // where validations fell
	ValLosses   []float64 // and the validation losses there
}

// TrainDual fine-tunes m in place on pairs, in the loop Train runs too (loop): full batches of pairs, the
// in-batch loss, validation by the held-out pairs' loss.
func TrainDual(ctx context.Context, m *models.Model, tok *tokenizers.Tokenizer, pairs []Pair, cfg DualConfig) (*DualRun, error) {
	runtime.LockOSThread() // as Train
	defer runtime.UnlockOSThread()
	if cfg.Epochs == 0 {
		cfg.Epochs = 1
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = 32
	}
	if cfg.LR == 0 {
		cfg.LR = 5e-5
	}
	if cfg.Temperature == 0 {
		cfg.Temperature = 0.05
	}
	if cfg.MaxLength == 0 {
		cfg.MaxLength = 64
	}
	if cfg.Pooling == "" {
		cfg.Pooling = models.Mean
	}
	if cfg.Patience == 0 {
		cfg.Patience = 10
	}
	if cfg.BatchSize < 2 || len(pairs) < 2 || cfg.Temperature <= 0 || math.IsNaN(cfg.Temperature) || cfg.EvalEvery < 0 {
		return nil, fmt.Errorf("finetune dual: %d pairs, batch %d, temperature %g, eval every %d: need at least 2 pairs per batch, a positive temperature and a non-negative interval",
			len(pairs), cfg.BatchSize, cfg.Temperature, cfg.EvalEvery)
	}
	if err := torch.ManualSeed(cfg.Seed); err != nil {
		return nil, err
	}
	params := m.Params()
	var tensors []*ts.Tensor
	var names []string
	for _, name := range slices.Sorted(maps.Keys(params)) { // a fixed order, as Classifier.params
		if p := params[name]; p.MustRequiresGrad() {
			tensors, names = append(tensors, p), append(names, name)
		}
	}
	opt, err := optim.New(optim.Config{Kind: optim.AdamW}, []optim.Group{{Name: "encoder", Params: tensors, ParamNames: names, LR: cfg.LR}})
	if err != nil {
		return nil, err
	}
	done, err := loop{name: "finetune dual", examples: len(pairs), epochs: cfg.Epochs, batchSize: cfg.BatchSize, evalEvery: cfg.EvalEvery,
		patience: cfg.Patience, seed: cfg.Seed, fullBatches: true, validates: len(cfg.Val) >= 2, lowerIsBetter: true, progress: cfg.Progress,
		step: func(idx []int) (float64, error) {
			batch := make([]Pair, len(idx))
			for i, j := range idx {
				batch[i] = pairs[j]
			}
			return dualStep(m, tok, opt, batch, cfg)
		},
		validate: func() (float64, error) { return dualLoss(m, tok, cfg.Val, cfg) },
		snapshot: func() (map[string]safetensors.Tensor, error) { return snapshotParams(tensors, names) },
		restore: func(best map[string]safetensors.Tensor) error {
			for i, p := range tensors {
				if err := torch.CopyFromSafetensor(p, best[names[i]]); err != nil {
					return err
				}
			}
			return nil
		},
	}.run(ctx)
	if err != nil {
		return nil, err
	}
	return &DualRun{EpochLosses: done.epochLosses, Steps: done.steps, BestStep: done.bestStep, ValSteps: done.valSteps, ValLosses: done.valValues}, nil
}

// dualLoss is the mean in-batch loss over val in batches of cfg.BatchSize (the last, smaller one too when it
// holds two pairs or more), without dropout or autograd.
func dualLoss(m *models.Model, tok *tokenizers.Tokenizer, val []Pair, cfg DualConfig) (float64, error) {
	sum, n := 0.0, 0
	for start := 0; start < len(val); start += cfg.BatchSize {
		batch := val[start:min(start+cfg.BatchSize, len(val))]
		if len(batch) < 2 {
			break
		}
		err := torch.NoGrad(func() error {
			loss, err := dualBatchLoss(m, tok, batch, cfg, false)
			if err != nil {
				return err
			}
			return torch.Catch("dual validation loss", func() error {
				sum += loss.Float64Values()[0]
				loss.MustDrop()
				return nil
			})
		})
		if err != nil {
			return 0, err
		}
		n++
	}
	return sum / float64(max(n, 1)), nil
}

// snapshotParams copies tensors to host memory by name.
func snapshotParams(tensors []*ts.Tensor, names []string) (map[string]safetensors.Tensor, error) {
	out := make(map[string]safetensors.Tensor, len(tensors))
	for i, p := range tensors {
		st, err := torch.ToSafetensor(names[i], p)
		if err != nil {
			return nil, err
		}
		out[names[i]] = st
	}
	return out, nil
}

// HoldOut splits pairs into training pairs and a fixed validation tenth (seeded, so that every model and
// seed sees the same one); fewer than 20 pairs are all kept for training.
func HoldOut(pairs []Pair) (train, val []Pair) {
	if len(pairs) < 20 {
		return pairs, nil
	}
	order := rand.New(rand.NewPCG(0, 0x686f6c646f7574)).Perm(len(pairs)) // "holdout"
	cut := len(pairs) / 10
	for i, j := range order {
		if i < cut {
			val = append(val, pairs[j])
		} else {
			train = append(train, pairs[j])
		}
	}
	return train, val
}

func dualStep(m *models.Model, tok *tokenizers.Tokenizer, opt *optim.Optimizer, batch []Pair, cfg DualConfig) (float64, error) {
	loss, err := dualBatchLoss(m, tok, batch, cfg, true)
	if err != nil {
		return 0, err
	}
	var v float64
	err = torch.Catch("dual encoder step", func() error {
		var err error
		v, err = optimize(loss, opt)
		return err
	})
	return v, err
}

// dualBatchLoss is the in-batch softmax cross-entropy of batch: query i's true response is response i.
func dualBatchLoss(m *models.Model, tok *tokenizers.Tokenizer, batch []Pair, cfg DualConfig, train bool) (*ts.Tensor, error) {
	qs, rs := make([]string, len(batch)), make([]string, len(batch))
	for i, p := range batch {
		qs[i], rs[i] = p.Query, p.Response
	}
	q, err := pooled(m, tok, qs, cfg.MaxLength, tokenizers.TruncateLeft, cfg.Pooling, train)
	if err != nil {
		return nil, err
	}
	defer q.MustDrop()
	r, err := pooled(m, tok, rs, cfg.MaxLength, tokenizers.TruncateRight, cfg.Pooling, train)
	if err != nil {
		return nil, err
	}
	defer r.MustDrop()
	var loss *ts.Tensor
	err = torch.Catch("dual encoder loss", func() error {
		qn, rn := unit(q), unit(r)
		rt := rn.MustT(false)
		scores := qn.MustMm(rt, false).MustDivScalar(ts.FloatScalar(cfg.Temperature), true)
		torch.Drop(qn, rn, rt)
		target := ts.MustArange(ts.IntScalar(int64(len(batch))), gotch.Int64, scores.MustDevice())
		loss = scores.CrossEntropyForLogits(target)
		torch.Drop(scores, target)
		return nil
	})
	return loss, err
}

// pooled pools the encoder's last layer over texts, with dropout when training.
func pooled(m *models.Model, tok *tokenizers.Tokenizer, texts []string, maxLen int, trunc tokenizers.Truncation, pool models.Pooling, train bool) (*ts.Tensor, error) {
	b, err := tok.EncodeBatch(texts, tokenizers.BatchOptions{MaxLength: min(maxLen, int(m.Config.MaxSequence())), Truncation: trunc})
	if err != nil {
		return nil, err
	}
	in, err := models.BatchInput(b, m.VS.Device())
	if err != nil {
		return nil, err
	}
	defer in.Drop()
	out, err := m.Forward(in, train)
	if err != nil {
		return nil, err
	}
	defer out.Drop()
	return models.Pool(pool, out.Last, in.Mask)
}

// unit divides each row by its L2 norm, so that dot products are cosines.
func unit(x *ts.Tensor) *ts.Tensor {
	n := x.MustNormScalaroptDim(ts.FloatScalar(2), []int64{1}, true, false).MustClampMin(ts.FloatScalar(1e-12), true)
	y := x.MustDiv(n, false)
	n.MustDrop()
	return y
}
