package suite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"convrep/evaluate"
	"convrep/evaluate/finetune"
	"convrep/evaluate/sets"
	"convrep/tokenizers"
)

func init() {
	Register(Task{Name: "acts", Section: FineTuning,
		Summary:  "dialogue act prediction by fine-tuning: DSTC2, GSIM few-shot, MultiWOZ fractions (multi-label F1)",
		Synopsis: "--model M --dataset dstc2|gsim|multiwoz [--shots 10,20 | --fractions 0.01,0.1,1] [--protocol dse|futuretod] [flags]",
		About: "Dialogue act prediction by fine-tuning (DSE Appendix B, FutureTOD §3.2): multi-label, binary cross-entropy, micro\n" +
			"and macro F1 on the test split. Each input is built as TOD-BERT builds it (utils/dataloader_dm.py): the history, the\n" +
			"system turn whose acts are predicted and the user turn answering it, with [SYS]/[USR] role tokens for a model whose\n" +
			"tokenizer has them, else joined with its separator; truncated from the head. --protocol sets the defaults.\n" +
			"--shots n draws up to n examples per act from the training split (and a validation set from what is left);\n" +
			"--fractions takes that share of the training examples (MultiWOZ: 1%, 10%, all). One fresh model per run.",
		Data: "DSTC2 (dstc2/), GSIM (gsim_m2m/) or MultiWOZ 2.1 (multiwoz21/) under --data-root",
		New:  func() Options { return new(ActsOptions) }})
}

// ActsOptions are evaluate acts's settings.
type ActsOptions struct {
	Common
	Tuning    Tuning
	Shots     []int     // few-shot sizes, examples per act; or
	Fractions []float64 // shares of the training examples, in (0, 1] (none: all of them)
}

// Flags declares evaluate acts's flags.
func (o *ActsOptions) Flags(f *Flags) {
	o.flags(f, -1)
	tuningFlag(f, &o.Common, &o.Tuning, finetune.TaskActs, nil)
	shotsFlag(f, &o.Shots, "", "few-shot sizes, examples per act (DSTC2, GSIM: 10,20)", true)
	f.Parsed("fractions", "", "shares of the training data (MultiWOZ: 0.01,0.1,1)", func(s string) (err error) {
		o.Fractions, err = parseFractions(s)
		return err
	})
}

// parseFractions reads "0.01,0.1,1", each in (0, 1]; "" is none.
func parseFractions(s string) ([]float64, error) {
	if s == "" {
		return nil, nil
	}
	var out []float64
	for _, part := range strings.Split(s, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
		if err != nil || x <= 0 || x > 1 {
			return nil, fmt.Errorf("--fractions %q: %q is not in (0, 1]", s, part)
		}
		out = append(out, x)
	}
	return out, nil
}

// Run fine-tunes a fresh model per variant and seed, and writes the act F1 scores.
func (o *ActsOptions) Run(ctx context.Context, log *zap.Logger) error {
	c, cfg, settings := &o.Common, o.Tuning.Config, o.Tuning.settings()
	if len(o.Shots) > 0 && len(o.Fractions) > 0 {
		return fmt.Errorf("give --shots or --fractions, not both")
	}
	a, err := openActs(ctx, c, log)
	if err != nil {
		return err
	}
	p, set, pool, val, format := a.p, a.set, a.pool, a.val, a.format
	build := func(ex []sets.ActExample) []finetune.Example { return finetune.ActExamples(ex, set.Labels, format) }
	var runs []finetune.Trial
	test := build(set.Test)
	if len(o.Shots) > 0 {
		for _, k := range o.Shots {
			for _, seed := range p.seeds {
				tr, va, err := set.FewShotSplits(k, seed)
				if err != nil {
					return err
				}
				runs = append(runs, finetune.Trial{Variant: fmt.Sprintf("%d-shot", k), Seed: seed, Train: build(tr), Val: build(va)})
			}
		}
	} else {
		fractions := o.Fractions
		if len(fractions) == 0 {
			fractions = []float64{1}
		}
		for _, x := range fractions {
			for _, seed := range p.seeds {
				order := rand.New(rand.NewPCG(seed, 0x6672616374696f6e)).Perm(len(pool)) // "fraction"
				n := max(1, int(x*float64(len(pool))+0.5))
				tr := make([]sets.ActExample, n)
				for i := range tr {
					tr[i] = pool[order[i]]
				}
				runs = append(runs, finetune.Trial{Variant: fmt.Sprintf("%g%% of train", 100*x), Seed: seed, Train: build(tr), Val: build(val)})
			}
		}
	}
	start := time.Now()
	cfg.Classes, cfg.MultiLabel, cfg.Truncation = len(set.Labels), true, tokenizers.TruncateLeft
	settings["labels"], settings["test_examples"], settings["role_tokens"] = len(set.Labels), len(test), format.Roles()
	rows, model, err := fineTune(ctx, c, cfg, runs, actsF1(test), set.Dataset, "dialogue-acts", []string{"micro_f1", "macro_f1"}, settings, log)
	if err != nil {
		return err
	}
	res := &evaluate.Result{Model: model, Task: "dialogue-acts", Rows: rows, Notes: append(append([]string{}, set.Notes...), nonEmpty(a.note)...)}
	res.Notes = append(res.Notes, "Inputs as TOD-BERT's utils/dataloader_dm.py builds them (history, system turn, answering user turn); "+
		"a system turn that ends its dialogue is no example, as in TOD-BERT's readers.")
	res.WallSeconds = time.Since(start).Seconds()
	return writeResult(res, c.Output)
}
