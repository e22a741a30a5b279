package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/evaluate"
	"convrep/evaluate/finetune"
	"convrep/models"
	"convrep/tokenizers"
)

// ftFlags are the fine-tuning settings (DSE Appendix B defaults).
type ftFlags struct {
	epochs, batch, patience int
	lr                      float64
}

// fineTune runs the trials with the fine-tuning flags, each on a fresh copy of --model.
func fineTune(ctx context.Context, c *common, f ftFlags, cfg finetune.Config, runs []finetune.Trial, score finetune.Scorer, dataset, task string,
	metrics []string, settings map[string]any, log *zap.Logger) ([]evaluate.Row, string, error) {
	cfg.Epochs, cfg.BatchSize, cfg.LR, cfg.Patience = f.epochs, f.batch, f.lr, f.patience
	if !c.quiet {
		cfg.Progress = os.Stderr
	}
	load := func() (*models.Model, *tokenizers.Tokenizer, string, error) { return loadModel(ctx, c.model, log) }
	return finetune.Trials(ctx, load, cfg, runs, score, dataset, task, metrics, settings, log)
}

func (f *ftFlags) register(fs *flag.FlagSet, lr float64) {
	fs.IntVar(&f.epochs, "epochs", 100, "fine-tuning epochs (early stopping on validation may end sooner)")
	fs.IntVar(&f.batch, "ft-batch-size", 32, "fine-tuning batch size")
	fs.IntVar(&f.patience, "patience", 10, "epochs without a better validation score before stopping (negative: never)")
	fs.Float64Var(&f.lr, "lr", lr, "learning rate (AdamW)")
}

// readActs reads a dialogue-act set by name.
func readActs(d dataFlags) (*evaluate.ActSet, error) {
	root, err := d.evalRoot()
	if err != nil {
		return nil, err
	}
	switch d.dataset {
	case "dstc2":
		return evaluate.ReadDSTC2(filepath.Join(root, "dstc2"))
	case "gsim":
		return evaluate.ReadGSIM(filepath.Join(root, "gsim_m2m"))
	case "multiwoz":
		return evaluate.ReadMultiWOZActs(filepath.Join(root, "multiwoz21"))
	}
	return nil, fmt.Errorf("--dataset %q has no dialogue acts (known: dstc2, gsim, multiwoz)", d.dataset)
}

func runActs(ctx context.Context, args []string, log *zap.Logger) error {
	var c common
	var f ftFlags
	fs := newFlags("acts", "--model M --dataset dstc2|gsim|multiwoz [--shots 10,20 | --fractions 0.01,0.1,1] [flags]",
		"Dialogue act prediction by fine-tuning (DSE Appendix B, FutureTOD §3.2): multi-label, binary cross-entropy, micro\n"+
			"and macro F1 on the test split. The input is the dialogue history up to the system turn, truncated from the head.\n"+
			"--shots n draws up to n examples per act from the training split (and a validation set from what is left);\n"+
			"--fractions takes that share of the training examples (MultiWOZ: 1%, 10%, all). One fresh model per run.")
	c.register(fs, 32)
	f.register(fs, 5e-5)
	shots := fs.String("shots", "", "few-shot sizes, examples per act (DSTC2, GSIM: 10,20)")
	fractions := fs.String("fractions", "", "shares of the training data (MultiWOZ: 0.01,0.1,1)")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	p, err := prepare(&c, *shots != "", *shots)
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
	var runs []finetune.Trial
	test := finetune.ActExamples(set.Test, set.Labels, sep, false)
	switch {
	case *shots != "" && *fractions != "":
		return fmt.Errorf("give --shots or --fractions, not both")
	case *shots != "":
		for _, k := range p.shots {
			for _, seed := range p.seeds {
				tr, va, err := set.FewShotSplits(k, seed)
				if err != nil {
					return err
				}
				runs = append(runs, finetune.Trial{Variant: fmt.Sprintf("%d-shot", k), Seed: seed, Train: finetune.ActExamples(tr, set.Labels, sep, false),
					Val: finetune.ActExamples(va, set.Labels, sep, false)})
			}
		}
	default:
		fr := *fractions
		if fr == "" {
			fr = "1"
		}
		for _, part := range strings.Split(fr, ",") {
			x, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
			if err != nil || x <= 0 || x > 1 {
				return fmt.Errorf("--fractions %q: %q is not in (0, 1]", fr, part)
			}
			for _, seed := range p.seeds {
				order := rand.New(rand.NewPCG(seed, 0x6672616374696f6e)).Perm(len(pool)) // "fraction"
				n := max(1, int(x*float64(len(pool))+0.5))
				tr := make([]evaluate.ActExample, n)
				for i := range tr {
					tr[i] = pool[order[i]]
				}
				runs = append(runs, finetune.Trial{Variant: fmt.Sprintf("%g%% of train", 100*x), Seed: seed, Train: finetune.ActExamples(tr, set.Labels, sep, false),
					Val: finetune.ActExamples(val, set.Labels, sep, false)})
			}
		}
	}
	start := time.Now()
	cfg := finetune.Config{Classes: len(set.Labels), MultiLabel: true, MaxLength: c.model.maxLength, Truncation: tokenizers.TruncateLeft}
	settings := map[string]any{"epochs": f.epochs, "batch_size": f.batch, "lr": f.lr, "patience": f.patience, "max_length": c.model.maxLength,
		"labels": len(set.Labels), "test_examples": len(test)}
	score := func(clf *finetune.Classifier) (map[string]float64, error) {
		m, err := clf.Evaluate(test)
		return map[string]float64{"micro_f1": m.MicroF1, "macro_f1": m.MacroF1}, err
	}
	rows, model, err := fineTune(ctx, &c, f, cfg, runs, score, set.Dataset, "dialogue-acts", []string{"micro_f1", "macro_f1"}, settings, log)
	if err != nil {
		return err
	}
	res := &evaluate.Result{Model: model, Task: "dialogue-acts", Rows: rows, Notes: append(append([]string{}, set.Notes...), nonEmpty(note)...)}
	res.WallSeconds = time.Since(start).Seconds()
	return writeResult(res, c.output)
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// separator returns the text that joins a history's turns for this model (its separator token, spaced),
// loading the tokenizer once before any run.
func separator(ctx context.Context, c *common, log *zap.Logger) (string, error) {
	model, tok, _, err := loadModel(ctx, c.model, log)
	if err != nil {
		return "", err
	}
	finetune.Free(model)
	sep, _ := tok.SpecialToken("sep_token")
	return datasets.SepFor(sep), nil
}
