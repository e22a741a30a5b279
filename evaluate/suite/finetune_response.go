package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/evaluate"
	"convrep/evaluate/finetune"
	"convrep/evaluate/sets"
	"convrep/models"
	"convrep/tokenizers"
)

func init() {
	Register(Task{Name: "finetune-response", Section: FineTuning,
		Summary:  "response selection after fine-tuning a dual encoder with in-batch negatives (Ubuntu, MultiWOZ)",
		Synopsis: "--model M (--dataset ubuntu|multiwoz | --train F --test F) [flags]",
		About: "Response selection after fine-tuning a dual encoder (one shared encoder, in-batch negatives, softmax over cosines /\n" +
			"temperature) on the dataset's training pairs; then, as the similarity-based task, each test query ranks its\n" +
			"response among --candidates (MGT's next-utterance retrieval: 20 candidates, MRR and Hits@1 = Top-1; R10@1 and R2@1\n" +
			"with --candidates 10 or 2). One fresh model per seed; the seed also draws the candidates. --protocol dse|futuretod\n" +
			"sets the defaults (DSE App. B.1: batch 100, max length 128; FutureTOD App. B: batch 100, [CLS]); early stopping\n" +
			"on the in-batch loss of a fixed held-out tenth of the training pairs.",
		Data: "Ubuntu IRC (ubuntu_irc/) or MultiWOZ 2.1 (multiwoz21/) under --data-root, or --train/--test files of queries and responses",
		New:  func() Options { return new(FinetuneResponseOptions) }})
}

// FinetuneResponseOptions are evaluate finetune-response's settings.
type FinetuneResponseOptions struct {
	Common
	Tuning      Tuning
	Candidates  int     // candidates per test query, the true response included
	Temperature float64 // softmax temperature of the in-batch loss
}

// Flags declares evaluate finetune-response's flags.
func (o *FinetuneResponseOptions) Flags(f *Flags) {
	o.flags(f, -1)
	tuningFlag(f, &o.Common, &o.Tuning, finetune.TaskResponse, nil)
	f.IntVar(&o.Candidates, "candidates", 100, "candidates per test query, the true response included")
	f.Float64Var(&o.Temperature, "temperature", 0.05, "softmax temperature of the in-batch loss")
	f.Uint64Var(&o.Data.SplitSeed, "split-seed", 1, "seed choosing each Ubuntu IRC conversation's split point")
}

// Run fine-tunes a fresh dual encoder per seed and writes its response-selection scores.
func (o *FinetuneResponseOptions) Run(ctx context.Context, log *zap.Logger) error {
	c, cfg0, settings, size, temperature := &o.Common, o.Tuning.Config, o.Tuning.settings(), o.Candidates, o.Temperature
	p, err := prepare(c)
	if err != nil {
		return err
	}
	train, test, note, err := ResponseSplits(c.Data)
	if err != nil {
		return err
	}
	if len(test.Responses) < size {
		return fmt.Errorf("%s: %d test responses, fewer than --candidates %d", test.Dataset, len(test.Responses), size)
	}
	start := time.Now()
	res := &evaluate.Result{Task: "finetune-response", Notes: nonEmpty(note)}
	heldOut := 0
	for _, seed := range p.seeds {
		model, tok, name, err := loadModel(ctx, c.Model, log)
		if err != nil {
			return err
		}
		sep, _ := tok.SpecialToken("sep_token")
		s := &evaluate.Session{Model: name, Sep: datasets.SepFor(sep), Batch: c.Model.Batch}
		// Queries are written as the test's are (Session.JoinHistory, the separator token): role tokens would
		// make training and test queries differ.
		pairs := make([]finetune.Pair, len(train.Contexts))
		for i, ctxTurns := range train.Contexts {
			pairs[i] = finetune.Pair{Query: s.JoinHistory(ctxTurns), Response: train.Responses[i]}
		}
		pairs, val := finetune.HoldOut(pairs)
		heldOut = len(val)
		cfg := finetune.DualConfig{Epochs: cfg0.Epochs, BatchSize: cfg0.BatchSize, LR: cfg0.LR, Temperature: temperature, MaxLength: c.Model.MaxLength,
			Pooling: cfg0.Pooling, Val: val, EvalEvery: cfg0.EvalEvery, Patience: cfg0.Patience, Seed: seed}
		if cfg.MaxLength == 0 { // --max-length 0: the model's limit
			cfg.MaxLength = int(model.Config.MaxSequence())
		}
		if !c.Quiet {
			cfg.Progress = os.Stderr
		}
		run, err := finetune.TrainDual(ctx, model, tok, pairs, cfg)
		if err != nil {
			finetune.Free(model)
			return err
		}
		log.Info("fine-tuned", zap.Uint64("seed", seed), zap.Float64s("epoch_losses", run.EpochLosses), zap.Int("steps", run.Steps),
			zap.Int("best_step", run.BestStep), zap.Int("val_pairs", len(val)))
		s.Enc = &models.Embedder{Model: model, Tokenizer: tok, Pooling: cfg.Pooling, MaxLength: c.Model.MaxLength, Truncation: tokenizers.TruncateRight}
		s.Context = &models.Embedder{Model: model, Tokenizer: tok, Pooling: cfg.Pooling, MaxLength: c.Model.MaxLength, Truncation: tokenizers.TruncateLeft}
		r, err := s.Response(ctx, evaluate.ResponseTask{Set: test, Size: size, Seeds: []uint64{seed}, Splits: c.splitIO()})
		finetune.Free(model)
		if err != nil {
			return err
		}
		res.Model = name
		res.Rows = finetune.MergeSeedRows(res.Rows, r.Rows)
	}
	for i := range res.Rows {
		res.Rows[i].Task = "finetune-response"
		res.Rows[i].Settings["train_pairs"] = len(train.Contexts)
		for k, v := range settings {
			res.Rows[i].Settings[k] = v
		}
	}
	if heldOut > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("A fixed tenth of the training pairs (%d) is held out: the weights with the lowest in-batch loss on it are kept (TOD-BERT's early stopping on the validation loss).", heldOut))
	}
	res.WallSeconds = time.Since(start).Seconds()
	return writeResult(res, c.Output)
}

// ResponseSplits returns a response-Selection dataset's training and test sets, and a note for the
// result when the training pairs are not the dataset's own train split (MultiWOZ's is absent here).
func ResponseSplits(d Data) (train, test *evaluate.RetrievalSet, note string, err error) {
	if d.Train != "" || d.Test != "" {
		if d.Train == "" || d.Test == "" {
			return nil, nil, "", fmt.Errorf("--train and --test go together")
		}
		t := d
		t.Test = d.Train
		if train, err = t.responseData(); err != nil {
			return nil, nil, "", err
		}
		test, err = d.responseData()
		return train, test, "", err
	}
	root, err := d.evalRoot()
	if err != nil {
		return nil, nil, "", err
	}
	switch d.Dataset {
	case "ubuntu":
		dir := filepath.Join(root, "ubuntu_irc", "data")
		if train, err = sets.ReadUbuntuIRC(filepath.Join(dir, "train"), sets.UbuntuOptions{Seed: d.SplitSeed}); err != nil {
			return nil, nil, "", err
		}
		test, err = sets.ReadUbuntuIRC(filepath.Join(dir, "test"), sets.UbuntuOptions{Seed: d.SplitSeed})
		return train, test, "", err
	case "multiwoz":
		dir := filepath.Join(root, "multiwoz21")
		if train, err = sets.ReadMultiWOZResponses(dir, "val"); err != nil {
			return nil, nil, "", err
		}
		if test, err = sets.ReadMultiWOZResponses(dir, "test"); err != nil {
			return nil, nil, "", err
		}
		note = fmt.Sprintf("%s has no train split here: fine-tuning trains on the %d (context, response) pairs of its validation dialogues; the test dialogues test.",
			train.Dataset, len(train.Contexts))
		return train, test, note, nil
	}
	return nil, nil, "", fmt.Errorf("--dataset %q has no response-Selection training data (known: ubuntu, multiwoz; or --train/--test files)", d.Dataset)
}
