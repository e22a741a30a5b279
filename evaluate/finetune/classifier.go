package finetune

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/tokenizers"
)

// Example is one text with the indices of its labels (one for single-label tasks).
type Example struct {
	Text   string
	Labels []int
}

// Config sets up a fine-tuning run. Zero values take the defaults of DSE Appendix B.1's dialogue act
// prediction; cmd/evaluate fills in a paper's protocol for its task (Defaults).
type Config struct {
	Classes    int
	MultiLabel bool // sigmoid and binary cross-entropy per label (dialogue acts), else softmax cross-entropy
	Frozen     bool // a linear probe: the encoder is fixed and only the classifier trains
	Epochs     int  // default 100
	BatchSize  int  // default 32
	LR         float64
	// EvalEvery is how many optimiser steps pass between validations (DSE B.1: every 30 steps for acts;
	// FutureTOD App. B: every 50); 0 validates after every epoch.
	EvalEvery int
	// Patience is how many validations in a row without a better score the run tolerates: one more ends it
	// (TOD-BERT main.py: cnt > patience); 0 = 10, negative = never.
	Patience   int
	MaxLength  int                   // tokens, default 32
	Truncation tokenizers.Truncation // TruncateLeft keeps a dialogue history's latest turns
	Pooling    models.Pooling        // default mean, the representation DSE evaluates; cls for FutureTOD §3.2
	// Dropout is the dropout probability on the pooled representation before the linear layer, in training
	// ("the dropout at the classification layer", DSE B.1: 0.1 intent, 0.2 acts); 0 = none.
	Dropout  float64
	Seed     uint64
	Progress io.Writer // epoch progress bar (nil draws none)
}

func (c Config) withDefaults() (Config, error) {
	if c.Classes < 2 && !(c.MultiLabel && c.Classes == 1) {
		return c, fmt.Errorf("finetune: %d classes", c.Classes)
	}
	if c.Epochs == 0 {
		c.Epochs = 100
	}
	if c.BatchSize == 0 {
		c.BatchSize = 32
	}
	if c.LR == 0 {
		c.LR = 5e-5
		if c.Frozen {
			c.LR = 1e-3 // a linear layer alone needs a larger step
		}
	}
	if c.Patience == 0 {
		c.Patience = 10
	}
	if c.MaxLength == 0 {
		c.MaxLength = 32
	}
	if c.Pooling == "" {
		c.Pooling = models.Mean
	}
	if c.Epochs < 0 || c.BatchSize < 1 || c.LR < 0 || math.IsNaN(c.LR) || c.MaxLength < 2 || c.EvalEvery < 0 ||
		!(c.Dropout >= 0 && c.Dropout < 1) {
		return c, fmt.Errorf("finetune: epochs %d, batch size %d, lr %g, max length %d, eval every %d steps, dropout %g",
			c.Epochs, c.BatchSize, c.LR, c.MaxLength, c.EvalEvery, c.Dropout)
	}
	return c, nil
}

// Classifier is an encoder with a linear layer on its pooled output.
type Classifier struct {
	model *models.Model
	tok   *tokenizers.Tokenizer
	cfg   Config
	w, b  *ts.Tensor // [C,H], [C]
	// frozen holds a probe's pooled features by text (see frozenFeatures).
	frozen map[string][]float32
}

// newClassifier adds a freshly initialised linear layer, torch.nn.Linear's U(−1/√H, 1/√H), to m.
func newClassifier(m *models.Model, tok *tokenizers.Tokenizer, cfg Config) (*Classifier, error) {
	c := &Classifier{model: m, tok: tok, cfg: cfg}
	h := m.Config.HiddenSize
	bound := 1 / math.Sqrt(float64(h))
	err := torch.Catch("build the classifier", func() error {
		dev := m.VS.Device()
		c.w = uniform([]int64{int64(cfg.Classes), h}, bound, dev)
		c.b = uniform([]int64{int64(cfg.Classes)}, bound, dev)
		return nil
	})
	return c, err
}

func uniform(shape []int64, bound float64, dev gotch.Device) *ts.Tensor {
	x := ts.MustRand(shape, gotch.Float, dev).MustMulScalar(ts.FloatScalar(2*bound), true).MustSubScalar(ts.FloatScalar(bound), true)
	return x.MustSetRequiresGrad(true, true)
}

// params are the tensors the optimiser updates.
func (c *Classifier) params() (encoder []*ts.Tensor, names []string, head []*ts.Tensor) {
	if !c.cfg.Frozen {
		params := c.model.Params()
		for _, name := range slices.Sorted(maps.Keys(params)) { // a fixed order: the optimiser's steps repeat exactly
			if p := params[name]; p.MustRequiresGrad() {
				encoder, names = append(encoder, p), append(names, name)
			}
		}
	}
	return encoder, names, []*ts.Tensor{c.w, c.b}
}

// encode tokenises texts into the model's input.
func (c *Classifier) encode(texts []string) (models.Input, error) {
	batch, err := c.tok.EncodeBatch(texts, tokenizers.BatchOptions{MaxLength: min(c.cfg.MaxLength, int(c.model.Config.MaxSequence())), Truncation: c.cfg.Truncation})
	if err != nil {
		return models.Input{}, err
	}
	return models.BatchInput(batch, c.model.VS.Device())
}

// features pools the encoder's last layer over texts: [N,H]. It panics on a libtorch error (callers Catch).
func (c *Classifier) features(texts []string, train bool) (*ts.Tensor, error) {
	in, err := c.encode(texts)
	if err != nil {
		return nil, err
	}
	defer in.Drop()
	out, err := c.model.Forward(in, train)
	if err != nil {
		return nil, err
	}
	defer out.Drop()
	return models.Pool(c.cfg.Pooling, out.Last, in.Mask)
}

// logits applies the linear layer to pooled features. It panics on a libtorch error (callers Catch).
func (c *Classifier) logits(x *ts.Tensor) *ts.Tensor {
	wt := c.w.MustT(false)
	y := x.MustMm(wt, false).MustAdd(c.b, true)
	wt.MustDrop()
	return y
}

// trainLogits is logits in training: the pooled features pass the classification layer's dropout first
// (torch.nn.Dropout before torch.nn.Linear; a no-op at Dropout 0). It panics on a libtorch error.
func (c *Classifier) trainLogits(x *ts.Tensor) *ts.Tensor {
	if c.cfg.Dropout == 0 {
		return c.logits(x)
	}
	d := ts.MustDropout(x, c.cfg.Dropout, true)
	y := c.logits(d)
	d.MustDrop()
	return y
}

// loss is the mean binary cross-entropy over every label (multi-label) or the softmax cross-entropy.
func (c *Classifier) loss(logits *ts.Tensor, ex []Example) (*ts.Tensor, error) {
	var out *ts.Tensor
	err := torch.Catch("classifier loss", func() error {
		dev := logits.MustDevice()
		if c.cfg.MultiLabel {
			target := make([]float32, len(ex)*c.cfg.Classes)
			for i, e := range ex {
				for _, l := range e.Labels {
					target[i*c.cfg.Classes+l] = 1
				}
			}
			t := ts.MustOfSlice(target).MustView([]int64{int64(len(ex)), int64(c.cfg.Classes)}, true).MustTo(dev, true)
			none := ts.NewTensor()
			out = logits.MustBinaryCrossEntropyWithLogits(t, none, none, 1, false) // reduction 1: mean
			torch.Drop(t, none)
			return nil
		}
		target := make([]int64, len(ex))
		for i, e := range ex {
			target[i] = int64(e.Labels[0])
		}
		t := ts.MustOfSlice(target).MustTo(dev, true)
		out = logits.CrossEntropyForLogits(t)
		t.MustDrop()
		return nil
	})
	return out, err
}

// evalFeatures pools texts without dropout: from the kept features for a probe, else through the encoder.
func (c *Classifier) evalFeatures(texts []string) (*ts.Tensor, error) {
	if !c.cfg.Frozen {
		return c.features(texts, false)
	}
	rows, err := c.frozenFeatures(texts)
	if err != nil {
		return nil, err
	}
	return matrix(rows, c.model.VS.Device())
}

// Scores returns, for each text, a probability per class (sigmoid for multi-label, softmax otherwise),
// computed without dropout or autograd, BatchSize texts at a time.
func (c *Classifier) Scores(texts []string) ([][]float64, error) {
	out := make([][]float64, 0, len(texts))
	for start := 0; start < len(texts); start += c.cfg.BatchSize {
		end := min(start+c.cfg.BatchSize, len(texts))
		err := torch.NoGrad(func() error {
			x, err := c.evalFeatures(texts[start:end])
			if err != nil {
				return err
			}
			defer x.MustDrop()
			return torch.Catch("classifier scores", func() error {
				l := c.logits(x)
				var p *ts.Tensor
				if c.cfg.MultiLabel {
					p = l.MustSigmoid(true)
				} else {
					p = l.MustSoftmax(-1, gotch.Float, true)
				}
				d := p.MustTotype(gotch.Double, true).MustTo(gotch.CPU, true)
				defer d.MustDrop()
				vals := d.Float64Values()
				for i := 0; i < end-start; i++ {
					out = append(out, vals[i*c.cfg.Classes:(i+1)*c.cfg.Classes])
				}
				return nil
			})
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
