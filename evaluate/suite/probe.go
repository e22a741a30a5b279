package suite

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"convrep/evaluate"
	"convrep/evaluate/finetune"
	"convrep/tokenizers"
)

// Probe runs evaluate probe with c and the task's own settings (cmd/internal/evaluatecmd parses them).
func Probe(ctx context.Context, c *Common, cfg finetune.Config, settings map[string]any, probe string, log *zap.Logger) error {
	if probe != "bow" && probe != "acts" {
		return fmt.Errorf("--probe %q is not bow or acts", probe)
	}
	if c.Data.Dataset == "" {
		c.Data.Dataset = "multiwoz"
	}
	a, err := openActs(ctx, c, "", log)
	if err != nil {
		return err
	}
	p, set, pool, val, format := a.p, a.set, a.pool, a.val, a.format
	labels := set.Labels
	build := func(ex []evaluate.ActExample) []finetune.Example {
		return finetune.ContextActExamples(ex, labels, format)
	}
	if probe == "bow" {
		labels = finetune.BOWVocabulary(pool)
		build = func(ex []evaluate.ActExample) []finetune.Example { return finetune.BOWExamples(ex, labels, format) }
	}
	test := build(set.Test)
	var runs []finetune.Trial
	for _, seed := range p.seeds {
		runs = append(runs, finetune.Trial{Variant: "linear probe", Seed: seed, Train: build(pool), Val: build(val)})
	}
	start := time.Now()
	cfg.Classes, cfg.MultiLabel, cfg.Frozen, cfg.Truncation = len(labels), true, true, tokenizers.TruncateLeft
	settings["probe"], settings["targets"], settings["test_examples"], settings["role_tokens"] = probe, len(labels), len(test), format.Roles()
	rows, model, err := fineTune(ctx, c, cfg, runs, actsF1(test), set.Dataset, "probe-"+probe, []string{"micro_f1", "macro_f1"}, settings, log)
	if err != nil {
		return err
	}
	res := &evaluate.Result{Model: model, Task: "probe-" + probe, Rows: rows, Notes: nonEmpty(a.note), WallSeconds: time.Since(start).Seconds()}
	if probe == "bow" {
		res.Notes = append(res.Notes, fmt.Sprintf("Bag-of-words targets: the %d words (lower-cased letter/digit runs) found in the last utterance of at least %d training contexts.", len(labels), finetune.BOWMinCount))
	}
	return writeResult(res, c.Output)
}

// ProbeProtocol is the probes' setting. MGT §5.2-5.3 says only that a linear layer trains on frozen
// representations; these values are ours: a linear layer alone takes a larger step than fine-tuning, it is
// validated after every epoch, no dropout, MultiWOZ contexts up to 128 tokens (latest kept), the pooling the
// model declares.
var ProbeProtocol = finetune.Protocol{Epochs: 100, BatchSize: 32, LR: 1e-3, EvalEvery: -1, Patience: 10, MaxLength: 128,
	Source: "ours: MGT §5.2-5.3 gives no probe setting (100 epochs, batch 32, lr 1e-3, validation per epoch, patience 10, max length 128)"}
