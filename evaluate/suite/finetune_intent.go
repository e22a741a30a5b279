package suite

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.uber.org/zap"

	"convrep/evaluate"
	"convrep/evaluate/finetune"
	"convrep/tokenizers"
)

func init() {
	Register(Task{Name: "finetune-intent", Section: FineTuning,
		Summary:  "intent classification by fine-tuning: k-shot and full, CLINC150 with oos as class 151",
		Synopsis: "--model M [--dataset clinc150|snips | --train F --test F] [--shots 1,5] [--full] [flags]",
		About: "Intent classification by fine-tuning a softmax classifier on the pooled representation (FutureTOD §3.2, Table 1;\n" +
			"DSE App. B.1); --protocol dse|futuretod sets the defaults (pooling, dropout, batch size, epochs, validation steps).\n" +
			"On CLINC150 out-of-scope is a 151st class (as TOD-BERT and FutureTOD): k-shot runs draw k examples per intent\n" +
			"(oos included) from the training split with the seed; --full trains on all of it. Reports Acc(all), Acc(in),\n" +
			"Acc(out) (in/out decision) and Recall(out); early stopping on the validation split when the data have one.",
		Data: intentData,
		New:  func() Options { return new(FinetuneIntentOptions) }})
}

// FinetuneIntentOptions are evaluate finetune-intent's settings.
type FinetuneIntentOptions struct {
	Common
	Tuning Tuning
	Shots  []int // training examples per intent, one run per seed each
	Full   bool  // also train on the whole training split
}

// Flags declares evaluate finetune-intent's flags.
func (o *FinetuneIntentOptions) Flags(f *Flags) {
	o.flags(f, -1)
	tuningFlag(f, &o.Common, &o.Tuning, finetune.TaskIntent, nil)
	shotsFlag(f, &o.Shots, "1,5", "shots per intent, a list (empty: none)", true)
	f.BoolVar(&o.Full, "full", false, "also train on the whole training split (one run per seed)")
}

// Run fine-tunes a fresh classifier per variant and seed, and writes the intent scores.
func (o *FinetuneIntentOptions) Run(ctx context.Context, log *zap.Logger) error {
	c, cfg, settings, full := &o.Common, o.Tuning.Config, o.Tuning.settings(), o.Full
	if c.Data.Dataset == "" && c.Data.Train == "" {
		c.Data.Dataset = "clinc150"
	}
	p, err := prepare(c)
	if err != nil {
		return err
	}
	var name, source string
	var train, test, oos, val, oosVal evaluate.Split
	if c.Data.Dataset == "clinc150" && c.Data.Train == "" {
		// Out-of-scope is a class of its own here: its training and validation rows join the in-scope ones.
		clinc, err := c.Data.clinc150()
		if err != nil {
			return err
		}
		name, source = "clinc150", "clinc150/data/data_full.json#train+oos_train"
		train = append(append(evaluate.Split{}, clinc.Train...), clinc.OOSTrain...)
		test, oos, val, oosVal = clinc.Test, clinc.OOSTest, clinc.Val, clinc.OOSVal
	} else if name, source, train, test, oos, err = c.Data.intentData(); err != nil {
		return err
	}
	if err := evaluate.CheckQueryLabels(train, test); err != nil {
		return fmt.Errorf("%s: test %w", name, err)
	}
	if len(o.Shots) > 0 {
		if err := checkShots(log, source, train, o.Shots); err != nil {
			return err
		}
	}
	labels := train.Labels()
	toExamples := func(s evaluate.Split) []finetune.Example {
		out := make([]finetune.Example, len(s))
		for i, e := range s {
			out[i] = finetune.Example{Text: e.Text, Labels: []int{slices.Index(labels, e.Label)}}
		}
		return out
	}
	allTest := append(append(evaluate.Split{}, test...), oos...)
	allVal := toExamples(append(append(evaluate.Split{}, val...), oosVal...))
	var runs []finetune.Trial
	type shotsOf struct {
		asked int
		used  evaluate.ShotsUsed
	}
	shotsByVariant := map[string]shotsOf{}
	var notes []string
	for _, k := range o.Shots {
		var drawn [][]evaluate.Support
		for _, seed := range p.seeds {
			sets, err := c.splitIO().Support(name, "finetune-intent", source, train, k, seed)
			if err != nil {
				return err
			}
			drawn = append(drawn, sets)
			var tr evaluate.Split
			for _, s := range sets {
				for _, r := range s.Rows {
					tr = append(tr, train[r])
				}
			}
			runs = append(runs, finetune.Trial{Variant: fmt.Sprintf("%d-shot", k), Seed: seed, Train: toExamples(tr), Val: allVal})
		}
		used := evaluate.UsedShots(labels, k, drawn)
		shotsByVariant[fmt.Sprintf("%d-shot", k)] = shotsOf{k, used}
		if note := evaluate.ShortNote(name, k, labels, used); note != "" {
			notes = append(notes, note)
		}
	}
	if full {
		for _, seed := range p.seeds {
			runs = append(runs, finetune.Trial{Variant: "full", Seed: seed, Train: toExamples(train), Val: allVal})
		}
	}
	if len(runs) == 0 {
		return fmt.Errorf("nothing to run: give --shots or --full")
	}
	start := time.Now()
	cfg.Classes, cfg.Truncation = len(labels), tokenizers.TruncateRight
	gold := toExamples(allTest)
	oosIndex := slices.Index(labels, c.Data.OOSLabel)
	metrics := []string{"accuracy"}
	if oosIndex >= 0 {
		metrics = []string{"acc_all", "acc_in", "acc_out", "recall_out"}
	}
	score := func(clf *finetune.Classifier) (map[string]float64, error) {
		pred, err := clf.Predict(texts(allTest))
		if err != nil {
			return nil, err
		}
		return finetune.IntentMetrics(pred, gold, oosIndex)
	}
	settings["classes"], settings["test_examples"], settings["source"] = len(labels), len(allTest), source
	rows, model, err := fineTune(ctx, c, cfg, runs, score, name, "finetune-intent", metrics, settings, log)
	if err != nil {
		return err
	}
	for i, r := range rows {
		if sh, ok := shotsByVariant[r.Variant]; ok { // each k-shot row its own settings: the shots asked, and those its support sets held
			rows[i].Settings = maps.Clone(r.Settings)
			rows[i].Settings["shots"], rows[i].Settings["shots_used"] = sh.asked, sh.used
		}
	}
	res := &evaluate.Result{Model: model, Task: "finetune-intent", Rows: rows, Notes: notes, WallSeconds: time.Since(start).Seconds()}
	if oosIndex >= 0 {
		res.Notes = append(res.Notes, "Out-of-scope is one more class (151 on CLINC150), as TOD-BERT and FutureTOD (Table 1): Acc(all) over every query, "+
			"Acc(in) over in-scope queries, Acc(out) the in/out decision over every query, Recall(out) over out-of-scope queries.")
	}
	return writeResult(res, c.Output)
}

func texts(s evaluate.Split) []string {
	out := make([]string, len(s))
	for i, e := range s {
		out[i] = e.Text
	}
	return out
}
