package experiment

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"convrep/models"
	"convrep/objectives"
)

// validate checks what can be checked without touching the disk or the network.
func (e *Experiment) validate() error {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if e.Name == "" {
		fail("name is required")
	}
	if e.OutputDir == "" {
		e.OutputDir = filepath.Join("runs", e.Name)
	}
	if (e.Model.Backbone == "") == (e.Model.Random == nil) {
		fail("model: give either backbone (a folder or hub name) or a [model.random] table, not both or neither")
	}
	if r := e.Model.Random; r != nil {
		r.Arch = cmp.Or(r.Arch, string(models.BERT)) // bert when left out
		if _, err := models.ParseArch(r.Arch); err != nil {
			fail("model.random.arch %v", err)
		}
		if e.Model.Tokenizer == "" {
			fail("model.tokenizer is required with [model.random]: the folder of the vocabulary to use")
		}
	}
	if p := e.Model.Dropout; p != nil {
		switch {
		case e.Model.Random != nil:
			fail("model.dropout is for a pretrained backbone; a [model.random] one takes model.random.dropout")
		case !(*p >= 0 && *p < 1):
			fail("model.dropout %v must be in [0, 1)", *p)
		}
	}
	if e.Model.MaxLength < 2 {
		fail("model.max_length must be at least 2, got %d", e.Model.MaxLength)
	}
	if t := e.Model.Truncation; t != "right" && t != "left" {
		fail("model.truncation %q is not right or left", t)
	}
	if name, _ := e.Objective["name"].(string); name == "" {
		fail("objective.name is required (one of %s)", strings.Join(objectives.Names(), ", "))
	} else if cfg, err := objectives.Parse(e.Objective); err != nil {
		fail("[objective]: %v", err)
	} else {
		e.objective = cfg
	}
	if e.Data.Root == "" {
		fail("data.root is required: the folder holding the pretraining corpora")
	}
	if len(e.Data.Corpora) == 0 {
		fail("data.corpora is empty")
	}
	if e.Data.MinWords < 0 || e.Data.MaxExamples < 0 {
		fail("data.min_words and data.max_examples must not be negative")
	}
	switch d := e.Distributed; {
	case d.Backend != "auto" && d.Backend != "gloo" && d.Backend != "nccl":
		fail("distributed.backend %q is not auto, gloo or nccl", d.Backend)
	case d.BucketMB < 1 || d.TimeoutS < 1:
		fail("distributed.bucket_mb and distributed.timeout_s must be positive")
	}
	t := &e.Train
	switch t.Precision {
	case "fp32":
		t.Precision = ""
	case "", "bf16":
	default:
		fail("train.precision %q is not fp32 or bf16", t.Precision)
	}
	if t.BatchSize < 2 {
		fail("train.batch_size must be at least 2 (in-batch negatives), got %d", t.BatchSize)
	}
	if t.Epochs < 1 && t.MaxSteps < 1 {
		fail("train: give epochs or max_steps")
	}
	if t.MaxSteps < 0 || t.WarmupSteps < 0 || t.LogEvery < 1 || t.CheckpointEvery < 1 || t.KeepCheckpoints < 1 || t.GradAccumulation < 1 || t.Threads < 0 {
		fail("train: max_steps, warmup_steps and threads must not be negative; log_every, checkpoint_every, keep_checkpoints and grad_accumulation must be positive")
	}
	for name, v := range map[string]float64{"lr": t.LR, "head_lr": t.HeadLR} {
		if !(v > 0) || math.IsInf(v, 0) {
			fail("train.%s must be a positive number, got %g", name, v)
		}
	}
	if t.WeightDecay < 0 || t.MaxGradNorm < 0 {
		fail("train.weight_decay and train.max_grad_norm must not be negative")
	}
	if o := strings.ToLower(t.Optimizer); o != "adam" && o != "adamw" {
		fail("train.optimizer %q is not adam or adamw", t.Optimizer)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}
