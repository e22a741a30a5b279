package finetune

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strings"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"

	"convrep/internal/torch"
	"convrep/models"
	"convrep/safetensors"
	"convrep/tokenizers"
	"convrep/trainer/optim"
)

// Run records how a fine-tuning run went.
type Run struct {
	Epochs    int       `json:"epochs"`     // epochs begun before the end or the early stop
	Steps     int       `json:"steps"`      // optimiser steps taken
	BestStep  int       `json:"best_step"`  // the step after which the kept weights were validated
	BestScore float64   `json:"best_score"` // their validation score (micro F1 or accuracy)
	ValSteps  []int     `json:"val_steps"`  // the steps after which the model was validated
	ValScores []float64 `json:"val_scores"` // and its scores there
}

// Train fine-tunes m (in place: load a fresh model per run) with a new classifier on train, scoring val every
// cfg.EvalEvery steps (or after every epoch), and returns the classifier holding the weights that scored best.
// Without val, or when no validation came, the last weights are kept.
func Train(ctx context.Context, m *models.Model, tok *tokenizers.Tokenizer, train, val []Example, cfg Config) (*Classifier, *Run, error) {
	// libtorch's grad mode and (OpenMP) thread count are per OS thread: the whole run stays on the caller's.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, nil, err
	}
	for _, set := range []struct {
		name string
		ex   []Example
	}{{"training", train}, {"validation", val}} {
		if err := check(set.ex, cfg); err != nil {
			return nil, nil, fmt.Errorf("finetune: %s set: %w", set.name, err)
		}
	}
	if len(train) == 0 {
		return nil, nil, fmt.Errorf("finetune: no training examples")
	}
	if err := torch.ManualSeed(cfg.Seed); err != nil {
		return nil, nil, err
	}
	c, err := newClassifier(m, tok, cfg)
	if err != nil {
		return nil, nil, err
	}
	encoder, names, head := c.params()
	groups := []optim.Group{{Name: "head", Params: head, ParamNames: []string{"classifier.weight", "classifier.bias"}, LR: cfg.LR}}
	if len(encoder) > 0 {
		groups = append(groups, optim.Group{Name: "encoder", Params: encoder, ParamNames: names, LR: cfg.LR})
	}
	opt, err := optim.New(optim.Config{Kind: optim.AdamW}, groups)
	if err != nil {
		return nil, nil, err
	}
	var cached [][]float32 // a probe's frozen features, computed once
	if cfg.Frozen {
		if cached, err = c.frozenFeatures(texts(train)); err != nil {
			return nil, nil, err
		}
	}
	done, err := loop{name: "finetune", examples: len(train), epochs: cfg.Epochs, batchSize: cfg.BatchSize, evalEvery: cfg.EvalEvery,
		patience: cfg.Patience, seed: cfg.Seed, validates: len(val) > 0, progress: cfg.Progress,
		step:     func(idx []int) (float64, error) { return c.step(opt, train, idx, cached) },
		validate: func() (float64, error) { return c.score(val) },
		snapshot: c.snapshot, restore: c.restore,
	}.run(ctx)
	if err != nil {
		return nil, nil, err
	}
	return c, &Run{Epochs: done.epochs, Steps: done.steps, BestStep: done.bestStep, BestScore: done.best, ValSteps: done.valSteps, ValScores: done.valValues}, nil
}

// step runs one optimiser step on the examples at idx and returns the loss.
func (c *Classifier) step(opt *optim.Optimizer, train []Example, idx []int, cached [][]float32) (float64, error) {
	ex := make([]Example, len(idx))
	for i, j := range idx {
		ex[i] = train[j]
	}
	var x *ts.Tensor
	var err error
	if cached != nil {
		rows := make([][]float32, len(idx))
		for i, j := range idx {
			rows[i] = cached[j]
		}
		x, err = matrix(rows, c.model.VS.Device())
	} else {
		x, err = c.features(texts(ex), true)
	}
	if err != nil {
		return 0, err
	}
	defer x.MustDrop()
	var v float64
	err = torch.Catch("fine-tuning step", func() error {
		l := c.trainLogits(x)
		loss, err := c.loss(l, ex)
		l.MustDrop()
		if err != nil {
			return err
		}
		v, err = optimize(loss, opt)
		return err
	})
	return v, err
}

// optimize backpropagates a scalar loss (and frees it), takes one optimiser step and clears the gradients.
// It returns the loss value, and an error without stepping when the loss is not finite. It panics on a
// libtorch error (callers Catch).
func optimize(loss *ts.Tensor, opt *optim.Optimizer) (float64, error) {
	d := loss.MustDetach(false)
	v := d.Float64Values()[0]
	d.MustDrop()
	if math.IsNaN(v) || math.IsInf(v, 0) {
		loss.MustDrop()
		return v, fmt.Errorf("loss is %v", v)
	}
	err := loss.Backward()
	loss.MustDrop()
	if err != nil {
		return v, err
	}
	if err := opt.Step(); err != nil {
		return v, err
	}
	return v, opt.ZeroGrad()
}

// frozenFeatures returns the fixed encoder's pooled output for texts as Go rows. A probe's encoder does not
// change, so each text is encoded once and kept: the training set once, and the validation set once rather
// than after every epoch.
func (c *Classifier) frozenFeatures(all []string) ([][]float32, error) {
	if c.frozen == nil {
		c.frozen = map[string][]float32{}
	}
	var todo []string
	for _, t := range all {
		if _, ok := c.frozen[t]; !ok {
			todo = append(todo, t)
			c.frozen[t] = nil // queued once
		}
	}
	for start := 0; start < len(todo); start += c.cfg.BatchSize {
		end := min(start+c.cfg.BatchSize, len(todo))
		err := torch.NoGrad(func() error {
			x, err := c.features(todo[start:end], false)
			if err != nil {
				return err
			}
			defer x.MustDrop()
			return torch.Catch("probe features", func() error {
				cpu := x.MustTo(gotch.CPU, false).MustContiguous(true)
				defer cpu.MustDrop()
				vals := cpu.Float64Values()
				h := len(vals) / (end - start)
				for i := 0; i < end-start; i++ {
					row := make([]float32, h)
					for j := range row {
						row[j] = float32(vals[i*h+j])
					}
					c.frozen[todo[start+i]] = row
				}
				return nil
			})
		})
		if err != nil {
			return nil, err
		}
	}
	out := make([][]float32, len(all))
	for i, t := range all {
		out[i] = c.frozen[t]
	}
	return out, nil
}

func matrix(rows [][]float32, dev gotch.Device) (*ts.Tensor, error) {
	var x *ts.Tensor
	err := torch.Catch("features to a tensor", func() error {
		flat := make([]float32, 0, len(rows)*len(rows[0]))
		for _, r := range rows {
			flat = append(flat, r...)
		}
		x = ts.MustOfSlice(flat).MustView([]int64{int64(len(rows)), int64(len(rows[0]))}, true).MustTo(dev, true)
		return nil
	})
	return x, err
}

// snapshot copies the trained weights (the classifier's, and the encoder's unless frozen) to host memory.
func (c *Classifier) snapshot() (map[string]safetensors.Tensor, error) {
	out := map[string]safetensors.Tensor{}
	encoder, names, head := c.params()
	names = append(names, "classifier.weight", "classifier.bias")
	for i, p := range append(encoder, head...) {
		st, err := torch.ToSafetensor(names[i], p)
		if err != nil {
			return nil, err
		}
		out[names[i]] = st
	}
	return out, nil
}

func (c *Classifier) restore(s map[string]safetensors.Tensor) error {
	encoder, names, head := c.params()
	names = append(names, "classifier.weight", "classifier.bias")
	for i, p := range append(encoder, head...) {
		if err := torch.CopyFromSafetensor(p, s[names[i]]); err != nil {
			return err
		}
	}
	return nil
}

// check refuses examples the classifier cannot learn from: an empty text, a label out of range, a
// single-label example without exactly one label.
func check(ex []Example, cfg Config) error {
	for i, e := range ex {
		if strings.TrimSpace(e.Text) == "" {
			return fmt.Errorf("example %d has no text", i)
		}
		if !cfg.MultiLabel && len(e.Labels) != 1 {
			return fmt.Errorf("example %d has %d labels, want one", i, len(e.Labels))
		}
		for _, l := range e.Labels {
			if l < 0 || l >= cfg.Classes {
				return fmt.Errorf("example %d: label %d is out of range [0, %d)", i, l, cfg.Classes)
			}
		}
	}
	return nil
}

func texts(ex []Example) []string {
	out := make([]string, len(ex))
	for i, e := range ex {
		out[i] = e.Text
	}
	return out
}
