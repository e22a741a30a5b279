package rcl

import (
	"github.com/sugarme/gotch"

	"convrep/datasets"
	"convrep/objectives"
	"convrep/objectives/inputs"
	"convrep/objectives/mlm"
)

// rclDialogues is TOD-BERT's dataset (§2.2): one example per dialogue that has a system turn after its
// first turn; each epoch the dialogue is split at one such turn t, drawn from (seed, epoch, dialogue), into
// the context [CLS] turns 0..t-1 [SEP] (cut to model.max_length keeping its end, the turns next to the
// response) and the response [CLS] [SYS] s_t [SEP]. With MLM the context is masked from the same source.
type rclDialogues struct {
	toks   *datasets.DialogueTokens
	splits [][]int // dialogue → the turns it may be split at
	mask   *mlm.MaskOptions
	maxLen int
	seed   int64
	epoch  int
	pad    int64
}

func newRCLDialogues(env objectives.DataEnv, cfg Config) (objectives.Dataset, error) {
	d := &rclDialogues{maxLen: env.MaxLength, seed: env.Seed, pad: env.Tok.PadID()}
	if cfg.MLMWeight != 0 {
		opt, err := mlm.MaskOptionsFor(env.Tok, cfg.MaskProb)
		if err != nil {
			return nil, err
		}
		d.mask = &opt
	}
	splittable := func(dl datasets.Dialogue) bool { return len(rclSplits(dl.Turns)) > 0 }
	dt, err := objectives.ReadDialogueTokens(env, splittable)
	if err != nil {
		return nil, err
	}
	d.toks = dt
	for i := range dt.Turns {
		var ts []int
		for t := 1; t < len(dt.System[i]); t++ {
			if dt.System[i][t] {
				ts = append(ts, t)
			}
		}
		d.splits = append(d.splits, ts)
	}
	return d, nil
}

// rclSplits are the turns a dialogue may be split at: system turns with at least one turn before them.
func rclSplits(turns []datasets.Turn) []int {
	var out []int
	for t := 1; t < len(turns); t++ {
		if turns[t].Speaker == datasets.System {
			out = append(out, t)
		}
	}
	return out
}

func (d *rclDialogues) Len() int { return d.toks.Len() }

func (d *rclDialogues) SetEpoch(epoch int) { d.epoch = epoch }

func (d *rclDialogues) Batch(idx []int, dev gotch.Device) (objectives.Batch, error) {
	ctx, resp, labels := make([][]int64, len(idx)), make([][]int64, len(idx)), make([][]int64, len(idx))
	for k, i := range idx {
		g := mlm.ExampleRand(d.seed, d.epoch, i)
		t := d.splits[i][g.IntN(len(d.splits[i]))]
		ctx[k] = d.toks.Span(i, 0, t, d.maxLen, true)
		resp[k] = d.toks.Span(i, t, t+1, d.maxLen, false)
		if d.mask != nil {
			ctx[k], labels[k] = mlm.MaskRow(ctx[k], len(ctx[k]), *d.mask, g)
		}
	}
	b := Batch{}
	drop := func() { b.Context.Drop(); b.Response.Drop(); b.Labels.Drop() }
	var err error
	if b.Context, err = inputs.InputOf(ctx, d.pad, dev); err == nil {
		if b.Response, err = inputs.InputOf(resp, d.pad, dev); err == nil && d.mask != nil {
			b.Labels, err = inputs.LabelsOf(labels, dev)
		}
	}
	if err != nil {
		drop()
		return objectives.Batch{}, err
	}
	return objectives.Batch{Value: b, Drop: drop}, nil
}
