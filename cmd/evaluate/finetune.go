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
	"convrep/internal/torch"
	"convrep/models"
	"convrep/tokenizers"
)

// ftFlags are the fine-tuning settings (DSE Appendix B defaults).
type ftFlags struct {
	epochs, batch, patience int
	lr                      float64
}

func (f *ftFlags) register(fs *flag.FlagSet, lr float64) {
	fs.IntVar(&f.epochs, "epochs", 100, "fine-tuning epochs (early stopping on validation may end sooner)")
	fs.IntVar(&f.batch, "ft-batch-size", 32, "fine-tuning batch size")
	fs.IntVar(&f.patience, "patience", 10, "epochs without a better validation score before stopping (negative: never)")
	fs.Float64Var(&f.lr, "lr", lr, "learning rate (AdamW)")
}

// ftRun is one fine-tuning run: a fresh model, its training and validation examples.
type ftRun struct {
	variant    string
	seed       uint64
	train, val []finetune.Example
}

// scorer measures a fine-tuned classifier on the test set: metric name → value.
type scorer func(*finetune.Classifier) (map[string]float64, error)

// fineTune trains one fresh copy of the model per run and scores each; it returns the rows, one per variant
// and metric over the runs' seeds, and the model's name.
func fineTune(ctx context.Context, c *common, f ftFlags, cfg finetune.Config, runs []ftRun, score scorer, dataset, task string,
	metrics []string, settings map[string]any, log *zap.Logger) ([]evaluate.Row, string, error) {
	type key struct{ variant, metric string }
	values, seeds := map[key][]float64{}, map[key][]uint64{}
	var order []key
	var name string
	for i, r := range runs {
		model, tok, n, err := loadModel(ctx, c.model, log) // a fresh copy: fine-tuning changes the weights
		if err != nil {
			return nil, "", err
		}
		name = n
		cfg.Seed, cfg.Epochs, cfg.BatchSize, cfg.LR, cfg.Patience = r.seed, f.epochs, f.batch, f.lr, f.patience
		if cfg.MaxLength == 0 { // --max-length 0: the model's limit
			cfg.MaxLength = int(model.Config.MaxSequence())
		}
		if !c.quiet {
			cfg.Progress = os.Stderr
		}
		log.Info("fine-tuning", zap.Int("run", i+1), zap.Int("of", len(runs)), zap.String("variant", r.variant), zap.Uint64("seed", r.seed),
			zap.Int("train", len(r.train)), zap.Int("val", len(r.val)))
		clf, run, err := finetune.Train(ctx, model, tok, r.train, r.val, cfg)
		if err != nil {
			freeModel(model)
			return nil, "", err
		}
		got, err := score(clf)
		freeModel(model)
		if err != nil {
			return nil, "", err
		}
		log.Info("fine-tuned", zap.Int("epochs", run.Epochs), zap.Int("best_epoch", run.BestEpoch), zap.Float64("val", run.BestScore))
		for _, m := range metrics {
			k := key{r.variant, m}
			if _, ok := values[k]; !ok {
				order = append(order, k)
			}
			values[k] = append(values[k], got[m])
			seeds[k] = append(seeds[k], r.seed)
		}
	}
	var rows []evaluate.Row
	for _, k := range order {
		mean, std := evaluate.MeanStd(values[k])
		rows = append(rows, evaluate.Row{Model: name, Dataset: dataset, Task: task, Variant: k.variant, Metric: k.metric,
			Mean: mean, Std: std, Seeds: seeds[k], Values: values[k], Settings: settings})
	}
	return rows, name, nil
}

// freeModel releases a model's weights now rather than when the garbage collector gets to them: one model
// per run would otherwise pile up.
func freeModel(m *models.Model) {
	_ = torch.Catch("free the model", func() error { m.VS.Destroy(); return nil })
}

// historyText joins a dialogue history as the model reads it (truncated from the head by the tokenizer).
func historyText(turns []string, sep string) string { return strings.Join(turns, sep) }

func actExamples(ex []evaluate.ActExample, labels []string, sep string, dropLast bool) []finetune.Example {
	pos := map[string]int{}
	for i, l := range labels {
		pos[l] = i
	}
	out := make([]finetune.Example, 0, len(ex))
	for _, e := range ex {
		h := e.History
		if dropLast {
			h = h[:len(h)-1]
		}
		if len(h) == 0 {
			continue
		}
		fe := finetune.Example{Text: historyText(h, sep)}
		for _, l := range e.Labels {
			fe.Labels = append(fe.Labels, pos[l])
		}
		out = append(out, fe)
	}
	return out
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

// trainPool returns the rows fine-tuning draws from and the validation rows: the set's own train and
// validation splits, or, for MultiWOZ whose train split is absent here, a fixed 90/10 split of its validation
// dialogues' examples (seeded, so that every model sees the same one).
func trainPool(s *evaluate.ActSet) (pool, val []evaluate.ActExample, note string) {
	if len(s.Train) > 0 {
		return s.Train, s.Val, ""
	}
	order := rand.New(rand.NewPCG(0, 0x6d756c7469776f7a)).Perm(len(s.Val)) // "multiwoz"
	cut := len(order) / 10
	for i, j := range order {
		if i < cut {
			val = append(val, s.Val[j])
		} else {
			pool = append(pool, s.Val[j])
		}
	}
	return pool, val, fmt.Sprintf("%s has no train split here: fine-tuning draws from 90%% of its validation examples and early-stops on the other 10%% (fixed, seed 0).", s.Dataset)
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
	pool, val, note := trainPool(set)
	sep, err := separator(ctx, &c, log)
	if err != nil {
		return err
	}
	var runs []ftRun
	test := actExamples(set.Test, set.Labels, sep, false)
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
				runs = append(runs, ftRun{variant: fmt.Sprintf("%d-shot", k), seed: seed, train: actExamples(tr, set.Labels, sep, false),
					val: actExamples(va, set.Labels, sep, false)})
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
				runs = append(runs, ftRun{variant: fmt.Sprintf("%g%% of train", 100*x), seed: seed, train: actExamples(tr, set.Labels, sep, false),
					val: actExamples(val, set.Labels, sep, false)})
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
	freeModel(model)
	sep, _ := tok.SpecialToken("sep_token")
	return datasets.SepFor(sep), nil
}
