package evaluatecmd

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

	"convrep/evaluate"
	"convrep/evaluate/finetune"
	"convrep/modelref"
	"convrep/models"
	"convrep/tokenizers"
)

// ftFlags are the fine-tuning settings. Their defaults are a paper's protocol for the task (--protocol:
// DSE App. B.1 or FutureTOD App. B, finetune.Defaults); a flag given on the command line wins.
type ftFlags struct {
	task, protocol                 string
	fixed                          *finetune.Protocol // a task no paper sets (the probes): these defaults, no --protocol
	epochs, batch, patience, every int
	lr, dropout                    float64
}

// register adds the fine-tuning flags for task (finetune.TaskActs, TaskIntent, TaskResponse), their help
// naming each paper's default; with fixed, those defaults and no --protocol.
func (f *ftFlags) register(fs *flag.FlagSet, task string, fixed *finetune.Protocol) {
	f.task, f.fixed = task, fixed
	byPaper := func(v func(finetune.Protocol) any) string {
		if fixed != nil {
			return fmt.Sprint(v(*fixed))
		}
		var parts []string
		for _, paper := range finetune.Papers() {
			p, _ := finetune.Defaults(paper, task)
			parts = append(parts, fmt.Sprintf("%s %v", paper, v(p)))
		}
		return "the --protocol's: " + strings.Join(parts, ", ")
	}
	if fixed == nil {
		fs.StringVar(&f.protocol, "protocol", finetune.PaperDSE, "whose fine-tuning setting gives the defaults: dse (DSE App. B.1) or futuretod (FutureTOD App. B, §3.2, and TOD-BERT's code where it is silent)")
	}
	fs.IntVar(&f.epochs, "epochs", 0, "fine-tuning epochs (early stopping may end sooner); default "+byPaper(func(p finetune.Protocol) any { return p.Epochs }))
	fs.IntVar(&f.batch, "ft-batch-size", 0, "fine-tuning batch size; default "+byPaper(func(p finetune.Protocol) any { return p.BatchSize }))
	fs.IntVar(&f.every, "eval-every", 0, "optimiser steps between validations, -1 = after every epoch; default "+byPaper(func(p finetune.Protocol) any { return p.EvalEvery }))
	fs.IntVar(&f.patience, "patience", 0, "validations in a row without a better score tolerated before stopping (negative: never); default "+byPaper(func(p finetune.Protocol) any { return p.Patience }))
	fs.Float64Var(&f.lr, "lr", 0, "learning rate (AdamW); default "+byPaper(func(p finetune.Protocol) any { return p.LR }))
	fs.Float64Var(&f.dropout, "dropout", -1, "dropout on the pooled representation before the classifier, in training; default "+byPaper(func(p finetune.Protocol) any { return p.Dropout }))
}

// resolve fills in, from the protocol, every fine-tuning flag not given on the command line, and
// --max-length and --pooling (the model folder's declared pooling, else mean, where the protocol names
// none). It returns the settings a classifier run takes and a description of where they came from.
func (f *ftFlags) resolve(fs *flag.FlagSet, c *common) (finetune.Config, string, error) {
	p, source := finetune.Protocol{}, ""
	if f.fixed != nil {
		p, source = *f.fixed, f.fixed.Source
	} else {
		var err error
		if p, err = finetune.Defaults(f.protocol, f.task); err != nil {
			return finetune.Config{}, "", fmt.Errorf("--protocol: %w", err)
		}
		source = p.Source
	}
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	pick := func(name string, v *int, def int) {
		if !given[name] || (name == "max-length" && *v == -1) {
			*v = def
		}
	}
	pick("epochs", &f.epochs, p.Epochs)
	pick("ft-batch-size", &f.batch, p.BatchSize)
	pick("eval-every", &f.every, p.EvalEvery)
	pick("patience", &f.patience, p.Patience)
	pick("max-length", &c.model.maxLength, p.MaxLength)
	if !given["lr"] {
		f.lr = p.LR
	}
	if !given["dropout"] {
		f.dropout = p.Dropout
	}
	pooling := models.Pooling(c.model.pooling)
	if !given["pooling"] || c.model.pooling == "" {
		pooling = p.Pooling
		if pooling == "" {
			pooling = modelref.Pooling(c.model.ref)
		}
	}
	pooling, err := models.ParsePooling(string(pooling))
	if err != nil {
		return finetune.Config{}, "", fmt.Errorf("--pooling: %w", err)
	}
	c.model.pooling = string(pooling)
	switch {
	case f.epochs < 1, f.batch < 1, f.lr <= 0, f.dropout < 0, f.dropout >= 1, f.every == 0 || f.every < -1, c.model.maxLength < 0:
		return finetune.Config{}, "", fmt.Errorf("fine-tuning settings: --epochs %d, --ft-batch-size %d, --lr %g, --dropout %g, --eval-every %d, --max-length %d: "+
			"want epochs, batch size and lr above 0, dropout in [0, 1), eval-every above 0 or -1, max length 0 (the model's limit) or more",
			f.epochs, f.batch, f.lr, f.dropout, f.every, c.model.maxLength)
	}
	every := f.every
	if every < 0 {
		every = 0 // finetune.Config: after every epoch
	}
	return finetune.Config{Epochs: f.epochs, BatchSize: f.batch, LR: f.lr, Patience: f.patience, EvalEvery: every, Dropout: f.dropout,
		Pooling: pooling, MaxLength: c.model.maxLength}, source, nil
}

// settings are the fine-tuning settings a result records.
func (f *ftFlags) settings(c *common, source string) map[string]any {
	protocol := f.protocol
	if f.fixed != nil {
		protocol = "fixed"
	}
	return map[string]any{"protocol": protocol, "epochs": f.epochs, "batch_size": f.batch, "lr": f.lr, "patience": f.patience,
		"eval_every": f.every, "dropout": f.dropout, "pooling": c.model.pooling, "max_length": c.model.maxLength, "defaults_from": source}
}

// fineTune runs the trials with cfg, each on a fresh copy of --model.
func fineTune(ctx context.Context, c *common, cfg finetune.Config, runs []finetune.Trial, score finetune.Scorer, dataset, task string,
	metrics []string, settings map[string]any, log *zap.Logger) ([]evaluate.Row, string, error) {
	if !c.quiet {
		cfg.Progress = os.Stderr
	}
	load := func() (*models.Model, *tokenizers.Tokenizer, string, error) { return loadModel(ctx, c.model, log) }
	return finetune.Trials(ctx, load, cfg, runs, score, dataset, task, metrics, settings, log)
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
	fs := newFlags("acts", "--model M --dataset dstc2|gsim|multiwoz [--shots 10,20 | --fractions 0.01,0.1,1] [--protocol dse|futuretod] [flags]",
		"Dialogue act prediction by fine-tuning (DSE Appendix B, FutureTOD §3.2): multi-label, binary cross-entropy, micro\n"+
			"and macro F1 on the test split. Each input is built as TOD-BERT builds it (utils/dataloader_dm.py): the history, the\n"+
			"system turn whose acts are predicted and the user turn answering it, with [SYS]/[USR] role tokens for a model whose\n"+
			"tokenizer has them, else joined with its separator; truncated from the head. --protocol sets the defaults.\n"+
			"--shots n draws up to n examples per act from the training split (and a validation set from what is left);\n"+
			"--fractions takes that share of the training examples (MultiWOZ: 1%, 10%, all). One fresh model per run.")
	c.register(fs, -1)
	f.register(fs, finetune.TaskActs, nil)
	shots := fs.String("shots", "", "few-shot sizes, examples per act (DSTC2, GSIM: 10,20)")
	fractions := fs.String("fractions", "", "shares of the training data (MultiWOZ: 0.01,0.1,1)")
	if _, err := parse(ctx, fs, args); err != nil {
		return err
	}
	cfg, source, err := f.resolve(fs, &c)
	if err != nil {
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
	format, err := modelFormat(ctx, &c, log)
	if err != nil {
		return err
	}
	build := func(ex []evaluate.ActExample) []finetune.Example { return finetune.ActExamples(ex, set.Labels, format) }
	var runs []finetune.Trial
	test := build(set.Test)
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
				runs = append(runs, finetune.Trial{Variant: fmt.Sprintf("%d-shot", k), Seed: seed, Train: build(tr), Val: build(va)})
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
				runs = append(runs, finetune.Trial{Variant: fmt.Sprintf("%g%% of train", 100*x), Seed: seed, Train: build(tr), Val: build(val)})
			}
		}
	}
	start := time.Now()
	cfg.Classes, cfg.MultiLabel, cfg.Truncation = len(set.Labels), true, tokenizers.TruncateLeft
	settings := f.settings(&c, source)
	settings["labels"], settings["test_examples"], settings["role_tokens"] = len(set.Labels), len(test), format.Roles()
	score := func(clf *finetune.Classifier) (map[string]float64, error) {
		m, err := clf.Evaluate(test)
		return map[string]float64{"micro_f1": m.MicroF1, "macro_f1": m.MacroF1}, err
	}
	rows, model, err := fineTune(ctx, &c, cfg, runs, score, set.Dataset, "dialogue-acts", []string{"micro_f1", "macro_f1"}, settings, log)
	if err != nil {
		return err
	}
	res := &evaluate.Result{Model: model, Task: "dialogue-acts", Rows: rows, Notes: append(append([]string{}, set.Notes...), nonEmpty(note)...)}
	res.Notes = append(res.Notes, "Inputs as TOD-BERT's utils/dataloader_dm.py builds them (history, system turn, answering user turn); "+
		"a system turn that ends its dialogue is no example, as in TOD-BERT's readers.")
	res.WallSeconds = time.Since(start).Seconds()
	return writeResult(res, c.output)
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// modelFormat returns how dialogue histories are written for this model (finetune.NewFormat: [SYS]/[USR]
// role tokens when its tokenizer has them, its separator token), loading the tokenizer once before any run.
func modelFormat(ctx context.Context, c *common, log *zap.Logger) (finetune.Format, error) {
	model, tok, _, err := loadModel(ctx, c.model, log)
	if err != nil {
		return finetune.Format{}, err
	}
	finetune.Free(model)
	sep, _ := tok.SpecialToken("sep_token")
	f := finetune.NewFormat(tok, sep)
	log.Info("dialogue format", zap.Bool("role_tokens", f.Roles()), zap.String("sep", sep))
	return f, nil
}
