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
	"convrep/models"
	"convrep/tokenizers"
)

// FinetuneResponse runs evaluate finetuneresponse with c and the task's own settings (cmd/internal/evaluatecmd parses them).
func FinetuneResponse(ctx context.Context, c *Common, cfg0 finetune.Config, settings map[string]any, size int, temperature float64, log *zap.Logger) error {
	p, err := prepare(c, false, "")
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
		if train, err = evaluate.ReadUbuntuIRC(filepath.Join(dir, "train"), evaluate.UbuntuOptions{Seed: d.SplitSeed}); err != nil {
			return nil, nil, "", err
		}
		test, err = evaluate.ReadUbuntuIRC(filepath.Join(dir, "test"), evaluate.UbuntuOptions{Seed: d.SplitSeed})
		return train, test, "", err
	case "multiwoz":
		dir := filepath.Join(root, "multiwoz21")
		if train, err = evaluate.ReadMultiWOZResponses(dir, "val"); err != nil {
			return nil, nil, "", err
		}
		if test, err = evaluate.ReadMultiWOZResponses(dir, "test"); err != nil {
			return nil, nil, "", err
		}
		note = fmt.Sprintf("%s has no train split here: fine-tuning trains on the %d (context, response) pairs of its validation dialogues; the test dialogues test.",
			train.Dataset, len(train.Contexts))
		return train, test, note, nil
	}
	return nil, nil, "", fmt.Errorf("--dataset %q has no response-Selection training data (known: ubuntu, multiwoz; or --train/--test files)", d.Dataset)
}
