package finetune

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/progress"
	"convrep/internal/torch"
	"convrep/models"
	"convrep/tokenizers"
	"convrep/trainer/optim"
)

// Pair is a query (a question, or a dialogue history joined into one text) and its true response.
type Pair struct{ Query, Response string }

// DualConfig sets up response-selection fine-tuning: one shared encoder embeds queries and responses
// (mean-pooled), and each query is trained to pick its response among the batch's (in-batch negatives,
// softmax cross-entropy over dot products / Temperature), as in the dual encoders of DSE Appendix B and MGT.
type DualConfig struct {
	Epochs      int     // default 1
	BatchSize   int     // default 32
	LR          float64 // default 5e-5
	Temperature float64 // default 0.05
	MaxLength   int     // default 64; queries keep their latest tokens
	Seed        uint64
	Progress    io.Writer
}

// TrainDual fine-tunes m in place on pairs and returns the mean loss of each epoch.
func TrainDual(ctx context.Context, m *models.Model, tok *tokenizers.Tokenizer, pairs []Pair, cfg DualConfig) ([]float64, error) {
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
	if cfg.BatchSize < 2 || len(pairs) < 2 || cfg.Temperature <= 0 || math.IsNaN(cfg.Temperature) {
		return nil, fmt.Errorf("finetune dual: %d pairs, batch %d, temperature %g: need at least 2 pairs per batch and a positive temperature", len(pairs), cfg.BatchSize, cfg.Temperature)
	}
	if err := torch.ManualSeed(cfg.Seed); err != nil {
		return nil, err
	}
	var params []*ts.Tensor
	var names []string
	for name, p := range m.Params() {
		if p.MustRequiresGrad() {
			params, names = append(params, p), append(names, name)
		}
	}
	opt, err := optim.New(optim.Config{Kind: optim.AdamW}, []optim.Group{{Name: "encoder", Params: params, ParamNames: names, LR: cfg.LR}})
	if err != nil {
		return nil, err
	}
	g := rand.New(rand.NewPCG(cfg.Seed, batchStream))
	steps := cfg.Epochs * (len(pairs) / cfg.BatchSize)
	bar := progress.New(cfg.Progress, "fine-tuning", "steps", int64(steps), 0)
	defer bar.Finish()
	var losses []float64
	for epoch := 0; epoch < cfg.Epochs; epoch++ {
		order := g.Perm(len(pairs))
		sum, n := 0.0, 0
		for start := 0; start+cfg.BatchSize <= len(order); start += cfg.BatchSize { // full batches: equal negatives
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("finetune dual: stopped in epoch %d: %w", epoch+1, err)
			}
			batch := make([]Pair, cfg.BatchSize)
			for i, j := range order[start : start+cfg.BatchSize] {
				batch[i] = pairs[j]
			}
			v, err := dualStep(m, tok, opt, batch, cfg)
			if err != nil {
				return nil, fmt.Errorf("finetune dual: epoch %d: %w", epoch+1, err)
			}
			sum, n = sum+v, n+1
			bar.Add(1)
		}
		losses = append(losses, sum/float64(max(n, 1)))
	}
	return losses, nil
}

func dualStep(m *models.Model, tok *tokenizers.Tokenizer, opt *optim.Optimizer, batch []Pair, cfg DualConfig) (float64, error) {
	qs, rs := make([]string, len(batch)), make([]string, len(batch))
	for i, p := range batch {
		qs[i], rs[i] = p.Query, p.Response
	}
	q, err := pooled(m, tok, qs, cfg.MaxLength, tokenizers.TruncateLeft)
	if err != nil {
		return 0, err
	}
	defer q.MustDrop()
	r, err := pooled(m, tok, rs, cfg.MaxLength, tokenizers.TruncateRight)
	if err != nil {
		return 0, err
	}
	defer r.MustDrop()
	var v float64
	err = torch.Catch("dual encoder step", func() error {
		qn, rn := unit(q), unit(r)
		rt := rn.MustT(false)
		scores := qn.MustMm(rt, false).MustDivScalar(ts.FloatScalar(cfg.Temperature), true)
		torch.Drop(qn, rn, rt)
		target := ts.MustArange(ts.IntScalar(int64(len(batch))), gotch.Int64, scores.MustDevice())
		loss := scores.CrossEntropyForLogits(target)
		torch.Drop(scores, target)
		var err error
		v, err = optimize(loss, opt)
		return err
	})
	return v, err
}

// pooled mean-pools the encoder's last layer over texts, with dropout (training).
func pooled(m *models.Model, tok *tokenizers.Tokenizer, texts []string, maxLen int, trunc tokenizers.Truncation) (*ts.Tensor, error) {
	b, err := tok.EncodeBatch(texts, tokenizers.BatchOptions{MaxLength: min(maxLen, int(m.Config.MaxSequence())), Truncation: trunc})
	if err != nil {
		return nil, err
	}
	in, err := models.BatchInput(b, m.VS.Device())
	if err != nil {
		return nil, err
	}
	defer in.Drop()
	out, err := m.Forward(in, true)
	if err != nil {
		return nil, err
	}
	defer out.Drop()
	return models.Pool(models.Mean, out.Last, in.Mask)
}

// unit divides each row by its L2 norm, so that dot products are cosines.
func unit(x *ts.Tensor) *ts.Tensor {
	n := x.MustNormScalaroptDim(ts.FloatScalar(2), []int64{1}, true, false).MustClampMin(ts.FloatScalar(1e-12), true)
	y := x.MustDiv(n, false)
	n.MustDrop()
	return y
}
