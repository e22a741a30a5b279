package suite

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"convrep/evaluate"
	"convrep/evaluate/finetune"
	"convrep/evaluate/sets"
	"convrep/tokenizers"
)

func init() {
	Register(Task{Name: "probe", Section: FineTuning,
		Summary:  "linear probes on frozen representations: bag-of-words and dialogue acts on MultiWOZ (MGT §5.2-5.3)",
		Synopsis: "--model M --probe bow|acts [--dataset multiwoz] [flags]",
		About: "Linear probes on frozen representations (MGT §5.2-5.3): the encoder embeds each MultiWOZ dialogue context (the\n" +
			"turns before a system response) once, and only a linear layer trains. bow predicts the words of the context's\n" +
			"last utterance; acts predicts the dialogue acts of the next system response. Micro and macro F1 on the test split.",
		Data: "MultiWOZ 2.1 (multiwoz21/) under --data-root (or DSTC2, GSIM: any set of dialogue acts)",
		New:  func() Options { return new(ProbeOptions) }})
}

// ProbeOptions are evaluate probe's settings.
type ProbeOptions struct {
	Common
	Tuning Tuning
	Probe  string // bow or acts
}

// Flags declares evaluate probe's flags.
func (o *ProbeOptions) Flags(f *Flags) {
	o.flags(f, -1)
	tuningFlag(f, &o.Common, &o.Tuning, "probe", &ProbeProtocol)
	f.StringVar(&o.Probe, "probe", "bow", "bow or acts")
}

// Run trains a linear layer on the frozen encoder's embeddings per seed, and writes the probe's F1 scores.
func (o *ProbeOptions) Run(ctx context.Context, log *zap.Logger) error {
	c, cfg, settings, probe := &o.Common, o.Tuning.Config, o.Tuning.settings(), o.Probe
	if probe != "bow" && probe != "acts" {
		return fmt.Errorf("--probe %q is not bow or acts", probe)
	}
	if c.Data.Dataset == "" {
		c.Data.Dataset = "multiwoz"
	}
	a, err := openActs(ctx, c, log)
	if err != nil {
		return err
	}
	p, set, pool, val, format := a.p, a.set, a.pool, a.val, a.format
	labels := set.Labels
	build := func(ex []sets.ActExample) []finetune.Example {
		return finetune.ContextActExamples(ex, labels, format)
	}
	if probe == "bow" {
		labels = finetune.BOWVocabulary(pool)
		build = func(ex []sets.ActExample) []finetune.Example { return finetune.BOWExamples(ex, labels, format) }
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
