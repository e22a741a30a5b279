package trainer

import (
	"github.com/sugarme/gotch"
	"go.uber.org/zap"

	"convrep/datasets"
	"convrep/objectives"
	"convrep/tokenizers"
)

func init() { registerDataset(objectives.MLMName, newMLMDialogues) }

// mlmDialogues is the masked-LM dataset: one example per dialogue, flattened as
// [CLS] [USR] u1 [SYS] s1 ... [SEP] and cut to model.max_length (model.truncation "left" keeps the end),
// masked when batched from a random source of (seed, epoch, dialogue): dynamic masking that a resumed run
// repeats exactly.
type mlmDialogues struct {
	toks    *datasets.DialogueTokens
	mask    objectives.MaskOptions
	maxLen  int
	keepEnd bool
	seed    int64
	epoch   int
	pad     int64
}

func newMLMDialogues(e *Experiment, tok *tokenizers.Tokenizer, _ string, _ []string, trunc tokenizers.Truncation, log *zap.Logger) (Dataset, error) {
	opt, err := maskOptions(e, tok)
	if err != nil {
		return nil, err
	}
	dt, err := readDialogueTokens(e, tok, func(d datasets.Dialogue) bool { return len(d.Turns) > 0 }, log)
	if err != nil {
		return nil, err
	}
	return &mlmDialogues{toks: dt, mask: opt, maxLen: e.Model.MaxLength, keepEnd: trunc == tokenizers.TruncateLeft,
		seed: e.Seed, pad: tok.PadID()}, nil
}

func (d *mlmDialogues) Len() int { return d.toks.Len() }

func (d *mlmDialogues) SetEpoch(epoch int) { d.epoch = epoch }

func (d *mlmDialogues) Batch(idx []int, dev gotch.Device) (Batch, error) {
	rows, labels := make([][]int64, len(idx)), make([][]int64, len(idx))
	for k, i := range idx {
		ids := d.toks.Span(i, 0, len(d.toks.Turns[i]), d.maxLen, d.keepEnd)
		rows[k], labels[k] = objectives.MaskRow(ids, len(ids), d.mask, objectives.ExampleRand(d.seed, d.epoch, i))
	}
	in, err := inputOf(rows, d.pad, dev)
	if err != nil {
		return Batch{}, err
	}
	lab, err := labelsOf(labels, dev)
	if err != nil {
		in.Drop()
		return Batch{}, err
	}
	return Batch{Value: objectives.MLMBatch{Input: in, Labels: lab}, Drop: func() { in.Drop(); lab.MustDrop() }}, nil
}
