package main

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"convrep/evaluate"
	"convrep/evaluate/finetune"
	"convrep/tokenizers"
)

func runProbe(ctx context.Context, args []string, log *zap.Logger) error {
	var c common
	var f ftFlags
	fs := newFlags("probe", "--model M --probe bow|acts [--dataset multiwoz] [flags]",
		"Linear probes on frozen representations (MGT §5.2-5.3): the encoder embeds each MultiWOZ dialogue context (the\n"+
			"turns before a system response) once, and only a linear layer trains. bow predicts the words of the context's\n"+
			"last utterance; acts predicts the dialogue acts of the next system response. Micro and macro F1 on the test split.")
	c.register(fs, 128)
	f.register(fs, 1e-3)
	probe := fs.String("probe", "bow", "bow or acts")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if *probe != "bow" && *probe != "acts" {
		return fmt.Errorf("--probe %q is not bow or acts", *probe)
	}
	if c.data.dataset == "" {
		c.data.dataset = "multiwoz"
	}
	p, err := prepare(&c, false, "")
	if err != nil {
		return err
	}
	set, err := readActs(c.data)
	if err != nil {
		return err
	}
	pool, val, note := finetune.TrainPool(set)
	sep, err := separator(ctx, &c, log)
	if err != nil {
		return err
	}
	labels := set.Labels
	build := func(ex []evaluate.ActExample) []finetune.Example { return finetune.ActExamples(ex, labels, sep, true) }
	if *probe == "bow" {
		labels = finetune.BOWVocabulary(pool)
		build = func(ex []evaluate.ActExample) []finetune.Example { return finetune.BOWExamples(ex, labels, sep) }
	}
	test := build(set.Test)
	var runs []finetune.Trial
	for _, seed := range p.seeds {
		runs = append(runs, finetune.Trial{Variant: "linear probe", Seed: seed, Train: build(pool), Val: build(val)})
	}
	start := time.Now()
	cfg := finetune.Config{Classes: len(labels), MultiLabel: true, Frozen: true, MaxLength: c.model.maxLength, Truncation: tokenizers.TruncateLeft}
	score := func(clf *finetune.Classifier) (map[string]float64, error) {
		m, err := clf.Evaluate(test)
		return map[string]float64{"micro_f1": m.MicroF1, "macro_f1": m.MacroF1}, err
	}
	settings := map[string]any{"probe": *probe, "targets": len(labels), "epochs": f.epochs, "lr": f.lr, "max_length": c.model.maxLength, "test_examples": len(test)}
	rows, model, err := fineTune(ctx, &c, f, cfg, runs, score, set.Dataset, "probe-"+*probe, []string{"micro_f1", "macro_f1"}, settings, log)
	if err != nil {
		return err
	}
	res := &evaluate.Result{Model: model, Task: "probe-" + *probe, Rows: rows, Notes: nonEmpty(note), WallSeconds: time.Since(start).Seconds()}
	if *probe == "bow" {
		res.Notes = append(res.Notes, fmt.Sprintf("Bag-of-words targets: the %d words (lower-cased letter/digit runs) found in the last utterance of at least %d training contexts.", len(labels), finetune.BOWMinCount))
	}
	return writeResult(res, c.output)
}
