package experiment

import (
	"cmp"
	"fmt"
	"math"
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
		validateSizes(r, int64(e.Model.MaxLength), fail)
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
	switch d := e.Data; {
	case len(d.Corpora) == 0 && len(d.Files) == 0:
		fail("data: give data.corpora, data.files or both")
	case len(d.Corpora) > 0 && d.Root == "":
		fail("data.root is required: the folder holding the pretraining corpora")
	}
	if fs := e.Data.FileSet(); fs != nil {
		if err := fs.Validate(); err != nil {
			fail("data.files: %v", err)
		}
	} else if e.Data.Columns != (ColumnsConfig{}) || len(e.Data.Speakers.User)+len(e.Data.Speakers.System)+len(e.Data.Speakers.Drop) > 0 {
		fail("[data.columns] and [data.speakers] say how data.files are read, and data.files is empty")
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
	case "fp16":
		// fp16's 5-bit exponent flushes small gradients to zero unless the loss is scaled before backward
		// (torch.cuda.amp.GradScaler); bf16 has fp32's range and needs no scaler.
		fail("train.precision \"fp16\" is not supported: fp16 needs a gradient scaler, which convrep does not have; use bf16 (or fp32)")
	default:
		fail("train.precision %q is not fp32 or bf16", t.Precision)
	}
	for _, b := range trainBounds(t) {
		if b.value < b.min || b.value > b.max {
			fail("train.%s must be in [%d, %d]%s, got %d", b.key, b.min, b.max, b.why, b.value)
		}
	}
	if t.BatchSize <= maxBatchSize && t.GradAccumulation <= maxGradAccumulation && // so the product cannot wrap
		int64(t.BatchSize)*int64(t.GradAccumulation) > MaxExamplesPerStep {
		fail("train.batch_size × train.grad_accumulation must be at most %d examples per step, got %d × %d",
			MaxExamplesPerStep, t.BatchSize, t.GradAccumulation)
	}
	if t.Epochs < 1 && t.MaxSteps < 1 {
		fail("train: give epochs or max_steps")
	}
	for name, v := range map[string]float64{"lr": t.LR, "head_lr": t.HeadLR} {
		if !(v > 0) || math.IsInf(v, 0) {
			fail("train.%s must be a positive number, got %g", name, v)
		}
	}
	if t.WeightDecay < 0 || t.MaxGradNorm < 0 {
		fail("train.weight_decay and train.max_grad_norm must not be negative")
	}
	switch {
	case !(t.ValidShare >= 0 && t.ValidShare <= MaxValidShare):
		fail("train.valid_share must be in [0, %g], got %g", MaxValidShare, t.ValidShare)
	case t.ValidShare > 0 && t.EvalEvery < 1:
		fail("train.valid_share %g needs train.eval_every, the steps between two validations", t.ValidShare)
	case t.ValidShare == 0 && (t.EvalEvery != 0 || t.EarlyStoppingPatience != 0):
		fail("train.eval_every and train.early_stopping_patience need train.valid_share > 0 (a held-out share to validate on)")
	case t.EvalEvery > 0 && t.LogEvery > 0 && t.EvalEvery%t.LogEvery != 0:
		fail("train.eval_every %d must be a multiple of train.log_every %d (the validation goes into that step's metrics line)", t.EvalEvery, t.LogEvery)
	}
	if o := strings.ToLower(t.Optimizer); o != "adam" && o != "adamw" {
		fail("train.optimizer %q is not adam or adamw", t.Optimizer)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// Bounds of the [train] sizes. They are far above any real run and keep every product the trainer forms
// (examples per step, steps per run) well inside int64, whatever --set gives.
const (
	maxBatchSize        = 1 << 20
	maxGradAccumulation = 1 << 16
	// MaxExamplesPerStep bounds batch_size × grad_accumulation.
	MaxExamplesPerStep = 1 << 24
	// MaxEpochs and MaxSteps bound the run's length: epochs × steps per epoch stays below 2^63 for any
	// data set of fewer than 2^43 examples, and the trainer checks the product anyway.
	MaxEpochs = 1 << 20
	MaxSteps  = 1 << 40
	maxKeep   = 1 << 16
	maxThread = 1 << 12
	// MaxValidShare bounds train.valid_share: a held-out share beyond half is a typo (1 for 0.01).
	MaxValidShare = 0.5
)

// bound is one [train] size and the range it must lie in; why says what the lower bound is for.
type bound struct {
	key      string
	value    int64
	min, max int64
	why      string
}

func trainBounds(t *TrainConfig) []bound {
	return []bound{
		{key: "batch_size", value: int64(t.BatchSize), min: 2, max: maxBatchSize, why: " (in-batch negatives need two)"},
		{key: "grad_accumulation", value: int64(t.GradAccumulation), min: 1, max: maxGradAccumulation},
		{key: "epochs", value: int64(t.Epochs), min: 0, max: MaxEpochs},
		{key: "max_steps", value: t.MaxSteps, min: 0, max: MaxSteps},
		{key: "warmup_steps", value: t.WarmupSteps, min: 0, max: MaxSteps},
		{key: "log_every", value: t.LogEvery, min: 1, max: MaxSteps},
		{key: "checkpoint_every", value: t.CheckpointEvery, min: 1, max: MaxSteps},
		{key: "keep_checkpoints", value: int64(t.KeepCheckpoints), min: 1, max: maxKeep},
		{key: "threads", value: int64(t.Threads), min: 0, max: maxThread},
		{key: "eval_every", value: t.EvalEvery, min: 0, max: MaxSteps},
		{key: "early_stopping_patience", value: t.EarlyStoppingPatience, min: 0, max: MaxSteps},
	}
}

// randomBounds are the largest sizes a [model.random] table may give: far above any model these papers train
// (BERT-large has 24 layers of 1,024), low enough that a typo (layers = 100000) is refused here, not after the
// machine's memory is spent.
var randomBounds = []struct {
	key string
	max int64
	get func(*RandomConfig) int64
}{
	{"layers", 1024, func(r *RandomConfig) int64 { return r.Layers }},
	{"hidden", 65536, func(r *RandomConfig) int64 { return r.Hidden }},
	{"heads", 1024, func(r *RandomConfig) int64 { return r.Heads }},
	{"intermediate", 1 << 18, func(r *RandomConfig) int64 { return r.Intermediate }},
	{"max_positions", 1 << 16, func(r *RandomConfig) int64 { return r.MaxPositions }},
}

// validateSizes checks what a [model.random] table alone decides: each size positive and within randomBounds,
// the heads dividing the hidden size, and inputs of model.max_length tokens fitting the position table.
func validateSizes(r *RandomConfig, maxLength int64, fail func(string, ...any)) {
	ok := true
	for _, b := range randomBounds {
		if v := b.get(r); v < 1 || v > b.max {
			fail("model.random.%s = %d: must be between 1 and %d", b.key, v, b.max)
			ok = false
		}
	}
	if !ok {
		return
	}
	if r.Hidden%r.Heads != 0 {
		fail("model.random.heads = %d does not divide model.random.hidden = %d", r.Heads, r.Hidden)
	}
	if maxLength > r.MaxPositions {
		fail("model.max_length = %d is above model.random.max_positions = %d: the position table has no row for the tokens beyond", maxLength, r.MaxPositions)
	}
}
