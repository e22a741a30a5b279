package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"convrep/evaluate"
	"convrep/evaluate/finetune"
	"convrep/evaluate/sets"
	"convrep/models"
	"convrep/tokenizers"
)

// fineTune runs the trials with cfg, each on a fresh copy of --model.
func fineTune(ctx context.Context, c *Common, cfg finetune.Config, runs []finetune.Trial, score finetune.Scorer, dataset, task string,
	metrics []string, settings map[string]any, log *zap.Logger) ([]evaluate.Row, string, error) {
	if !c.Quiet {
		cfg.Progress = os.Stderr
	}
	load := func() (*models.Model, *tokenizers.Tokenizer, string, error) { return loadModel(ctx, c.Model, log) }
	return finetune.Trials(ctx, load, cfg, runs, score, dataset, task, metrics, settings, log)
}

// actsTask is what the dialogue-act tasks (acts, probe) start from: the seeds (and shots) to run, the act set,
// its training pool and the validation split cut from it (note says how), and how the model writes a dialogue.
type actsTask struct {
	p         *prepared
	set       *sets.ActSet
	pool, val []sets.ActExample
	note      string
	format    finetune.Format
}

// openActs reads the act set c names and the model's dialogue format.
func openActs(ctx context.Context, c *Common, log *zap.Logger) (*actsTask, error) {
	p, err := prepare(c)
	if err != nil {
		return nil, err
	}
	set, err := readActs(c.Data)
	if err != nil {
		return nil, err
	}
	a := &actsTask{p: p, set: set}
	a.pool, a.val, a.note = finetune.TrainPool(set)
	if a.format, err = modelFormat(ctx, c, log); err != nil {
		return nil, err
	}
	return a, nil
}

// actsF1 scores a classifier by the micro and macro F1 of the act labels it predicts on test.
func actsF1(test []finetune.Example) func(*finetune.Classifier) (map[string]float64, error) {
	return func(clf *finetune.Classifier) (map[string]float64, error) {
		m, err := clf.Evaluate(test)
		return map[string]float64{"micro_f1": m.MicroF1, "macro_f1": m.MacroF1}, err
	}
}

// readActs reads a dialogue-act set by name.
func readActs(d Data) (*sets.ActSet, error) {
	root, err := d.evalRoot()
	if err != nil {
		return nil, err
	}
	switch d.Dataset {
	case "dstc2":
		return sets.ReadDSTC2(filepath.Join(root, "dstc2"))
	case "gsim":
		return sets.ReadGSIM(filepath.Join(root, "gsim_m2m"))
	case "multiwoz":
		return sets.ReadMultiWOZActs(filepath.Join(root, "multiwoz21"))
	}
	return nil, fmt.Errorf("--dataset %q has no dialogue acts (known: dstc2, gsim, multiwoz)", d.Dataset)
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// modelFormat returns how dialogue histories are written for this model (finetune.NewFormat: [SYS]/[USR]
// role tokens when its tokenizer has them, its separator token), loading the tokenizer once before any run.
func modelFormat(ctx context.Context, c *Common, log *zap.Logger) (finetune.Format, error) {
	model, tok, _, err := loadModel(ctx, c.Model, log)
	if err != nil {
		return finetune.Format{}, err
	}
	finetune.Free(model)
	sep, _ := tok.SpecialToken("sep_token")
	f := finetune.NewFormat(tok, sep)
	log.Info("dialogue format", zap.Bool("role_tokens", f.Roles()), zap.String("sep", sep))
	return f, nil
}
