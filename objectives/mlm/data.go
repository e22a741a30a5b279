package mlm

import (
	"github.com/sugarme/gotch"

	"convrep/datasets"
	"convrep/objectives"
	"convrep/tokenizers"
)

// mlmDialogues is the masked-LM dataset: one example per dialogue, flattened as
// [CLS] [USR] u1 [SYS] s1 ... [SEP] and cut to model.max_length (model.truncation "left" keeps the end),
// masked when batched from a random source of (seed, epoch, dialogue): dynamic masking that a resumed run
// repeats exactly.
type mlmDialogues struct {
	toks    *datasets.DialogueTokens
	mask    MaskOptions
	maxLen  int
	keepEnd bool
	seed    int64
	epoch   int
	pad     int64
}

func newMLMDialogues(env objectives.DataEnv, cfg Config) (objectives.Dataset, error) {
	opt, err := MaskOptionsFor(env.Tok, cfg.MaskProb)
	if err != nil {
		return nil, err
	}
	dt, err := objectives.ReadDialogueTokens(env, func(d datasets.Dialogue) bool { return len(d.Turns) > 0 })
	if err != nil {
		return nil, err
	}
	return &mlmDialogues{toks: dt, mask: opt, maxLen: env.MaxLength, keepEnd: env.Truncation == tokenizers.TruncateLeft,
		seed: env.Seed, pad: env.Tok.PadID()}, nil
}

func (d *mlmDialogues) Len() int { return d.toks.Len() }

func (d *mlmDialogues) SetEpoch(epoch int) { d.epoch = epoch }

func (d *mlmDialogues) Batch(idx []int, dev gotch.Device) (objectives.Batch, error) {
	rows, labels := make([][]int64, len(idx)), make([][]int64, len(idx))
	for k, i := range idx {
		ids := d.toks.Span(i, 0, len(d.toks.Turns[i]), d.maxLen, d.keepEnd)
		rows[k], labels[k] = MaskRow(ids, len(ids), d.mask, ExampleRand(d.seed, d.epoch, i))
	}
	in, err := objectives.InputOf(rows, d.pad, dev)
	if err != nil {
		return objectives.Batch{}, err
	}
	lab, err := objectives.LabelsOf(labels, dev)
	if err != nil {
		in.Drop()
		return objectives.Batch{}, err
	}
	return objectives.Batch{Value: Batch{Input: in, Labels: lab}, Drop: func() { in.Drop(); lab.Drop() }}, nil
}
